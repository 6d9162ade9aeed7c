/* Kit cases: what a run can pile up in the kernel or on disk beyond its
 * memory.  limit.socket_bytes (an advertised socket_bytes holds: a
 * loopback sender whose peer never reads cannot queue more) and
 * bounds.writable_areas (no place a sandboxed run can write takes four
 * times its memory limit: each is bounded by size or charged to the
 * run's memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

#define MIB (1024ull * 1024ull)

/* Opens 16 loopback TCP connections and sends on each, without the peer
 * ever reading, until the kernel refuses more (EAGAIN, or ENOBUFS /
 * ENOMEM): "QUEUED <bytes>".  Unbounded, 16 connections queue tens of
 * MiB on a default kernel (send and receive buffers grow to several MiB
 * each). */
static const char socket_py[] =
	"import socket\n"
	"srv = socket.socket()\n"
	"srv.bind(('127.0.0.1', 0))\n"
	"srv.listen(64)\n"
	"port = srv.getsockname()[1]\n"
	"keep, total, chunk = [], 0, b'x' * 65536\n"
	"for i in range(16):\n"
	"    try:\n"
	"        c = socket.create_connection(('127.0.0.1', port))\n"
	"        s, _ = srv.accept()\n"
	"    except OSError as e:\n"
	"        print('CONNECT_FAILED', e.errno)\n"
	"        break\n"
	"    c.setblocking(False)\n"
	"    keep += [c, s]\n"
	"    while total < (512 << 20):\n"
	"        try:\n"
	"            total += c.send(chunk)\n"
	"        except OSError:\n"
	"            break\n"
	"print('QUEUED', total)\n";

void kit_case_limit_socket(kit_ctx *k, kit_case *c)
{
	const unsigned long long lim = 4 * MIB;
	kit_run r = {0};
	al_request *req = NULL;
	if (!(k->facts->network & (1u << AL_NETWORK_LOOPBACK))) {
		kit_skip(c, "facts: network loopback not offered, no socket "
			    "can be filled");
		return;
	}
	if (!kit_need_language(k, c, "python"))
		return;
	req = kit_req_lang(k, c, "python", socket_py);
	if (req == NULL)
		return;
	req->grant.network = AL_NETWORK_LOOPBACK;
	kit_req_limit(req, AL_LIMIT_SOCKET_BYTES, lim);
	if (kit_exec(k, c, req, NULL, &r) < 0)
		goto out;
	const char *p = strstr(kit_out(r.res, AL_STDOUT), "QUEUED ");
	unsigned long long queued =
		p != NULL ? strtoull(p + strlen("QUEUED "), NULL, 10) : 0;
	/* the kernel lets each socket have a little over the limit (its
	 * forward allocation): half over is still the limit, several
	 * times over is not */
	if (p == NULL && r.res->outcome == AL_OUTCOME_KILLED)
		kit_pass(c); /* ended for filling its buffers */
	else if (p == NULL)
		kit_fail(c, "expected a reported QUEUED; saw %s",
			 kit_describe(r.res));
	else if (queued > lim + lim / 2)
		kit_fail(c, "socket_bytes=%llu but %llu bytes were queued in "
			    "loopback TCP buffers",
			 lim, queued);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

/* Writes 1 MiB blocks into each writable area (the workspace when rw,
 * $TMPDIR, /dev/shm when it exists) until an error or 128 MiB:
 * "AREA <name> <bytes>" each, the file removed before the next. */
static const char areas_sh[] =
	"fill() {\n"
	"  head -c 134217728 /dev/zero > \"$2\" 2>/dev/null\n"
	"  echo \"AREA $1 $(wc -c < \"$2\")\"\n"
	"  rm -f \"$2\"\n"
	"}\n"
	"[ \"$KIT_RW\" = 1 ] && fill workspace ./kit-area\n"
	"fill tmp \"$TMPDIR/kit-area\"\n"
	"[ -d /dev/shm ] && [ -w /dev/shm ] && fill shm /dev/shm/kit-area\n"
	"echo DONE\n";

static const char areas_py[] =
	"import os\n"
	"def fill(name, path):\n"
	"    n = 0\n"
	"    try:\n"
	"        with open(path, 'wb') as f:\n"
	"            while n < (128 << 20):\n"
	"                f.write(b'\\0' * (1 << 20))\n"
	"                f.flush()\n"
	"                n += 1 << 20\n"
	"    except OSError:\n"
	"        pass\n"
	"    print('AREA', name, os.path.getsize(path), flush=True)\n"
	"    os.unlink(path)\n"
	"if os.environ.get('KIT_RW') == '1':\n"
	"    fill('workspace', 'kit-area')\n"
	"fill('tmp', os.path.join(os.environ['TMPDIR'], 'kit-area'))\n"
	"if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK):\n"
	"    fill('shm', '/dev/shm/kit-area')\n"
	"print('DONE')\n";

void kit_case_writable_areas(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	const unsigned long long mem = 32 * MIB, most = 128 * MIB;
	kit_run r = {0};
	al_request *req = NULL;
	if (!kit_need_runner(k, c))
		return;
	if (!k->facts->isolation.host_filesystem_restricted) {
		kit_skip(c, "facts: the host filesystem is not restricted, "
			    "the program writes the host's own places");
		return;
	}
	if (!(k->facts->limits & AL_LIMIT_MEMORY_BYTES)) {
		kit_skip(c, "facts: memory_bytes not enforced");
		return;
	}
	req = kit_req(k, c, areas_sh, areas_py);
	if (req == NULL)
		return;
	kit_req_limit(req, AL_LIMIT_MEMORY_BYTES, mem);
	if (kit_req_env(req, "KIT_RW",
			k->workspace == AL_WORKSPACE_RW ? "1" : "0") < 0) {
		kit_fail(c, "out of memory building a request");
		goto out;
	}
	if (kit_exec(k, c, req, NULL, &r) < 0)
		goto out;
	/* Each reported area held less than 4x the memory limit; an area
	 * not reported was ended by the limit (killed while writing). */
	const char *out = kit_out(r.res, AL_STDOUT);
	for (const char *p = strstr(out, "AREA "); p != NULL;
	     p = strstr(p + 1, "AREA ")) {
		char name[32] = "";
		unsigned long long n = 0;
		if (sscanf(p, "AREA %31s %llu", name, &n) != 2)
			continue;
		if (n >= most) {
			kit_fail(c, "memory_bytes=%llu but %llu bytes were "
				    "stored in %s: a writable area without a "
				    "bound of its own",
				 mem, n, name);
			goto out;
		}
	}
	if (strstr(out, "DONE") == NULL &&
	    r.res->outcome != AL_OUTCOME_KILLED &&
	    r.res->outcome != AL_OUTCOME_FAILED)
		kit_fail(c, "expected every area reported, or the run ended "
			    "by its limit; saw %s",
			 kit_describe(r.res));
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}
