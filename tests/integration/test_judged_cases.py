"""Judged test cases through airlockd and the sandbox: one build, each
case in a fresh sandbox, per-case results and verdicts."""
import pytest

from compiled_support import need_language, run, start_logged
from sandbox_helpers import need

DOUBLER = r'''#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    long n;
    if (argc > 1 && strcmp(argv[1], "hi") == 0) { puts("hi"); return 0; }
    if (scanf("%ld", &n) != 1) return 3;
    if (n == 13) { volatile int x = 1; while (x) ; }
    if (n == 17) *(volatile int *)0 = 1;
    printf("%ld\n", 2 * n);
    return 0;
}
'''


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d, log = start_logged(tmp_path_factory, "judged", concurrency=4)
    d.builds = log
    yield d
    d.stop()


def test_twenty_cases_one_build(daemon):
    need_language("c")
    cases, want = [], []
    for i in range(20):
        expected = "%d\n" % (2 * i)
        verdict = "accepted"
        if i % 6 == 5:  # 5, 11: a wrong expectation
            expected = "%d\n" % (2 * i + 1)
            verdict = "wrong_answer"
        case = {"stdin": "%d\n" % i, "expected_stdout": expected}
        if i == 13:
            case["limits"] = {"wall_ms": 1000}
            verdict = "wrong_answer"
        if i == 17:
            verdict = "wrong_answer"
        cases.append(case)
        want.append(verdict)
    before = daemon.builds.count("c")
    res = run(daemon, {"language": "c", "code": DOUBLER, "tests": cases,
                       "limits": {"memory_bytes": 64 << 20}})
    assert res["outcome"] == "completed", res
    assert daemon.builds.count("c") == before + 1  # built once
    assert res["build"]["outcome"] == "completed"
    got = res["tests"]
    assert len(got) == 20
    assert [c["verdict"] for c in got] == want
    for i, c in enumerate(got):
        if i == 13:
            assert c["outcome"] == "timed_out", c
        elif i == 17:
            assert c["outcome"] == "killed" and c["signal"] == 11, c
        else:
            assert c["outcome"] == "completed", c
            assert c["stdout"] == "%d\n" % (2 * i), c
            assert c["exit_code"] == 0
        assert set(c["usage"]) == {"wall_ms", "cpu_user_ms", "cpu_sys_ms",
                                   "peak_memory_bytes"}


def test_argv_and_no_expectation(daemon):
    need_language("c")
    res = run(daemon, {"language": "c", "code": DOUBLER,
                       "tests": [{"stdin": "", "argv": ["hi"]},
                                 {"stdin": "x"}]})
    a, b = res["tests"]
    assert a["stdout"] == "hi\n" and a["verdict"] is None, a
    assert b["outcome"] == "failed" and b["exit_code"] == 3, b


def test_build_failure_runs_no_case(daemon):
    need_language("c")
    res = run(daemon, {"language": "c", "code": "int main(void) { x }",
                       "tests": [{"stdin": "1"}, {"stdin": "2"}]})
    assert res["outcome"] == "failed" and res["reason"] == "build_failed", res
    assert "tests" not in res
    assert res["build"]["outcome"] == "failed"


def test_interpreted_language_trailing_whitespace(daemon):
    need(language="python")
    code = "import sys\nfor l in sys.stdin: print(l.strip().upper() + '  ')\n"
    tests = [{"stdin": "ab\ncd\n", "expected_stdout": "AB\nCD"},
             {"stdin": "x\n", "expected_stdout": "Y\n"}]
    res = run(daemon, {"language": "python", "code": code, "tests": tests,
                       "compare": "trailing_whitespace"})
    assert res["outcome"] == "completed", res
    assert "build" not in res
    assert [c["verdict"] for c in res["tests"]] == ["accepted", "wrong_answer"]
    exact = run(daemon, {"language": "python", "code": code, "tests": tests})
    assert [c["verdict"] for c in exact["tests"]] == ["wrong_answer",
                                                      "wrong_answer"]


def test_bounded_count(daemon):
    st, _, body = daemon.run({"language": "python", "code": "",
                              "tests": [{"stdin": ""}] * 65})
    assert st == 400 and "tests" in str(body), body
    st, _, body = daemon.run({"language": "python", "code": "",
                              "tests": [{"stdin": "", "bogus": 1}]})
    assert st == 400 and "tests[0]" in str(body), body


def test_build_and_case_limits_are_held_to_ceilings(daemon):
    # the built-in wall ceiling is 15 min (docs/configuration.md)
    over = 16 * 60 * 1000
    st, _, body = daemon.run({"language": "c", "code": DOUBLER,
                              "limits": {"build": {"wall_ms": over}}})
    assert "gate:ceiling:build.wall_ms" in str(body), body
    st, _, body = daemon.run({"language": "python", "code": "",
                              "tests": [{"stdin": "",
                                         "limits": {"wall_ms": over}}]})
    assert "gate:ceiling:tests.wall_ms" in str(body), body
