/* Kit cases: each isolation axis the facts claim is attacked by a hostile
 * program that would succeed without it.  An axis not claimed is skipped
 * (the facts said so); a claimed axis the attack defeats fails. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

static bool claimed(kit_ctx *k, kit_case *c, bool axis, const char *name)
{
	if (!kit_need_runner(k, c))
		return false;
	if (!axis) {
		kit_skip(c, "facts: isolation axis %s not claimed", name);
		return false;
	}
	return true;
}

/* ---- process_contained ------------------------------------------------ */

void kit_case_process_contained(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char canary[16], pidbuf[24];
	pid_t pid = -1;
	if (!claimed(k, c, k->facts->isolation.process_contained,
		     "process_contained"))
		return;
	/* A host process of the kit's with a name the program looks for. */
	snprintf(canary, sizeof(canary), "alkit%ld", (long)getpid() % 1000000);
	pid = fork();
	if (pid < 0) {
		kit_fail(c, "kit: cannot fork its canary");
		return;
	}
	if (pid == 0) {
		/* Forked from a process whose other threads (a provider's
		 * pool refill) may hold a sandbox's pipes open right now:
		 * kept, they would hide that sandbox's end of output from
		 * its supervisor for as long as the canary lives. */
		syscall(SYS_close_range, 0U, ~0U, 0U);
		syscall(SYS_prctl, PR_SET_NAME, canary, 0UL, 0UL, 0UL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	snprintf(pidbuf, sizeof(pidbuf), "%ld", (long)pid);
	req = kit_req(
		k, c,
		"for f in /proc/[0-9]*/comm; do\n"
		"  read -r n < \"$f\" 2>/dev/null && [ \"$n\" = \"$KIT_CANARY\" ] "
		"&& echo \"SEEN $f\"\n"
		"done\n"
		"kill -0 \"$KIT_CANARY_PID\" 2>/dev/null && echo SIGNALLABLE\n"
		"echo SCANNED\n",
		"import os\n"
		"c = os.environ['KIT_CANARY']\n"
		"for d in os.listdir('/proc'):\n"
		"    if d.isdigit():\n"
		"        try:\n"
		"            if open('/proc/%s/comm' % d).read().strip() == c:\n"
		"                print('SEEN', d)\n"
		"        except OSError:\n"
		"            pass\n"
		"try:\n"
		"    os.kill(int(os.environ['KIT_CANARY_PID']), 0)\n"
		"    print('SIGNALLABLE')\n"
		"except OSError:\n"
		"    pass\n"
		"print('SCANNED')\n");
	if (req == NULL || kit_req_env(req, "KIT_CANARY", canary) < 0 ||
	    kit_req_env(req, "KIT_CANARY_PID", pidbuf) < 0)
		goto out;
	/* Give the canary time to take its name. */
	kit_sleep_ms(50);
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (!kit_out_has(r.res, AL_STDOUT, "SCANNED"))
		kit_fail(c, "the probe program did not finish: %s",
			 kit_describe(r.res));
	else if (kit_out_has(r.res, AL_STDOUT, "SEEN"))
		kit_fail(c, "process_contained claimed but the program sees the "
			    "host process %s: %s",
			 canary, kit_describe(r.res));
	else if (kit_out_has(r.res, AL_STDOUT, "SIGNALLABLE"))
		kit_fail(c, "process_contained claimed but the program can "
			    "signal host pid %s",
			 pidbuf);
	else if (kill(pid, 0) < 0)
		kit_fail(c, "the kit's canary process died during the run");
	else
		kit_pass(c);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- host_filesystem_restricted --------------------------------------- */

void kit_case_host_fs(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char tok[40], secret[64], spath[PATH_MAX], wpath[PATH_MAX];
	struct stat st;
	if (!claimed(k, c, k->facts->isolation.host_filesystem_restricted,
		     "host_filesystem_restricted"))
		return;
	kit_token(k, tok, sizeof(tok));
	snprintf(secret, sizeof(secret), "KITSECRET-%s", tok);
	kit_host_path(k, "secret", spath, sizeof(spath));
	kit_host_path(k, "written-by-run", wpath, sizeof(wpath));
	FILE *f = fopen(spath, "we");
	if (f == NULL || fputs(secret, f) < 0 || fclose(f) != 0) {
		kit_fail(c, "kit: cannot write its marker file");
		goto out;
	}
	chmod(spath, 0644);
	req = kit_req(k, c,
		      "cat \"$KIT_SECRET_PATH\" 2>/dev/null\n"
		      "echo x > \"$KIT_WRITE_PATH\" 2>/dev/null\n"
		      "echo DONE\n",
		      "import os\n"
		      "try:\n"
		      "    print(open(os.environ['KIT_SECRET_PATH']).read())\n"
		      "except OSError:\n"
		      "    pass\n"
		      "try:\n"
		      "    open(os.environ['KIT_WRITE_PATH'], 'w').write('x')\n"
		      "except OSError:\n"
		      "    pass\n"
		      "print('DONE')\n");
	if (req == NULL || kit_req_env(req, "KIT_SECRET_PATH", spath) < 0 ||
	    kit_req_env(req, "KIT_WRITE_PATH", wpath) < 0)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0)
		goto out;
	if (kit_out_has(r.res, AL_STDOUT, secret))
		kit_fail(c, "host_filesystem_restricted claimed but the program "
			    "read the kit's host file %s",
			 spath);
	else if (stat(wpath, &st) == 0)
		kit_fail(c, "host_filesystem_restricted claimed but the program "
			    "wrote the host file %s",
			 wpath);
	else if (!kit_out_has(r.res, AL_STDOUT, "DONE"))
		kit_fail(c, "the probe program did not finish: %s",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	unlink(spath);
	unlink(wpath);
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- privilege_escalation_blocked ------------------------------------- */

/* The value of "Key:\t..." in a /proc/<pid>/status dump, or NULL. */
static const char *status_field(const char *text, const char *key,
				char *buf, size_t len)
{
	const char *p = text;
	size_t kl = strlen(key);
	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
			p += kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			size_t n = strcspn(p, "\n");
			if (n >= len)
				n = len - 1;
			memcpy(buf, p, n);
			buf[n] = '\0';
			return buf;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return NULL;
}

static bool all_zero_hex(const char *s)
{
	if (s == NULL || *s == '\0')
		return false;
	for (; *s; s++)
		if (*s != '0')
			return false;
	return true;
}

void kit_case_privilege(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char nnp[32], eff[32], prm[32], amb[32];
	if (!claimed(k, c, k->facts->isolation.privilege_escalation_blocked,
		     "privilege_escalation_blocked"))
		return;
	/* cat's own status: what any program exec'd in the run gets. */
	req = kit_req(k, c, "cat /proc/self/status\n",
		      "print(open('/proc/self/status').read())\n");
	if (req == NULL)
		return;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	const char *st = kit_out(r.res, AL_STDOUT);
	const char *n = status_field(st, "NoNewPrivs", nnp, sizeof(nnp));
	const char *e = status_field(st, "CapEff", eff, sizeof(eff));
	const char *p = status_field(st, "CapPrm", prm, sizeof(prm));
	const char *a = status_field(st, "CapAmb", amb, sizeof(amb));
	if (n == NULL || strcmp(n, "1") != 0)
		kit_fail(c, "privilege_escalation_blocked claimed but "
			    "NoNewPrivs is %s (setuid binaries could gain "
			    "privileges)",
			 n ? n : "absent");
	else if (!all_zero_hex(e) || !all_zero_hex(p) ||
		 (a != NULL && !all_zero_hex(a)))
		kit_fail(c, "privilege_escalation_blocked claimed but the "
			    "program holds capabilities: CapEff=%s CapPrm=%s "
			    "CapAmb=%s",
			 e ? e : "?", p ? p : "?", a ? a : "?");
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- syscalls_restricted ---------------------------------------------- */

void kit_case_syscalls(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0}, r2 = {0};
	al_request *req = NULL, *req2 = NULL;
	char mode[32];
	if (!claimed(k, c, k->facts->isolation.syscalls_restricted,
		     "syscalls_restricted"))
		return;
	req = kit_req(k, c,
		      "cat /proc/self/status\n"
		      "if command -v unshare >/dev/null 2>&1; then\n"
		      "  if unshare -U true 2>/dev/null; then echo UNSHARE_OK; "
		      "else echo UNSHARE_FAILED; fi\n"
		      "fi\n",
		      "import ctypes\n"
		      "print(open('/proc/self/status').read())\n"
		      "libc = ctypes.CDLL(None, use_errno=True)\n"
		      "if libc.unshare(0x10000000) == 0:\n"
		      "    print('UNSHARE_OK')\n"
		      "else:\n"
		      "    print('UNSHARE_FAILED')\n");
	if (req == NULL)
		return;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	const char *m = status_field(kit_out(r.res, AL_STDOUT), "Seccomp",
				     mode, sizeof(mode));
	if (m == NULL || strcmp(m, "2") != 0) {
		kit_fail(c, "syscalls_restricted claimed but Seccomp is %s "
			    "(expected 2, a filter)",
			 m ? m : "absent");
		goto out;
	}
	if (kit_out_has(r.res, AL_STDOUT, "UNSHARE_OK")) {
		kit_fail(c, "syscalls_restricted claimed but the program "
			    "created a user namespace (unshare)");
		goto out;
	}
	/* From sh, also try the raw syscall through python when present. */
	if (!k->lang_is_python &&
	    al_facts_find_language(k->facts, "python") != NULL) {
		req2 = kit_req_lang(k, c, "python",
				    "import ctypes\n"
				    "libc = ctypes.CDLL(None, use_errno=True)\n"
				    "r = libc.unshare(0x10000000)\n"
				    "print('UNSHARE_OK' if r == 0 else "
				    "'UNSHARE_FAILED')\n");
		if (req2 == NULL || kit_exec(k, c, req2, NULL, &r2) < 0)
			goto out;
		if (!kit_out_has(r2.res, AL_STDOUT, "UNSHARE_FAILED")) {
			kit_fail(c, "syscalls_restricted claimed but "
				    "unshare(CLONE_NEWUSER) from python did not "
				    "fail: %s",
				 kit_describe(r2.res));
			goto out;
		}
	}
	kit_pass(c);
out:
	kit_run_clear(&r);
	kit_run_clear(&r2);
	al_request_free(req);
	al_request_free(req2);
}

/* ---- network_restricted ------------------------------------------------ */

void kit_case_network(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	int lfd = -1;
	char port[16];
	if (!claimed(k, c, k->facts->isolation.network_restricted,
		     "network_restricted"))
		return;
	if (k->network == AL_NETWORK_HOST) {
		kit_fail(c, "network_restricted claimed but the only network "
			    "mode offered is host");
		return;
	}
	/* A listener of the kit's own on the host's loopback. */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 4) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		kit_fail(c, "kit: cannot open its loopback listener");
		goto out;
	}
	snprintf(port, sizeof(port), "%u", ntohs(sa.sin_port));
	if (al_facts_find_language(k->facts, "python") != NULL)
		req = kit_req_lang(
			k, c, "python",
			"import os, socket\n"
			"s = socket.socket()\n"
			"s.settimeout(3)\n"
			"try:\n"
			"    s.connect(('127.0.0.1', int(os.environ['KIT_PORT'])))\n"
			"    print('CONNECTED')\n"
			"except OSError as e:\n"
			"    print('BLOCKED', e.errno)\n"
			"print('TRIED')\n");
	else if (al_facts_find_language(k->facts, "bash") != NULL)
		req = kit_req_lang(k, c, "bash",
				   "exec 3<>/dev/tcp/127.0.0.1/$KIT_PORT && "
				   "echo CONNECTED\n"
				   "echo TRIED\n");
	else {
		kit_skip(c, "facts: neither python nor bash present (needed "
			    "to open a TCP connection)");
		goto out;
	}
	if (req == NULL || kit_req_env(req, "KIT_PORT", port) < 0)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0)
		goto out;
	int afd = accept(lfd, NULL, NULL);
	if (afd >= 0) {
		close(afd);
		kit_fail(c, "network_restricted claimed but the program "
			    "connected to the host's 127.0.0.1:%s",
			 port);
	} else if (kit_out_has(r.res, AL_STDOUT, "CONNECTED")) {
		kit_fail(c, "network_restricted claimed but the program "
			    "reports a connection to 127.0.0.1:%s",
			 port);
	} else if (!kit_out_has(r.res, AL_STDOUT, "TRIED")) {
		kit_fail(c, "the probe program did not finish: %s",
			 kit_describe(r.res));
	} else {
		kit_pass(c);
	}
out:
	if (lfd >= 0)
		close(lfd);
	kit_run_clear(&r);
	al_request_free(req);
}
