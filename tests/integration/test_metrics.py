"""airlockd's /metrics passes the Prometheus text-format lint (promtool
check metrics) once a real daemon has finished, failed and refused runs,
every family carries HELP and TYPE, the gauges operators watch (fds, RSS,
queue, per-tenant runs) are served, and the Grafana dashboard in docs/ only
queries metrics the daemon serves.  promtool is installed by
scripts/install-tools.sh; its absence fails the lint."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from test_api_support import Daemon, local_config, sh

REPO = pathlib.Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "docs" / "grafana-dashboard.json"


TOOLS = pathlib.Path(os.environ.get("AIRLOCK_TOOLS_DIR") or REPO / "tools")


def promtool():
    """Debian's promtool, extracted into tools/bin by
    scripts/install-tools.sh (or one on PATH)."""
    p = TOOLS / "bin" / "promtool"
    if os.access(p, os.X_OK):
        return str(p)
    found = shutil.which("promtool")
    assert found, "%s missing: run scripts/install-tools.sh" % p
    return found


@pytest.fixture(scope="module")
def metrics_text(tmp_path_factory):
    """The exposition of a daemon with two tenants that has completed,
    failed and refused a run."""
    d = Daemon(tmp_path_factory.mktemp("metrics"),
               local_config(tenants=("default", "other"))).start()
    try:
        st, _, body = d.run(sh("echo hi"))
        assert st == 200 and body["outcome"] == "completed", body
        st, _, body = d.run(sh("exit 3"))
        assert st == 200 and body["outcome"] == "failed", body
        # A language the tenant is not granted: refused (403, denied).
        st, _, body = d.run({"language": "ruby", "code": "p 1"})
        assert st == 403 and body["outcome"] == "denied", body
        st, hdrs, text = d.request("GET", "/metrics")
        assert st == 200, text
        assert hdrs["content-type"].startswith("text/plain; version=0.0.4")
        return text
    finally:
        d.stop()


def families(text):
    """{name: type} from the TYPE lines."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def sample_family(name, fams):
    """The family a sample name belongs to (histogram suffixes)."""
    if name in fams:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)] if name.endswith(suffix) else None
        if base and fams.get(base) in ("histogram", "summary"):
            return base
    return None


def test_promtool_check_metrics(metrics_text):
    tool = promtool()
    p = subprocess.run([tool, "check", "metrics"], input=metrics_text,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_every_sample_has_help_and_type(metrics_text):
    fams = families(metrics_text)
    helps = set(re.findall(r"^# HELP (\S+) ", metrics_text, re.M))
    assert set(fams) == helps
    for line in metrics_text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        assert sample_family(name, fams) is not None, line


def value(text, series):
    m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    assert m is not None, series + " not served"
    return float(m.group(1))


def test_operator_gauges(metrics_text):
    fams = families(metrics_text)
    for name in ("airlock_api_open_fds", "process_resident_memory_bytes",
                 "airlock_slot_waiters", "airlock_tenant_runs_in_flight",
                 "airlock_idle_supervisors_failed_total"):
        assert name in fams, name
    assert value(metrics_text, "process_resident_memory_bytes") > 1 << 20
    assert value(metrics_text, "airlock_api_open_fds") > 0
    # Every configured tenant has its series, nothing in flight now.
    for tenant in ("default", "other"):
        assert value(metrics_text, 'airlock_tenant_runs_in_flight{tenant="'
                     + tenant + '"}') == 0
    for outcome in ("completed", "failed", "denied"):
        assert re.search(r'^airlock_runs_total\{outcome="' + outcome + '"',
                         metrics_text, re.M), outcome


def test_tenant_gauge_counts_a_live_run(tmp_path):
    d = Daemon(tmp_path, local_config(tenants=("default", "other"))).start()
    try:
        st, _, body = d.run(sh("sleep 30"), wait=False)
        assert st in (200, 201, 202), body
        run_id = body["run_id"]
        _, _, text = d.request("GET", "/metrics")
        assert value(text, 'airlock_tenant_runs_in_flight{tenant="default"}'
                     ) == 1
        assert value(text, 'airlock_tenant_runs_in_flight{tenant="other"}'
                     ) == 0
        st, _, body = d.request("POST", "/v1/runs/" + run_id +
                                "/interrupt?wait=true")
        assert st == 200, body
        _, _, text = d.request("GET", "/metrics")
        assert value(text, 'airlock_tenant_runs_in_flight{tenant="default"}'
                     ) == 0
    finally:
        d.stop()


def dashboard_exprs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            else:
                yield from dashboard_exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from dashboard_exprs(v)


PROMQL_WORDS = {"sum", "rate", "irate", "increase", "by", "without", "max",
                "min", "avg", "histogram_quantile", "le", "count", "topk",
                "on", "ignoring", "group_left", "clamp_min", "delta",
                "deriv", "abs"}


def test_dashboard_queries_served_metrics(metrics_text):
    dash = json.loads(DASHBOARD.read_text())
    exprs = list(dashboard_exprs(dash))
    assert exprs, "the dashboard has no queries"
    fams = families(metrics_text)
    served = set(fams)
    for name, kind in fams.items():
        if kind == "histogram":
            served |= {name + "_bucket", name + "_sum", name + "_count"}
    used = set()
    for e in exprs:
        # Label matchers and strings are not metric names.
        bare = re.sub(r'\{[^}]*\}|"[^"]*"|\[[^\]]*\]|'
                      r'\b(?:by|without)\s*\([^)]*\)', " ", e)
        for word in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare):
            if word in PROMQL_WORDS or word.startswith("$"):
                continue
            used.add(word)
    missing = sorted(used - served)
    assert not missing, "dashboard queries unknown metrics: %s" % missing
