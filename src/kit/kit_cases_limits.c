/* Kit cases: every limit.  An advertised limit must be enforced (a hostile
 * program that would exceed it fails or is killed with the right reason);
 * a limit the facts do not advertise, set explicitly, must be refused with
 * unenforceable_limit naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

#define MIB (1024ull * 1024ull)

static bool killed_with(const al_result *res, const char *reason)
{
	return res->outcome == AL_OUTCOME_KILLED && res->reason != NULL &&
	       strcmp(res->reason, reason) == 0;
}

/* Parses "<key> <n>" from stdout; -1 when absent. */
static long long out_number(const al_result *res, const char *key)
{
	const char *p = strstr(kit_out(res, AL_STDOUT), key);
	if (p == NULL)
		return -1;
	return strtoll(p + strlen(key), NULL, 10);
}

static void refuse_unadvertised(kit_ctx *k, kit_case *c, unsigned bit)
{
	kit_run r = {0};
	const char *name = al_limit_name(bit);
	al_request *req = kit_req(k, c, "echo ran\n", "print('ran')\n");
	if (req == NULL)
		return;
	/* A modest value any enforcing provider could honour. */
	kit_req_limit(req, bit, bit == AL_LIMIT_WALL_MS ? 5000 : 1000000);
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_refusal(c, &r, AL_OUTCOME_UNENFORCEABLE_LIMIT))
		goto out;
	if (r.res->reason == NULL || strstr(r.res->reason, name) == NULL)
		kit_fail(c, "unenforceable_limit must name the limit \"%s\" in "
			    "its reason; saw %s",
			 name, kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

/* Runs req (taken: freed here) with one limit set; false when no result
 * came back (the case is failed). */
static bool run_limited(kit_ctx *k, kit_case *c, al_request *req,
			unsigned bit, uint64_t value, kit_run *r)
{
	if (req == NULL)
		return false;
	kit_req_limit(req, bit, value);
	int rc = kit_exec(k, c, req, NULL, r);
	al_request_free(req);
	return rc == 0;
}

static void limit_output(kit_ctx *k, kit_case *c)
{
	/* 10x the cap per stream, more than a pipe buffer holds: a provider
	 * that stopped reading at the cap would block the program. */
	const uint64_t cap = 16384, n = 10 * cap;
	kit_run r = {0};
	al_request *req = kit_req(
		k, c,
		"set -e\n"
		"head -c 163840 /dev/zero | tr '\\000' a\n"
		"head -c 163840 /dev/zero | tr '\\000' b >&2\n",
		"import sys\n"
		"sys.stdout.buffer.write(b'a' * 163840)\n"
		"sys.stdout.flush()\n"
		"sys.stderr.buffer.write(b'b' * 163840)\n");
	if (req == NULL)
		return;
	kit_req_limit(req, AL_LIMIT_OUTPUT_BYTES, cap);
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	for (int s = 0; s < 2; s++) {
		const al_bytes *b = &r.res->output[s];
		const char *sn = s == AL_STDOUT ? "stdout" : "stderr";
		unsigned char fill = s == AL_STDOUT ? 'a' : 'b';
		if (b->len != cap) {
			kit_fail(c, "%s: cap %llu must keep exactly %llu bytes, "
				    "kept %zu",
				 sn, (unsigned long long)cap,
				 (unsigned long long)cap, b->len);
			goto out;
		}
		for (size_t i = 0; i < b->len; i++) {
			if (b->data[i] != fill) {
				kit_fail(c, "%s: the kept bytes must be the "
					    "program's first %llu bytes, no "
					    "notice added (byte %zu differs)",
					 sn, (unsigned long long)cap, i);
				goto out;
			}
		}
		if (!r.res->truncated[s] || r.res->output_seen[s] != n) {
			kit_fail(c, "%s: expected truncated=true and "
				    "output_seen=%llu; saw truncated=%d "
				    "seen=%llu",
				 sn, (unsigned long long)n, r.res->truncated[s],
				 (unsigned long long)r.res->output_seen[s]);
			goto out;
		}
	}
	if (r.elapsed_ms > 5000)
		kit_fail(c, "writing 10x the cap took %llu ms: blocked by the "
			    "cap?",
			 (unsigned long long)r.elapsed_ms);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

static void limit_cpu(kit_ctx *k, kit_case *c)
{
	kit_run r = {0};
	al_request *req = kit_req(k, c, "while :; do :; done\n",
				  "while True:\n    pass\n");
	if (!run_limited(k, c, req, AL_LIMIT_CPU_MS, 1000, &r))
		goto out;
	if (!killed_with(r.res, "cpu_limit"))
		kit_fail(c, "a spinning program with cpu_ms=1000 must be "
			    "killed with reason cpu_limit; saw %s",
			 kit_describe(r.res));
	else if (r.elapsed_ms > 8000)
		kit_fail(c, "cpu_ms=1000 took %llu ms of wall time to act",
			 (unsigned long long)r.elapsed_ms);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
}

static void limit_memory(kit_ctx *k, kit_case *c)
{
	const uint64_t lim = 64 * MIB;
	kit_run r = {0};
	/* 4x the limit, every page written. */
	al_request *req = kit_req(
		k, c,
		"x=$(head -c 268435456 /dev/zero | tr '\\000' a)\n"
		"echo \"ALLOCATED ${#x}\"\n",
		"b = b'a' * (256 << 20)\n"
		"print('ALLOCATED', len(b))\n");
	if (!run_limited(k, c, req, AL_LIMIT_MEMORY_BYTES, lim, &r))
		goto out;
	/* Accepted: the kernel killed it (reason memory_limit), or the
	 * allocation failed cleanly and the program failed without ever
	 * holding the memory.  Not: it got the memory. */
	if (kit_out_has(r.res, AL_STDOUT, "ALLOCATED"))
		kit_fail(c, "memory_bytes=64MiB but the program allocated "
			    "256 MiB: %s",
			 kit_describe(r.res));
	else if (killed_with(r.res, "memory_limit") ||
		 r.res->outcome == AL_OUTCOME_FAILED)
		kit_pass(c);
	else
		kit_fail(c, "expected killed/memory_limit or a failed "
			    "allocation (outcome failed); saw %s",
			 kit_describe(r.res));
out:
	kit_run_clear(&r);
}

static void limit_pids(kit_ctx *k, kit_case *c)
{
	kit_run r = {0};
	al_request *req = kit_req(
		k, c,
		"i=0\n"
		"while [ $i -lt 64 ]; do sleep 5 & i=$((i+1)); done\n"
		"echo \"FORKED $i\"\n",
		"import os, sys, time\n"
		"n = 0\n"
		"try:\n"
		"    for i in range(64):\n"
		"        pid = os.fork()\n"
		"        if pid == 0:\n"
		"            time.sleep(5)\n"
		"            os._exit(0)\n"
		"        n += 1\n"
		"except OSError:\n"
		"    print('FORK_FAILED', n)\n"
		"    sys.exit(1)\n"
		"print('FORKED', n)\n");
	if (!run_limited(k, c, req, AL_LIMIT_PIDS, 16, &r))
		goto out;
	if (kit_out_has(r.res, AL_STDOUT, "FORKED "))
		kit_fail(c, "pids=16 but the program started 64 processes: %s",
			 kit_describe(r.res));
	else if (killed_with(r.res, "pids_limit") ||
		 r.res->outcome == AL_OUTCOME_FAILED)
		kit_pass(c);
	else
		kit_fail(c, "expected fork to fail (outcome failed) or "
			    "killed/pids_limit; saw %s",
			 kit_describe(r.res));
out:
	kit_run_clear(&r);
}

static void limit_file(kit_ctx *k, kit_case *c)
{
	const long long lim = (long long)MIB;
	kit_run r = {0};
	al_request *req = kit_req(
		k, c,
		"head -c 4194304 /dev/zero > \"$TMPDIR/kit-big\"\n"
		"echo \"SIZE $(wc -c < \"$TMPDIR/kit-big\")\"\n",
		"import os\n"
		"p = os.path.join(os.environ['TMPDIR'], 'kit-big')\n"
		"try:\n"
		"    with open(p, 'wb') as f:\n"
		"        f.write(b'\\0' * (4 << 20))\n"
		"except OSError as e:\n"
		"    print('WRITE_FAILED', e.errno)\n"
		"print('SIZE', os.path.getsize(p))\n");
	if (!run_limited(k, c, req, AL_LIMIT_FILE_BYTES, (uint64_t)lim, &r))
		goto out;
	long long size = out_number(r.res, "SIZE ");
	if (killed_with(r.res, "file_size_limit"))
		kit_pass(c);
	else if (size < 0)
		kit_fail(c, "expected killed/file_size_limit or a reported "
			    "SIZE; saw %s",
			 kit_describe(r.res));
	else if (size > lim)
		kit_fail(c, "file_bytes=%lld but a %lld-byte file was written",
			 lim, size);
	else
		kit_pass(c); /* the write failed with EFBIG / SIGXFSZ */
out:
	kit_run_clear(&r);
}

static void limit_open_files(kit_ctx *k, kit_case *c)
{
	kit_run r = {0};
	/* paste holds every input open at once. */
	al_request *req = kit_req(
		k, c,
		"cd \"$TMPDIR\" || exit 9\n"
		"i=0\n"
		"while [ $i -lt 64 ]; do : > \"kit-f$i\"; i=$((i+1)); done\n"
		"paste kit-f* > /dev/null && echo OPENED_ALL\n"
		"exit 0\n",
		"import os\n"
		"fs = []\n"
		"try:\n"
		"    for i in range(64):\n"
		"        fs.append(open(os.devnull))\n"
		"    print('OPENED_ALL')\n"
		"except OSError as e:\n"
		"    print('EMFILE' if e.errno == 24 else 'ERR %d' % e.errno)\n");
	if (!run_limited(k, c, req, AL_LIMIT_OPEN_FILES, 32, &r))
		goto out;
	if (kit_out_has(r.res, AL_STDOUT, "OPENED_ALL"))
		kit_fail(c, "open_files=32 but the program held 64 files open: "
			    "%s",
			 kit_describe(r.res));
	else if (kit_out_has(r.res, AL_STDOUT, "EMFILE") ||
		 kit_out_has(r.res, AL_STDERR, "Too many open files"))
		kit_pass(c);
	else
		kit_fail(c, "expected the 33rd open to fail with EMFILE; saw %s",
			 kit_describe(r.res));
out:
	kit_run_clear(&r);
}

/* stack_bytes: the program's own stack limit reads back as asked (in
 * KiB for sh's ulimit, bytes for python's getrlimit). */
static void limit_stack(kit_ctx *k, kit_case *c)
{
	kit_run r = {0};
	al_request *req = kit_req(
		k, c, "echo \"STACK=$(ulimit -s)\"\n",
		"import resource\n"
		"print('STACK=%d' % (resource.getrlimit("
		"resource.RLIMIT_STACK)[0] // 1024))\n");
	if (!run_limited(k, c, req, AL_LIMIT_STACK_BYTES, 1536 * 1024, &r))
		goto out;
	if (kit_out_has(r.res, AL_STDOUT, "STACK=1536\n"))
		kit_pass(c);
	else
		kit_fail(c, "stack_bytes=1.5 MiB but the program's stack "
			    "limit is not 1536 KiB: %s",
			 kit_describe(r.res));
out:
	kit_run_clear(&r);
}

static void limit_workspace(kit_ctx *k, kit_case *c)
{
	const long long lim = (long long)MIB, slack = 64 * 1024;
	kit_run r = {0};
	al_request *req = NULL;
	if (k->workspace != AL_WORKSPACE_RW) {
		kit_skip(c, "facts: workspace mode rw not offered, the program "
			    "cannot fill it");
		return;
	}
	req = kit_req(k, c,
		      "head -c 8388608 /dev/zero > kit-fill\n"
		      "echo \"RC $?\"\n"
		      "echo \"SIZE $(wc -c < kit-fill)\"\n",
		      "import os\n"
		      "try:\n"
		      "    with open('kit-fill', 'wb') as f:\n"
		      "        f.write(b'\\0' * (8 << 20))\n"
		      "    print('RC 0')\n"
		      "except OSError as e:\n"
		      "    print('RC', e.errno)\n"
		      "print('SIZE', os.path.getsize('kit-fill'))\n");
	if (!run_limited(k, c, req, AL_LIMIT_WORKSPACE_BYTES,
			 (uint64_t)lim, &r))
		goto out;
	long long size = out_number(r.res, "SIZE "),
		  rc = out_number(r.res, "RC ");
	if (size < 0 && r.res->outcome == AL_OUTCOME_KILLED)
		kit_pass(c); /* ended for filling it */
	else if (size < 0)
		kit_fail(c, "expected a reported SIZE; saw %s",
			 kit_describe(r.res));
	else if (size > lim + slack)
		kit_fail(c, "workspace_bytes=%lld but %lld bytes were written "
			    "to the workspace",
			 lim, size);
	else if (rc == 0)
		kit_fail(c, "the write past workspace_bytes reported success "
			    "(%lld bytes kept)",
			 size);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
}

void kit_case_limit(kit_ctx *k, kit_case *c, const void *arg)
{
	unsigned bit = *(const unsigned *)arg;
	if (!kit_need_runner(k, c))
		return;
	if (!(k->facts->limits & bit)) {
		refuse_unadvertised(k, c, bit);
		return;
	}
	switch (bit) {
	case AL_LIMIT_WALL_MS: kit_case_limit_wall(k, c); break;
	case AL_LIMIT_CPU_MS: limit_cpu(k, c); break;
	case AL_LIMIT_MEMORY_BYTES: limit_memory(k, c); break;
	case AL_LIMIT_PIDS: limit_pids(k, c); break;
	case AL_LIMIT_OUTPUT_BYTES: limit_output(k, c); break;
	case AL_LIMIT_FILE_BYTES: limit_file(k, c); break;
	case AL_LIMIT_WORKSPACE_BYTES: limit_workspace(k, c); break;
	case AL_LIMIT_OPEN_FILES: limit_open_files(k, c); break;
	case AL_LIMIT_SOCKET_BYTES: kit_case_limit_socket(k, c); break;
	case AL_LIMIT_STACK_BYTES: limit_stack(k, c); break;
	default: kit_fail(c, "kit bug: no case for limit bit %#x", bit);
	}
}
