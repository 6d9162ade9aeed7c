"""Compiled languages through airlockd and the sandbox: build then run,
typed build failures, build limits, build-time escapes, the build cache.

One program per language answers every run case by its first argument
(echo stdin, crash, spin), so one build serves them all: the later runs
are cache hits, which the cache test checks on its own program."""
import os

import pytest

from compiled_support import COMPILED, need_language, run, start_logged

PROGRAMS = {
    "c": r'''#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "echo";
    if (strcmp(m, "crash") == 0) *(volatile int *)0 = 1;
    if (strcmp(m, "spin") == 0) { volatile int x = 1; while (x) ; }
    char buf[256];
    printf("hello from c\n");
    while (fgets(buf, sizeof buf, stdin)) fputs(buf, stdout);
    return 0;
}
''',
    "cpp": r'''#include <iostream>
#include <string>
int main(int argc, char **argv) {
    std::string m = argc > 1 ? argv[1] : "echo";
    if (m == "crash") *(volatile int *)nullptr = 1;
    if (m == "spin") { volatile int x = 1; while (x) ; }
    std::cout << "hello from c++\n";
    std::string line;
    while (std::getline(std::cin, line)) std::cout << line << "\n";
}
''',
    "go": '''package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime/debug"
)

func main() {
	m := "echo"
	if len(os.Args) > 1 {
		m = os.Args[1]
	}
	if m == "crash" {
		debug.SetTraceback("crash")
		var p *int
		fmt.Println(*p)
	}
	if m == "spin" {
		for {
		}
	}
	fmt.Println("hello from go")
	s := bufio.NewScanner(os.Stdin)
	for s.Scan() {
		fmt.Println(s.Text())
	}
}
''',
    "rust": r'''use std::io::BufRead;
fn main() {
    let m = std::env::args().nth(1).unwrap_or("echo".into());
    if m == "crash" { unsafe { std::ptr::null_mut::<i32>().write_volatile(1); } }
    if m == "spin" { loop {} }
    println!("hello from rust");
    for line in std::io::stdin().lock().lines() { println!("{}", line.unwrap()); }
}
''',
    "java": '''import java.io.*;
public class Main {
    public static void main(String[] a) throws IOException {
        String m = a.length > 0 ? a[0] : "echo";
        if (m.equals("crash")) throw new IllegalStateException("boom");
        if (m.equals("spin")) { while (true) { } }
        System.out.println("hello from java");
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
        for (String l; (l = r.readLine()) != null; ) System.out.println(l);
    }
}
''',
}

BROKEN = {
    "c": "int main(void) { return undeclared_x; }\n",
    "cpp": "int main() { return undeclared_x; }\n",
    "go": "package main\n\nfunc main() { undeclared_x }\n",
    "rust": "fn main() { let x: i32 = \"s\"; }\n",
    "java": "public class Main { public static void main(String[] a) { int x = \"s\"; } }\n",
}

# Build-time reads of a host file: the compiler sees only the sandbox's
# view, where /etc/shadow does not exist (go:embed refuses such paths
# itself too).
ESCAPES = {
    "c": '#include "/etc/shadow"\nint main(void) { return 0; }\n',
    "cpp": '#include "/etc/shadow"\nint main() { return 0; }\n',
    "rust": 'static S: &[u8] = include_bytes!("/etc/shadow");\n'
            'fn main() { println!("{}", S.len()); }\n',
    "go": 'package main\n\nimport _ "embed"\n\n//go:embed /etc/shadow\n'
          'var s string\n\nfunc main() { println(len(s)) }\n',
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d, log = start_logged(tmp_path_factory, "compiled")
    d.builds = log
    yield d
    d.stop()


def req(lang, code, **kw):
    r = {"language": lang, "code": code, "limits": {"memory_bytes": 256 << 20}}
    for k, v in kw.items():
        if k == "limits":
            r["limits"].update(v)
        else:
            r[k] = v
    return r


@pytest.mark.parametrize("lang", COMPILED)
def test_hello_and_stdin_echo(daemon, lang):
    need_language(lang)
    res = run(daemon, req(lang, PROGRAMS[lang], stdin="one\ntwo\n"))
    assert res["outcome"] == "completed", res
    name = "c++" if lang == "cpp" else lang
    assert res["stdout"] == "hello from %s\none\ntwo\n" % name, res
    b = res["build"]
    assert b["outcome"] == "completed" and b["exit_code"] == 0, b
    assert isinstance(b["cache_hit"], bool) and b["wall_ms"] >= 0


@pytest.mark.parametrize("lang", COMPILED)
def test_runtime_crash(daemon, lang):
    need_language(lang)
    res = run(daemon, req(lang, PROGRAMS[lang], argv=["crash"]))
    assert res["build"]["outcome"] == "completed", res
    if lang == "java":
        # the JVM turns a crash into an exception and exit status 1
        assert res["outcome"] == "failed" and res["exit_code"] == 1, res
        assert "IllegalStateException: boom" in res["stderr"], res
    else:
        assert res["outcome"] == "killed", res
        # SIGSEGV; go's runtime aborts (SIGABRT) with traceback "crash"
        assert res["signal"] == (6 if lang == "go" else 11), res


@pytest.mark.parametrize("lang", COMPILED)
def test_run_step_timeout(daemon, lang):
    need_language(lang)
    res = run(daemon, req(lang, PROGRAMS[lang], argv=["spin"],
                          limits={"wall_ms": 1500}))
    assert res["build"]["outcome"] == "completed", res
    assert res["outcome"] == "timed_out", res


@pytest.mark.parametrize("lang", COMPILED)
def test_compile_error_is_build_failed(daemon, lang):
    need_language(lang)
    res = run(daemon, req(lang, BROKEN[lang]))
    assert res["outcome"] == "failed" and res["reason"] == "build_failed", res
    # no run step: no process fields of a run
    assert res["exit_code"] is None and res["signal"] is None, res
    assert res["stdout"] == "" and res["stderr"] == "", res
    b = res["build"]
    assert b["outcome"] == "failed" and b["exit_code"] != 0, b
    assert b["cache_hit"] is False
    text = b["stderr"] + b["stdout"]
    # the compiler's own message
    if lang in ("c", "cpp", "go"):
        assert "undeclared_x" in text, b
    else:
        assert "error" in text and "main" in text.lower(), b


@pytest.mark.parametrize("lang", sorted(ESCAPES))
def test_build_cannot_read_host_files(daemon, lang):
    need_language(lang)
    res = run(daemon, req(lang, ESCAPES[lang]))
    assert res["outcome"] == "failed" and res["reason"] == "build_failed", res
    text = res["build"]["stderr"] + res["build"]["stdout"]
    assert "/etc/shadow" in text, text
    # nothing of the host's file came back
    shadow = open("/etc/shadow").read()
    for line in shadow.splitlines():
        h = line.split(":")[1] if ":" in line else ""
        if len(h) > 8:
            assert h not in text


# An exponential template instantiation: memory grows until a bound.
TEMPLATE_BOMB = r'''
template <unsigned long long N, unsigned long long M> struct A {
    static constexpr unsigned long long v = A<N - 1, 2 * M>::v + A<N - 1, 2 * M + 1>::v;
};
template <unsigned long long M> struct A<0, M> { static constexpr unsigned long long v = M; };
int main() { return (int)A<40, 1>::v; }
'''
# Constant evaluation that runs far longer than any build limit here,
# in constant memory (each loop stays under g++'s iteration limit).
CONSTEXPR_SPIN = r'''
constexpr unsigned long long spin() {
    unsigned long long s = 0;
    for (unsigned long long i = 0; i < 200000; i++)
        for (unsigned long long j = 0; j < 200000; j++) s += i ^ j;
    return s;
}
constexpr unsigned long long x = spin();
int main() { return (int)(x & 1); }
'''


def test_build_timeout_is_its_own_limit(daemon):
    need_language("cpp")
    # the run's wall limit is generous; the build's is what binds
    res = run(daemon, req("cpp", CONSTEXPR_SPIN,
                          limits={"wall_ms": 60000, "build": {"wall_ms": 1500}}))
    assert res["outcome"] == "failed" and res["reason"] == "build_failed", res
    assert res["build"]["outcome"] == "timed_out", res["build"]
    assert res["build"]["wall_ms"] < 20000


def test_build_memory_is_its_own_limit(daemon):
    need_language("cpp")
    res = run(daemon, req("cpp", TEMPLATE_BOMB,
                          limits={"build": {"memory_bytes": 128 << 20}}))
    assert res["outcome"] == "failed" and res["reason"] == "build_failed", res
    b = res["build"]
    # gcc's driver outlives its killed cc1plus; either way the build
    # says the memory limit ended it
    assert b["reason"] == "memory_limit", b
    assert b["outcome"] in ("failed", "killed"), b


def test_bad_build_flags_are_invalid(daemon):
    need_language("c")
    for flags in (["-fplugin=/tmp/x.so"], ["-B/tmp"], ["@/etc/passwd"]):
        st, _, body = daemon.run(req("c", PROGRAMS["c"], build_flags=flags))
        assert st in (200, 400, 422), body
        assert "build_flags" in str(body), body
    st, _, body = daemon.run(req("python", "print(1)", build_flags=["-O2"]))
    assert "build_flags" in str(body), body


def test_cache_hit_builds_nothing_and_flags_miss(daemon):
    need_language("c")
    code = PROGRAMS["c"] + "/* cache test */\n"
    before = daemon.builds.count("c")
    first = run(daemon, req("c", code))
    assert first["outcome"] == "completed", first
    assert first["build"]["cache_hit"] is False
    assert daemon.builds.count("c") == before + 1
    second = run(daemon, req("c", code))
    assert second["outcome"] == "completed" and second["stdout"] == first["stdout"]
    assert second["build"]["cache_hit"] is True, second["build"]
    assert daemon.builds.count("c") == before + 1  # no compiler ran
    # another flag is another artifact
    third = run(daemon, req("c", code, build_flags=["-O0"]))
    assert third["build"]["cache_hit"] is False, third["build"]
    assert daemon.builds.count("c") == before + 2
    # the cache lives beneath the state dir, private
    root = daemon.state / "build-cache"
    assert (os.stat(root).st_mode & 0o077) == 0
    entries = [p for d in root.iterdir() for p in d.iterdir()
               if len(p.name) == 64]
    assert len(entries) >= 2


def test_cache_is_per_tenant_dir(daemon):
    need_language("c")
    dirs = [d.name for d in (daemon.state / "build-cache").iterdir()]
    assert dirs and all(d.startswith("t-") for d in dirs), dirs


@pytest.mark.parametrize("lang,tool", [("c", "c"), ("cpp", "c++"),
                                       ("go", "go"), ("rust", "rust"),
                                       ("java", "java")])
def test_version_constraints_select(daemon, lang, tool):
    need_language(lang)
    st, _, caps = daemon.request("GET", "/v1/capabilities")
    [facts] = caps["providers"]
    [fact] = [l for l in facts["languages"] if l["language"] == lang]
    assert fact["toolchain"] == tool and fact["version"], fact
    st, _, res = daemon.run(req(lang, BROKEN[lang], toolchain={tool: ">=999"}))
    assert res["outcome"] == "unsupported_language", res
    assert res["reason"] == "version_ineligible", res
    ok = run(daemon, req(lang, PROGRAMS[lang], stdin="",
                         toolchain={tool: "==" + fact["version"]}))
    assert ok["outcome"] == "completed", ok


def test_cache_configuration_shared_and_off(tmp_path_factory):
    need_language("c")
    code = PROGRAMS["c"] + "/* config test */\n"
    shared, _ = start_logged(tmp_path_factory, "shared",
                             build_cache={"shared": True})
    try:
        assert run(shared, req("c", code))["build"]["cache_hit"] is False
        assert run(shared, req("c", code))["build"]["cache_hit"] is True
        assert [d.name for d in (shared.state / "build-cache").iterdir()] \
            == ["shared"]
    finally:
        shared.stop()
    off, log = start_logged(tmp_path_factory, "off", build_cache={"bytes": 0})
    try:
        for _ in range(2):
            res = run(off, req("c", code))
            assert res["outcome"] == "completed"
            assert res["build"]["cache_hit"] is False
        assert log.count("c") == 2
        assert not (off.state / "build-cache").exists()
    finally:
        off.stop()


def test_remote_forwards_builds_and_judged_cases(daemon, tmp_path):
    """A front airlockd whose provider is `remote`, pointing at the
    sandbox daemon: limits.build, build_flags and the build object travel
    both ways, and a build failure keeps its typed shape."""
    need_language("c")
    from test_api_support import Daemon as Front
    from test_remote_roundtrip import front_config
    cfg = front_config("http://127.0.0.1:%d" % daemon.port,
                       token_file=str(daemon.state / "token"),
                       languages=("c",))
    cfg["providers"][0]["config"]["timeout_ms"] = 60000
    front = Front(tmp_path, cfg, name="front").start()
    try:
        res = run(front, req("c", PROGRAMS["c"], stdin="x\n",
                             build_flags=["-O1"],
                             limits={"build": {"wall_ms": 30000}}))
        assert res["outcome"] == "completed", res
        assert res["stdout"] == "hello from c\nx\n"
        assert res["build"]["outcome"] == "completed"
        bad = run(front, req("c", BROKEN["c"]))
        assert bad["outcome"] == "failed" and bad["reason"] == "build_failed"
        assert "undeclared_x" in bad["build"]["stderr"], bad
        judged = run(front, {"language": "c", "code": PROGRAMS["c"],
                             "tests": [{"stdin": "a\n",
                                        "expected_stdout": "hello from c\na\n"},
                                       {"stdin": "b\n",
                                        "expected_stdout": "nope"}]})
        assert [c["verdict"] for c in judged["tests"]] == ["accepted",
                                                          "wrong_answer"]
    finally:
        front.stop()
