/* The python warm loader (docs/sandbox.md, "Warm pools"): run as
 * `python -E -s -c LOADER` in a pool member.  It reads the header from
 * fd 0 (10 decimal digits of length, then NUL-terminated fields: stdin
 * mode, the number of rlimits and each as resource, value (RLIMIT_CPU in
 * ms, added to the CPU the start used, then rounded up to seconds as a
 * cold run does), index of the script in argv, argc, the cold argv, the
 * environment), sets the rlimits itself (the host lacks CAP_SYS_RESOURCE
 * for prlimit across uids; `resource`, imported while warming, is taken
 * out of sys.modules and its path cache entries again), puts /dev/null
 * on fd 0 when the run has no stdin, replaces os.environ (and so the C environ) with the run's, sets
 * sys.argv, sys.orig_argv, sys.path[0] and __main__'s __file__,
 * __cached__ and __loader__ as a cold `python -E -s SCRIPT` has them, then
 * compiles the script with its real path and runs it in the real
 * __main__.  An uncaught exception is reported through sys.excepthook
 * with the loader's frames stripped, and leaves as a cold one does
 * (status 1; KeyboardInterrupt by SIGINT); SystemExit passes untouched.
 * Keep it to modules a cold start has already imported (sys, os;
 * resource is removed again). */
#include "sandbox/warm_loaders.h"

const char al_sb_warm_python_loader[] =
	"def _w():\n"
	"    import sys\n"
	"    import os\n"
	"    del sys.modules['__main__'].__dict__['_w']\n"
	"    def rd(n):\n"
	"        b = b''\n"
	"        while len(b) < n:\n"
	"            c = os.read(0, n - len(b))\n"
	"            if not c:\n"
	"                os._exit(125)\n"
	"            b += c\n"
	"        return b\n"
	"    pc = set(sys.path_importer_cache)\n"
	"    ms = set(sys.modules)\n"
	"    import resource as R\n"
	"    for k in set(sys.modules) - ms:\n"
	"        del sys.modules[k]\n"
	"    for k in set(sys.path_importer_cache) - pc:\n"
	"        del sys.path_importer_cache[k]\n"
	"    f = rd(int(rd(10))).split(b'\\0')\n"
	"    j = 2\n"
	"    for _ in range(int(f[1])):\n"
	"        q, v = int(f[j]), int(f[j + 1])\n"
	"        j += 2\n"
	"        if q == R.RLIMIT_CPU:\n"
	"            t = os.times()\n"
	"            v = int((t[0] + t[1]) * 1000 + v + 999) // 1000\n"
	"            R.setrlimit(q, (v, v + 1))\n"
	"        else:\n"
	"            R.setrlimit(q, (v, v))\n"
	"    del f[1:j]\n"
	"    if f[0] != b'1':\n"
	"        z = os.open('/dev/null', os.O_RDONLY)\n"
	"        os.dup2(z, 0)\n"
	"        os.close(z)\n"
	"    i = int(f[1])\n"
	"    n = int(f[2])\n"
	"    a = [os.fsdecode(x) for x in f[3:3 + n]]\n"
	"    e = os.environb\n"
	"    for k in list(e):\n"
	"        del e[k]\n"
	"    for x in f[3 + n:-1]:\n"
	"        k, _, v = x.partition(b'=')\n"
	"        e[k] = v\n"
	"    p = a[i]\n"
	"    sys.argv[:] = a[i:]\n"
	"    if hasattr(sys, 'orig_argv'):\n"
	"        sys.orig_argv[:] = a\n"
	"    sys.path[0] = os.path.dirname(p)\n"
	"    m = sys.modules['__main__']\n"
	"    g = m.__dict__\n"
	"    g['__loader__'] = sys.modules['_frozen_importlib_external'].SourceFileLoader('__main__', p)\n"
	"    g['__file__'] = p\n"
	"    g['__cached__'] = None\n"
	"    sys.path_importer_cache[p] = None\n"
	"    c = None\n"
	"    try:\n"
	"        with open(p, 'rb') as h:\n"
	"            c = compile(h.read(), p, 'exec', dont_inherit=True)\n"
	"        exec(c, g)\n"
	"    except SystemExit:\n"
	"        raise\n"
	"    except BaseException as x:\n"
	"        t = x.__traceback__\n"
	"        while t is not None and t.tb_frame.f_code is not c:\n"
	"            t = t.tb_next\n"
	"        x.__traceback__ = t\n"
	"        o = sys.excepthook\n"
	"        def q(y, z, w):\n"
	"            sys.excepthook = o\n"
	"            sys.last_traceback = t\n"
	"            z.__traceback__ = t\n"
	"            if hasattr(sys, 'last_exc'):\n"
	"                sys.last_exc = z\n"
	"            o(y, z, t)\n"
	"        sys.excepthook = q\n"
	"        raise\n"
	"_w()\n";
