// The airlock web console (docs/console.md).  Plain JavaScript, no
// framework, nothing loaded from elsewhere.  Every piece of data comes from
// the /v1 API with the token the user typed, kept in sessionStorage only
// (never in a URL).  Run output and every other string from the API is
// untrusted: it reaches the page only as text nodes (el() below), never as
// markup.
"use strict";

const TOKEN_KEY = "airlock.token";
const OUTCOMES = ["completed", "failed", "killed", "timed_out", "interrupted",
  "cancelled", "invalid_request", "denied", "unsupported_language",
  "unenforceable_limit", "disabled", "unavailable", "conflict"];

let streamAbort = null; // the live output reader of the open run page

function token() { return sessionStorage.getItem(TOKEN_KEY); }

// Builds an element; children that are strings become text nodes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function showError(msg) {
  const p = document.getElementById("error");
  p.textContent = msg || "";
  p.hidden = !msg;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? `${body.error}: ${body.message}` :
      `HTTP ${status}`);
    this.status = status;
  }
}

async function api(path, opts) {
  const o = Object.assign({ headers: {} }, opts || {});
  o.headers = Object.assign({ Authorization: "Bearer " + token() },
    o.headers);
  const r = await fetch(path, o);
  if (r.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    render();
    throw new ApiError(401, { error: "unauthorized",
      message: "the token was refused" });
  }
  const ct = r.headers.get("Content-Type") || "";
  const body = ct.startsWith("application/json") ? await r.json() : null;
  if (!r.ok && !(r.status >= 400 && body && body.run_id && body.outcome))
    throw new ApiError(r.status, body);
  return body;
}

function badge(outcome, state) {
  if (!outcome) return el("span", { class: "badge running" }, state || "running");
  const cls = outcome === "completed" ? "ok" : "bad";
  return el("span", { class: "badge " + cls, "data-outcome": outcome }, outcome);
}

function runLink(id) {
  return el("a", { href: "#/run/" + encodeURIComponent(id), class: "mono" }, id);
}

function parseHash() {
  const h = location.hash.replace(/^#\/?/, "");
  const [path, q] = h.split("?");
  return { parts: path.split("/").map(decodeURIComponent),
    query: new URLSearchParams(q || "") };
}

// ---- login ---------------------------------------------------------------

async function login(ev) {
  ev.preventDefault();
  const input = document.getElementById("token");
  const t = input.value.trim();
  showError("");
  // A token is checked against an endpoint that needs one.
  const r = await fetch("/v1/capabilities",
    { headers: { Authorization: "Bearer " + t } });
  if (r.status === 401) {
    showError("Sign-in failed: the token was refused (401).");
    return;
  }
  if (!r.ok) {
    showError(`Sign-in failed: HTTP ${r.status}.`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, t);
  input.value = "";
  if (!location.hash || location.hash === "#/login") location.hash = "#/runs";
  render();
}

function logout() {
  sessionStorage.removeItem(TOKEN_KEY);
  location.hash = "#/runs";
  render();
}

// ---- runs list -------------------------------------------------------------

function toIso(local) {
  // <input type=datetime-local> is the browser's local time.
  if (!local) return null;
  const d = new Date(local);
  return isNaN(d) ? null : d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function toLocal(iso) {
  const d = iso ? new Date(iso) : null;
  if (!d || isNaN(d)) return null;
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

async function viewRuns(view, query) {
  let languages = [];
  try {
    const caps = await api("/v1/capabilities");
    const set = new Set();
    for (const p of caps.providers) for (const l of p.languages) set.add(l.language);
    languages = [...set].sort();
  } catch (e) { /* the filter still works without the list */ }
  const f = el("form", { class: "filters", id: "filters" },
    el("label", {}, "Outcome", el("select", { name: "outcome" },
      el("option", { value: "" }, "any"),
      OUTCOMES.map((o) => el("option", { value: o,
        selected: query.get("outcome") === o }, o)))),
    el("label", {}, "Language", el("select", { name: "language" },
      el("option", { value: "" }, "any"),
      languages.map((l) => el("option", { value: l,
        selected: query.get("language") === l }, l)))),
    el("label", {}, "Since", el("input", { type: "datetime-local",
      name: "since", step: 1,
      value: toLocal(query.get("since")) })),
    el("label", {}, "Until", el("input", { type: "datetime-local",
      name: "until", step: 1,
      value: toLocal(query.get("until")) })),
    el("button", { type: "submit" }, "Filter"));
  f.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const k of ["outcome", "language"])
      if (f.elements[k].value) q.set(k, f.elements[k].value);
    for (const k of ["since", "until"]) {
      const iso = toIso(f.elements[k].value);
      if (iso) q.set(k, iso);
    }
    location.hash = "#/runs?" + q.toString();
  });
  const tbody = el("tbody", { id: "runs-body" });
  const more = el("button", { type: "button", id: "runs-more", hidden: true },
    "Older runs");
  view.append(el("h1", {}, "Runs"), f,
    el("table", { id: "runs" }, el("thead", {}, el("tr", {},
      el("th", {}, "Run"), el("th", {}, "State"), el("th", {}, "Outcome"),
      el("th", {}, "Language"), el("th", {}, "Created"))), tbody), more);

  const q = new URLSearchParams();
  for (const k of ["outcome", "language", "since", "until"])
    if (query.get(k)) q.set(k, query.get(k));
  q.set("limit", "50");
  async function page(after) {
    if (after) q.set("after", after);
    const body = await api("/v1/runs?" + q.toString());
    for (const r of body.runs)
      tbody.append(el("tr", { "data-run": r.run_id },
        el("td", {}, runLink(r.run_id)), el("td", {}, r.state),
        el("td", {}, r.outcome ? badge(r.outcome) : ""),
        el("td", {}, r.language || ""), el("td", { class: "mono" }, r.created_at)));
    if (!body.runs.length && !after)
      tbody.append(el("tr", {}, el("td", { colspan: 5, class: "muted" },
        "No runs match.")));
    more.hidden = !body.next_after;
    more.onclick = () => page(body.next_after).catch((e) => showError(e.message));
  }
  await page(null);
}

// ---- new run ---------------------------------------------------------------

async function viewNew(view) {
  const caps = await api("/v1/capabilities");
  const langs = new Set();
  for (const p of caps.providers) for (const l of p.languages) langs.add(l.language);
  const f = el("form", { class: "new-run", id: "new-run" },
    el("label", {}, "Language", el("select", { name: "language" },
      [...langs].sort().map((l) => el("option", { value: l }, l)))),
    el("label", {}, "Code", el("textarea", { name: "code", required: true,
      spellcheck: "false" })),
    el("label", {}, "Network", el("select", { name: "network" },
      ["none", "loopback", "host"].map((n) => el("option", { value: n }, n)))),
    el("label", {}, "Wall time limit (ms, empty: the default)",
      el("input", { name: "wall_ms", type: "number", min: 1 })),
    el("label", {}, "Outputs to collect (paths, one per line)",
      el("textarea", { name: "outputs", class: "short" })),
    el("label", { class: "inline" }, el("input", { type: "checkbox",
      name: "streaming", checked: true }), " stream output live"),
    el("button", { type: "submit" }, "Start"));
  f.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    showError("");
    const req = { language: f.elements.language.value,
      code: f.elements.code.value,
      grant: { network: f.elements.network.value,
        streaming: f.elements.streaming.checked } };
    const outs = f.elements.outputs.value.split("\n").map((s) => s.trim())
      .filter(Boolean);
    if (outs.length) {
      req.outputs = outs;
      req.grant.workspace = "rw";
    }
    if (f.elements.wall_ms.value)
      req.limits = { wall_ms: Number(f.elements.wall_ms.value) };
    try {
      const body = await api("/v1/runs?wait=false", { method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(req) });
      location.hash = "#/run/" + encodeURIComponent(body.run_id);
    } catch (e) { showError("The run was not started: " + e.message); }
  });
  view.append(el("h1", {}, "New run"), f);
}

// ---- one run ---------------------------------------------------------------

function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.filter((p) => p[1] !== undefined)
    .map(([k, v]) => [el("dt", {}, k), el("dd", { "data-fact": k },
      v === null ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v))]));
}

function b64text(s) {
  try { return new TextDecoder().decode(Uint8Array.from(atob(s), (c) => c.charCodeAt(0))); }
  catch (e) { return ""; }
}

// Reads GET /v1/runs/{id}/events with the Authorization header (an
// EventSource cannot send one) and calls on(event, data) per event.
async function readEvents(id, on, signal) {
  const r = await fetch("/v1/runs/" + encodeURIComponent(id) + "/events",
    { headers: { Authorization: "Bearer " + token() }, signal });
  if (!r.ok || !r.body) throw new ApiError(r.status, null);
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) on(name, JSON.parse(data.join("\n")));
    }
  }
}

async function download(id, artifact, name) {
  const r = await fetch("/v1/runs/" + encodeURIComponent(id) + "/artifacts/" +
    encodeURIComponent(artifact), { headers: { Authorization: "Bearer " + token() } });
  if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
  const url = URL.createObjectURL(await r.blob());
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function renderResult(box, id, res) {
  box.replaceChildren();
  box.append(el("h2", {}, "Result"), facts([
    ["outcome", res.outcome], ["reason", res.reason],
    ["exit code", res.exit_code], ["signal", res.signal],
    ["started", res.started_at], ["finished", res.finished_at],
    ["wall ms", res.usage && res.usage.wall_ms],
    ["cpu ms (user+sys)", res.usage && (res.usage.cpu_user_ms + res.usage.cpu_sys_ms)],
    ["peak memory bytes", res.usage && res.usage.peak_memory_bytes],
    ["stdout bytes", res.stdout_bytes], ["stderr bytes", res.stderr_bytes],
  ]));
  const p = res.provider || {};
  box.append(el("h2", {}, "Provider facts"), facts([
    ["provider", p.id], ["safety class", p.safety_class],
    ...Object.entries(p.isolation || {}).map(([k, v]) => [k, v]),
  ]));
  const list = el("ul", { id: "artifacts" });
  const arts = [{ artifact: "log", path: "log (stdout and stderr)", name: "log" }];
  for (const o of res.outputs || [])
    if (o.artifact) arts.push({ artifact: o.artifact, path: o.path,
      name: o.path.split("/").pop(), size: o.size, sha256: o.sha256 });
  for (const a of arts)
    list.append(el("li", {}, el("button", { type: "button",
      "data-artifact": a.artifact,
      onclick: () => download(id, a.artifact, a.name).catch((e) =>
        showError("Download failed: " + e.message)) }, "Download"),
    " ", el("span", { class: "mono" }, a.path),
    a.size !== undefined ? el("span", { class: "muted" }, ` ${a.size} bytes`) : null,
    a.sha256 ? el("span", { class: "muted mono" }, ` sha256 ${a.sha256}`) : null));
  box.append(el("h2", {}, "Artifacts"), list);
}

async function viewRun(view, id) {
  const status = el("span", { id: "run-state" }, badge(null, "running"));
  const out = el("pre", { class: "output", id: "output" });
  const limits = el("div", { id: "run-limits" });
  const result = el("div", { id: "result" });
  view.append(el("h1", {}, "Run ", el("span", { class: "mono" }, id), " ", status),
    el("h2", {}, "Output"), out, el("div", { class: "grid2" }, result, limits));

  // What the host decided (limits as enforced, grant, language) is in the
  // run's audit record.
  // Asked again once the run ends: a run just admitted may not have its
  // record written yet.
  const loadLimits = () => api("/v1/audit?limit=5&run_id=" +
      encodeURIComponent(id)).then((a) => {
    const start = a.records.find((r) => r.event === "run.started") || a.records[0];
    if (!start || limits.firstChild) return;
    limits.append(el("h2", {}, "Limits (as enforced)"),
      facts(Object.entries(start.limits || {})));
    limits.append(el("h2", {}, "Request"), facts([
      ["language", start.language], ["purpose", start.purpose],
      ["network", start.grant && start.grant.network],
      ["workspace", start.grant && start.grant.workspace],
      ["streaming", start.grant && start.grant.streaming],
      ["code sha256", start.code_sha256], ["principal", start.principal],
    ]));
  }).catch(() => {});
  loadLimits();

  let finished = null;
  const ac = new AbortController();
  streamAbort = ac;
  try {
    await readEvents(id, (name, data) => {
      if (name === "stdout" || name === "stderr") {
        const text = data.data !== undefined ? data.data : b64text(data.data_b64);
        out.append(el("span", { class: name }, text));
        out.scrollTop = out.scrollHeight;
      } else if (name === "dropped") {
        out.append(el("span", { class: "muted" }, `[${data.events} earlier events dropped]\n`));
      } else if (name === "result") {
        finished = data;
      }
    }, ac.signal);
  } catch (e) {
    if (ac.signal.aborted) return;
    if (e.status === 404) { showError("No such run."); return; }
  }
  if (!finished) finished = await api("/v1/runs/" + encodeURIComponent(id));
  if (!finished.outcome) return;
  // The result carries the whole output; the live buffer may not.
  out.replaceChildren();
  const so = finished.stdout !== undefined ? finished.stdout : b64text(finished.stdout_b64 || "");
  const se = finished.stderr !== undefined ? finished.stderr : b64text(finished.stderr_b64 || "");
  if (so) out.append(el("span", { class: "stdout" }, so));
  if (se) out.append(el("span", { class: "stderr" }, se));
  status.replaceChildren(badge(finished.outcome));
  renderResult(result, id, finished);
  if (!limits.firstChild) await loadLimits();
}

// ---- audit -------------------------------------------------------------------

async function viewAudit(view) {
  const verify = el("p", { id: "verify" }, "verifying…");
  const tbody = el("tbody", { id: "audit-body" });
  const more = el("button", { type: "button", hidden: true }, "Older records");
  view.append(el("h1", {}, "Audit trail"), verify,
    el("table", { id: "audit" }, el("thead", {}, el("tr", {},
      ["seq", "time", "event", "run", "language", "provider", "outcome",
        "reason", "hash"].map((h) => el("th", {}, h)))), tbody), more);
  async function page(before) {
    const body = await api("/v1/audit?limit=100" + (before ? "&before=" + before : ""));
    if (!before) {
      verify.replaceChildren(body.verify.ok
        ? el("span", { class: "badge ok", "data-verify": "ok" }, "verify OK")
        : el("span", { class: "badge bad", "data-verify": "failed" },
          "verify FAILED: " + (body.verify.message || "")),
      " ", el("span", { class: "muted" },
        "the whole hash chain checked now; the records below are your tenant's"));
    }
    for (const r of body.records)
      tbody.append(el("tr", {}, el("td", {}, r.seq), el("td", { class: "mono" }, r.time),
        el("td", {}, r.event), el("td", {}, r.run_id ? runLink(r.run_id) : ""),
        el("td", {}, r.language || ""), el("td", {}, r.provider || ""),
        el("td", {}, r.outcome ? badge(r.outcome) : ""), el("td", {}, r.reason || ""),
        el("td", { class: "mono", title: r.hash }, (r.hash || "").slice(0, 12))));
    more.hidden = !body.next_before;
    more.onclick = () => page(body.next_before).catch((e) => showError(e.message));
  }
  await page(0);
}

// ---- system ------------------------------------------------------------------

async function viewSystem(view) {
  const hr = await fetch("/v1/health");
  const health = await hr.json();
  const caps = await api("/v1/capabilities");
  view.append(el("h1", {}, "System"), el("h2", {}, "Health"),
    el("p", { id: "health" }, el("span", { class: "badge " +
      (health.ready ? "ok" : "bad") }, health.status)),
    facts([...Object.entries(health.checks || {}),
      ...Object.entries(health.resources || {}),
      ["records pending", health.records_pending]]));
  view.append(el("h2", {}, "Capabilities"));
  for (const p of caps.providers) {
    view.append(el("h2", {}, el("span", { class: "mono" }, p.provider), " ",
      el("span", { class: "badge " + (p.available ? "ok" : "bad") },
        p.available ? "available" : "unavailable: " + (p.unavailable_reason || ""))),
    facts([["safety class", p.safety_class],
      ...Object.entries(p.isolation || {}),
      ["network", (p.network || []).join(", ")],
      ["workspace", (p.workspace || []).join(", ")],
      ["streaming", p.streaming],
      ["limits", (p.limits || []).join(", ")]]),
    el("table", { class: "languages" }, el("thead", {}, el("tr", {},
      ["language", "toolchain", "version", "path"].map((h) => el("th", {}, h)))),
    el("tbody", {}, (p.languages || []).map((l) => el("tr", {},
      el("td", {}, l.language), el("td", {}, l.toolchain),
      el("td", {}, l.version), el("td", { class: "mono" }, l.path))))));
  }
}

// ---- router ------------------------------------------------------------------

async function render() {
  if (streamAbort) { streamAbort.abort(); streamAbort = null; }
  // Each render draws into its own container: one still awaiting the API
  // when the user moves on writes into a container no longer shown.
  const view = el("div");
  document.getElementById("view").replaceChildren(view);
  const signedIn = !!token();
  document.getElementById("login").hidden = signedIn;
  document.getElementById("nav").hidden = !signedIn;
  if (!signedIn) return;
  const { parts, query } = parseHash();
  for (const a of document.querySelectorAll("nav a"))
    a.classList.toggle("current", a.getAttribute("href") === "#/" + parts[0]);
  try {
    if (parts[0] === "run" && parts[1]) await viewRun(view, parts[1]);
    else if (parts[0] === "new") await viewNew(view);
    else if (parts[0] === "audit") await viewAudit(view);
    else if (parts[0] === "system") await viewSystem(view);
    else await viewRuns(view, query);
  } catch (e) {
    if (!(e.name === "AbortError")) showError(e.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login-form").addEventListener("submit", (ev) =>
    login(ev).catch((e) => showError("Sign-in failed: " + e.message)));
  document.getElementById("logout").addEventListener("click", logout);
  window.addEventListener("hashchange", () => { showError(""); render(); });
  render();
});
