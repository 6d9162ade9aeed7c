// Drives the web console in Debian's headless chromium with puppeteer-core
// (tests/integration/test_console.py starts airlockd and runs this).
// Usage: node console.cjs BASE_URL TOKEN_FILE WORK_DIR
//   WORK_DIR gets the screenshots, downloads/ and the file that releases
//   the live run (release).  Prints one JSON line of what it saw; exits 1
//   on the first failed check.
"use strict";
const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");

const [base, tokenFile, work] = process.argv.slice(2);
const token = fs.readFileSync(tokenFile, "utf8").trim();
const CHROMIUM = process.env.AIRLOCK_CHROMIUM || "/usr/bin/chromium";
const STEP_MS = 15000;
// Timer polling, and predicates that never throw: a predicate that throws
// (an element not there yet) ends puppeteer's polling without an answer.
const POLL = { polling: 100 };
const XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
const seen = {};

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

async function api(method, p, body) {
  const r = await fetch(base + p, { method,
    headers: Object.assign({ Authorization: "Bearer " + token },
      body ? { "Content-Type": "application/json" } : {}),
    body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, body: await r.json() };
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(work, name), fullPage: true });
}

async function textOf(page, sel) {
  return page.$eval(sel, (e) => e.textContent);
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  let page = null;
  try {
    page = await browser.newPage();
    page.setDefaultTimeout(STEP_MS);
    await page.setViewport({ width: 1200, height: 800 });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    // Set before any page script: an executed payload would change it.
    await page.evaluateOnNewDocument(() => { window.__pwned = 0; });
    const dl = path.join(work, "downloads");
    fs.mkdirSync(dl, { recursive: true });
    const cdp = await browser.target().createCDPSession();
    // Chromium reserves a download's name with an empty file before the
    // bytes land, so the file's presence says nothing: its events do.
    const downloads = {};
    cdp.on("Browser.downloadProgress", (e) => {
      if (e.state !== "inProgress") downloads[e.guid] = e.state;
    });
    await cdp.send("Browser.setDownloadBehavior",
      { behavior: "allow", downloadPath: dl, eventsEnabled: true });

    // A wrong token is refused with a visible error.
    await page.goto(base + "/ui/", { waitUntil: "load" });
    await page.type("#token", "not-a-token");
    await page.click("#login-form button");
    await page.waitForFunction(() => !document.getElementById("error").hidden, POLL);
    seen.bad_token_error = await textOf(page, "#error");
    check(/refused/.test(seen.bad_token_error), "bad token error shown");
    check(await page.$eval("#nav", (e) => e.hidden), "nav hidden after bad token");
    await shot(page, "console-login-error.png");

    // The right one signs in; it is in sessionStorage, not in the URL.
    await page.$eval("#token", (e) => { e.value = ""; });
    await page.type("#token", token);
    await page.click("#login-form button");
    await page.waitForSelector("#runs");
    check(!page.url().includes(token), "token not in the URL");

    // A run started from the form; its output arrives while it runs: it
    // waits for the release file, which is made only once line1 is shown.
    const release = path.join(work, "release");
    await page.goto(base + "/ui/#/new");
    await page.waitForSelector("#new-run");
    await page.select("#new-run select[name=language]", "sh");
    await page.select("#new-run select[name=network]", "host");
    await page.type("#new-run textarea[name=code]",
      "echo line1; i=0; while [ ! -e '" + release + "' ] && [ $i -lt 400 ]; " +
      "do sleep 0.05; i=$((i+1)); done; echo line2; mkdir -p out; " +
      "echo report > out/r.txt");
    await page.type("#new-run textarea[name=outputs]", "out/r.txt");
    await page.click("#new-run button[type=submit]");
    await page.waitForFunction(() => location.hash.startsWith("#/run/"), POLL);
    const runId = decodeURIComponent(
      (await page.evaluate(() => location.hash)).slice("#/run/".length));
    seen.run_id = runId;
    await page.waitForFunction(() =>
      (document.getElementById("output")?.textContent || "").includes("line1"),
      POLL);
    const mid = await api("GET", "/v1/runs/" + runId);
    seen.state_when_line1_shown = mid.body.state || "finished";
    seen.badge_when_line1_shown = await page.$eval("#run-state",
      (e) => e.textContent);
    check(mid.body.state === "running", "line1 shown while the run runs");
    check(!(await textOf(page, "#output")).includes("line2"), "line2 not yet");
    await shot(page, "console-run-live.png");
    fs.writeFileSync(release, "");
    await page.waitForSelector("#run-state [data-outcome=completed]");
    await page.waitForSelector("#artifacts button[data-artifact=out-1]");
    seen.output = await textOf(page, "#output");
    check(seen.output === "line1\nline2\n", "whole output shown");
    await page.waitForSelector("#run-limits dd[data-fact=wall_ms]");
    await shot(page, "console-run.png");

    // Its artifact downloads with the token (a fetch, never a URL).
    await page.click("#artifacts button[data-artifact=out-1]");
    const file = path.join(dl, "r.txt");
    for (let i = 0; i < 150 && Object.keys(downloads).length === 0; i++)
      await new Promise((r) => setTimeout(r, 100));
    seen.download_states = Object.values(downloads);
    check(seen.download_states.includes("completed"), "download completed");
    seen.artifact = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
    check(seen.artifact === "report\n", "artifact downloaded");

    // Hostile output is text: no element made, nothing executed.
    const x = await api("POST", "/v1/runs?wait=false", { language: "sh",
      code: "printf '%s\\n' '" + XSS + "'; printf '%s\\n' '" + XSS + "' >&2",
      grant: { network: "host", streaming: true } });
    check(x.status === 202, "hostile run started");
    await page.goto(base + "/ui/#/run/" + x.body.run_id);
    await page.waitForSelector("#run-state [data-outcome=completed]");
    seen.xss_output = await textOf(page, "#output");
    seen.xss_elements = await page.$$eval("#output img, #output script, img",
      (l) => l.length);
    seen.pwned = await page.evaluate(() => window.__pwned);
    check(seen.xss_output === XSS + "\n" + XSS + "\n", "payload shown as text");
    check(seen.xss_elements === 0, "no element from the payload");
    check(seen.pwned === 0, "payload did not run");
    await shot(page, "console-run-hostile.png");

    // The runs list and its filters.
    await page.goto(base + "/ui/#/runs?outcome=completed&language=sh");
    await page.waitForSelector("#runs-body tr[data-run]");
    seen.filtered_runs = await page.$$eval("#runs-body tr[data-run]",
      (l) => l.map((e) => e.getAttribute("data-run")));
    check(seen.filtered_runs.includes(runId), "the run is listed");
    await shot(page, "console-runs.png");
    await page.goto(base + "/ui/#/runs?language=python");
    // This view's list (the previous one, filtered on sh, is replaced).
    await page.waitForFunction(() => {
      const sel = document.querySelector("#filters select[name=language]");
      const body = document.getElementById("runs-body");
      return !!sel && sel.value === "python" && !!body &&
        body.children.length > 0;
    }, POLL);
    seen.python_runs = await page.$$eval("#runs-body tr[data-run]",
      (l) => l.map((e) => e.children[3].textContent));
    check(seen.python_runs.every((l) => l === "python"), "language filter");

    // The audit trail, verified.
    await page.goto(base + "/ui/#/audit");
    await page.waitForSelector("#verify [data-verify]");
    seen.verify = await page.$eval("#verify [data-verify]",
      (e) => e.getAttribute("data-verify"));
    check(seen.verify === "ok", "verify OK");
    seen.audit_rows = await page.$$eval("#audit-body tr", (l) => l.length);
    await shot(page, "console-audit.png");

    // Capabilities and health.
    await page.goto(base + "/ui/#/system");
    await page.waitForSelector("#health .badge");
    seen.health = await textOf(page, "#health");
    await shot(page, "console-system.png");

    seen.page_errors = errors;
    seen.session_token = await page.evaluate(
      () => sessionStorage.getItem("airlock.token") !== null);
  } catch (e) {
    // What the page showed when a step failed, for the test's message.
    if (page) seen.failed_at = { url: page.url(), view: await page.$eval(
      "main", (m) => m.textContent.slice(0, 2000)).catch(() => null) };
    throw e;
  } finally {
    await browser.close();
  }
}

main().then(() => {
  console.log(JSON.stringify(seen));
}, (e) => {
  console.log(JSON.stringify(seen));
  console.error(String(e && e.stack || e));
  process.exit(1);
});
