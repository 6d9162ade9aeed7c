/* Kit cases: stdin, argv, exit status, byte-exact output, environment,
 * code as content. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

static bool bytes_equal(const al_bytes *b, const void *want, size_t len)
{
	return b->len == len && memcmp(b->data, want, len) == 0;
}

void kit_case_stdin_delivered(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	static const unsigned char in[] = "line one\n\0\xff\xfe tail";
	kit_run r = {0};
	al_request *req = NULL;
	if (!kit_need_runner(k, c))
		return;
	req = kit_req(k, c, "cat",
		      "import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\n");
	if (req == NULL || kit_req_stdin(req, in, sizeof(in) - 1) < 0)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (!bytes_equal(&r.res->output[AL_STDOUT], in, sizeof(in) - 1))
		kit_fail(c, "stdout should echo the %zu stdin bytes exactly; "
			    "saw %s",
			 sizeof(in) - 1, kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_stdin_closed(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	if (!kit_need_runner(k, c))
		return;
	req = kit_req(k, c, "n=$(cat | wc -c)\necho \"eof-ok $((n))\"\n",
		      "import sys\nd = sys.stdin.buffer.read()\n"
		      "print('eof-ok', len(d))\n");
	if (req == NULL)
		goto out;
	req->has_stdin = false;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (strcmp(kit_out(r.res, AL_STDOUT), "eof-ok 0\n") != 0)
		kit_fail(c, "expected stdout \"eof-ok 0\\n\" (stdin empty at "
			    "once); saw %s",
			 kit_describe(r.res));
	else if (r.elapsed_ms > 5000)
		kit_fail(c, "reading the closed stdin took %llu ms",
			 (unsigned long long)r.elapsed_ms);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_empty_argument(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	static const char *const argv[] = {"a", "", "b c"};
	static const char want[] = "3|a||b c|";
	kit_run r = {0};
	al_request *req = NULL;
	if (!kit_need_runner(k, c))
		return;
	req = kit_req(k, c, "printf '%s|' \"$#\" \"$@\"\n",
		      "import sys\na = sys.argv[1:]\n"
		      "sys.stdout.write(''.join(x + '|' for x in [str(len(a))] + a))\n");
	if (req == NULL || kit_req_argv(req, argv, 3) < 0)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (strcmp(kit_out(r.res, AL_STDOUT), want) != 0)
		kit_fail(c, "argv [\"a\", \"\", \"b c\"]: expected stdout "
			    "\"%s\"; saw %s",
			 want, kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_empty_program(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	if (!kit_run_code(k, c, "", "", AL_OUTCOME_COMPLETED, &r))
		goto out;
	if (r.res->exit_code != 0 || r.res->output[0].len != 0 ||
	    r.res->output[1].len != 0)
		kit_fail(c, "expected exit 0 and no output; saw %s",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
}

void kit_case_exit_status(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	if (!kit_run_code(k, c, "printf 'to-err\\n' >&2\nexit 3\n",
			  "import sys\nsys.stderr.write('to-err\\n')\n"
			  "sys.exit(3)\n",
			  AL_OUTCOME_FAILED, &r))
		goto out;
	if (!r.res->has_exit_code || r.res->exit_code != 3)
		kit_fail(c, "expected exit_code 3; saw %s", kit_describe(r.res));
	else if (strcmp(kit_out(r.res, AL_STDERR), "to-err\n") != 0 ||
		 r.res->output[AL_STDOUT].len != 0)
		kit_fail(c, "expected stderr exactly \"to-err\\n\" and empty "
			    "stdout; saw %s",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
}

void kit_case_binary_output(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	static const unsigned char out_b[] = "\0\xff\xfe" "bin\0\n\x80";
	static const unsigned char err_b[] = "\xff\0err";
	kit_run r = {0};
	al_request *req = NULL;
	if (!kit_need_runner(k, c))
		return;
	req = kit_req(k, c,
		      "printf '\\000\\377\\376bin\\000\\n\\200'\n"
		      "printf '\\377\\000err' >&2\n",
		      "import sys\n"
		      "sys.stdout.buffer.write(b'\\x00\\xff\\xfebin\\x00\\n\\x80')\n"
		      "sys.stdout.flush()\n"
		      "sys.stderr.buffer.write(b'\\xff\\x00err')\n");
	if (req == NULL)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (!bytes_equal(&r.res->output[AL_STDOUT], out_b, sizeof(out_b) - 1) ||
	    !bytes_equal(&r.res->output[AL_STDERR], err_b, sizeof(err_b) - 1))
		kit_fail(c, "NUL and non-UTF-8 bytes must round-trip exactly "
			    "(stdout \\x00\\xff\\xfebin\\x00\\n\\x80, stderr "
			    "\\xff\\x00err); saw %s",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_exit_signal(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	if (!kit_run_code(k, c, "kill -KILL $$\n",
			  "import os, signal\n"
			  "os.kill(os.getpid(), signal.SIGKILL)\n",
			  AL_OUTCOME_KILLED, &r))
		goto out;
	if (!r.res->has_signal || r.res->signal != 9)
		kit_fail(c, "expected signal 9; saw %s", kit_describe(r.res));
	else if (r.res->reason != NULL && strcmp(r.res->reason, "signal") != 0)
		kit_fail(c, "a plain signal must have reason \"signal\" or "
			    "none; saw %s",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
}

/* ---- environment ------------------------------------------------------ */

static bool allowed_name(const char *name, size_t len)
{
	static const char *const ok[] = {
		"PATH", "HOME", "LANG", "TMPDIR", "AIRLOCK_RUN_ID",
		"AIRLOCK_RUN_TEMP", "PWD", "OLDPWD", "SHLVL", "_",
		/* the sanitized baseline keeps the host's locale, time
		 * zone and terminal (docs/host.md) */
		"TZ", "TERM", NULL};
	for (size_t i = 0; ok[i] != NULL; i++)
		if (strlen(ok[i]) == len && strncmp(ok[i], name, len) == 0)
			return true;
	return len > 3 && strncmp(name, "LC_", 3) == 0;
}

void kit_case_run_env(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char want_id[80], leaked[512] = "";
	if (!kit_need_runner(k, c))
		return;
	req = kit_req(k, c,
		      "env\n"
		      "if [ -n \"$AIRLOCK_RUN_TEMP\" ] && [ -d \"$AIRLOCK_RUN_TEMP\" ] "
		      "&& : > \"$AIRLOCK_RUN_TEMP/kit-w\"; then echo RUN_TEMP_WRITABLE; fi\n",
		      "import os\n"
		      "for k, v in os.environ.items(): print(k + '=' + v)\n"
		      "p = os.environ.get('AIRLOCK_RUN_TEMP', '')\n"
		      "if p and os.path.isdir(p):\n"
		      "    open(os.path.join(p, 'kit-w'), 'w').close()\n"
		      "    print('RUN_TEMP_WRITABLE')\n");
	if (req == NULL)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	snprintf(want_id, sizeof(want_id), "AIRLOCK_RUN_ID=%s\n", r.run_id);
	const char *out = kit_out(r.res, AL_STDOUT);
	if (strstr(out, want_id) == NULL) {
		kit_fail(c, "AIRLOCK_RUN_ID must equal the exec's run_id %s; "
			    "saw %s",
			 r.run_id, kit_describe(r.res));
		goto out;
	}
	if (strstr(out, "RUN_TEMP_WRITABLE") == NULL) {
		kit_fail(c, "AIRLOCK_RUN_TEMP must name an existing writable "
			    "directory; saw %s",
			 kit_describe(r.res));
		goto out;
	}
	/* Any variable with the kit's own name and value leaked from the
	 * host; the marker is the one the kit set only for this check. */
	for (const char *line = out; *line != '\0';) {
		size_t len = strcspn(line, "\n");
		const char *eq = memchr(line, '=', len);
		if (eq != NULL && !allowed_name(line, (size_t)(eq - line))) {
			char name[256];
			size_t nl = (size_t)(eq - line);
			if (nl < sizeof(name)) {
				memcpy(name, line, nl);
				name[nl] = '\0';
				const char *hv = getenv(name);
				size_t vl = len - nl - 1;
				if (hv != NULL && strlen(hv) == vl &&
				    strncmp(hv, eq + 1, vl) == 0 &&
				    strlen(leaked) + nl + 2 < sizeof(leaked)) {
					strcat(leaked, " ");
					strcat(leaked, name);
				}
			}
		}
		line += len + (line[len] == '\n');
	}
	if (strstr(out, k->marker_name) != NULL)
		kit_fail(c, "the host variable %s (set only in the kit's "
			    "process) reached the program",
			 k->marker_name);
	else if (leaked[0] != '\0')
		kit_fail(c, "host variables reached the program:%s", leaked);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

static void env_value_case(kit_ctx *k, kit_case *c, bool via_host_env)
{
	kit_run r = {0};
	al_request *req = NULL;
	char tok[40], value[80], hostvar[120];
	const char *host_env[1];
	kit_exec_opts o = {0};
	if (!kit_need_runner(k, c))
		return;
	kit_token(k, tok, sizeof(tok));
	snprintf(value, sizeof(value), "v-%s with space=eq", tok);
	req = kit_req(k, c, "printf '%s' \"$KIT_VALUE\"\n",
		      "import os, sys\nsys.stdout.write(os.environ.get('KIT_VALUE', ''))\n");
	if (req == NULL)
		goto out;
	if (via_host_env) {
		snprintf(hostvar, sizeof(hostvar), "KIT_VALUE=%s", value);
		host_env[0] = hostvar;
		o.host_env = host_env;
		o.n_host_env = 1;
	} else if (kit_req_env(req, "KIT_VALUE", value) < 0) {
		kit_fail(c, "out of memory");
		goto out;
	}
	if (kit_exec(k, c, req, &o, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (strcmp(kit_out(r.res, AL_STDOUT), value) != 0)
		kit_fail(c, "%s KIT_VALUE not delivered exactly; saw %s",
			 via_host_env ? "host_env" : "request env",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_request_env(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	env_value_case(k, c, false);
}

void kit_case_host_env(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	env_value_case(k, c, true);
}

/* ---- code is content ------------------------------------------------- */

static int write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "we");
	if (f == NULL)
		return -errno;
	fputs(text, f);
	if (fclose(f) != 0)
		return -EIO;
	return chmod(path, mode) < 0 ? -errno : 0;
}

void kit_case_code_not_path(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char tok[40], mark[64], sh_path[PATH_MAX], py_path[PATH_MAX];
	char sh_text[128], py_text[128];
	if (!kit_need_runner(k, c))
		return;
	kit_token(k, tok, sizeof(tok));
	snprintf(mark, sizeof(mark), "PATHRAN-%s", tok);
	kit_host_path(k, "planted.sh", sh_path, sizeof(sh_path));
	kit_host_path(k, "planted.py", py_path, sizeof(py_path));
	snprintf(sh_text, sizeof(sh_text), "echo %s\n", mark);
	snprintf(py_text, sizeof(py_text), "print('%s')\n", mark);
	/* Not executable: run as content, the path is a command that
	 * cannot start; read as a script path, it would print the mark. */
	if (write_file(sh_path, sh_text, 0644) < 0 ||
	    write_file(py_path, py_text, 0644) < 0) {
		kit_fail(c, "kit: cannot plant its script files");
		goto out;
	}
	req = kit_req(k, c, sh_path, py_path);
	if (req == NULL)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0)
		goto out;
	if (kit_out_has(r.res, AL_STDOUT, mark) ||
	    kit_out_has(r.res, AL_STDERR, mark))
		kit_fail(c, "the request's code was the text of a host path and "
			    "the provider ran the file at that path: %s",
			 kit_describe(r.res));
	else if (r.res->outcome == AL_OUTCOME_COMPLETED)
		kit_fail(c, "running a bare path as %s code should fail "
			    "(it is not executable); saw %s",
			 k->lang, kit_describe(r.res));
	else
		kit_pass(c);
out:
	unlink(sh_path);
	unlink(py_path);
	kit_run_clear(&r);
	al_request_free(req);
}
