// The JavaScript client against a real airlockd, run with `node --test`
// by tests/integration/test_client_js.py, which starts the daemon (local
// provider) and passes AIRLOCK_URL, AIRLOCK_TOKEN_FILE and AIRLOCK_TMP.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import {
  AirlockError, BadRequestError, Client, ConflictError, ForbiddenError,
  NotFoundError, RunNotFinishedError, SSEParser, UnauthorizedError,
  isRan, resultOutput, resultText, type RunRequest,
} from "../src/index.js";

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} must be set`);
  return v;
}

const URL_ = env("AIRLOCK_URL");
const TOKEN_FILE = env("AIRLOCK_TOKEN_FILE");
const TMP = env("AIRLOCK_TMP");

// The local provider can only offer host networking.
function sh(code: string, extra: Partial<RunRequest> = {}, streaming = false): RunRequest {
  return { language: "sh", code, grant: { network: "host", workspace: "rw", streaming }, ...extra };
}

// sh code that waits (bounded, 60 s) for the test to create `path`.
function gated(path: string, then = "true"): RunRequest {
  return sh(`i=0; while [ ! -e ${path} ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; ${then}`);
}

const clientP = Client.create(URL_, { tokenFile: TOKEN_FILE, timeoutMs: 30_000 });

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

test("health needs no token, capabilities need one", async () => {
  const c = await clientP;
  const anon = new Client(URL_);
  const h = await anon.health();
  assert.equal(h.ready, true);
  assert.equal(h.status, "ok");
  const caps = await c.capabilities();
  assert.deepEqual(caps.map((f) => f.provider), ["local"]);
  await assert.rejects(anon.capabilities(), (e: unknown) =>
    e instanceof UnauthorizedError && e.status === 401 && e.error === "unauthorized");
});

test("run resolves to the result whatever its outcome", async () => {
  const c = await clientP;
  const r = await c.run(sh("echo hello; echo oops >&2"));
  assert.equal(r.outcome, "completed");
  assert.equal(r.exit_code, 0);
  assert.ok(isRan(r));
  assert.equal(r.stdout, "hello\n");
  assert.equal(resultText(r, "stderr"), "oops\n");
  const failed = await c.run(sh("printf '\\377'; exit 3"));
  assert.equal(failed.outcome, "failed");
  assert.equal(failed.exit_code, 3);
  assert.deepEqual([...resultOutput(failed, "stdout")], [0xff]);
});

test("submit, get, wait and list", async () => {
  const c = await clientP;
  const gate = join(TMP, "gate-wait");
  const id = await c.submit(gated(gate, "echo done"));
  assert.equal(await c.get(id), null);
  writeFileSync(gate, "");
  const r = await c.wait(id, { timeoutMs: 30_000 });
  assert.equal(r.run_id, id);
  assert.equal(r.stdout, "done\n");
  assert.equal((await c.get(id))?.outcome, "completed");
  const page = await c.listRuns({ limit: 1 });
  assert.equal(page.runs.length, 1);
  assert.equal(page.runs[0].run_id, id);
  assert.notEqual(page.next_after, null);
});

test("events stream the output, then the result", async () => {
  const c = await clientP;
  const id = await c.submit(sh("for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.05; done;" +
                               " printf '\\376'", {}, true));
  const events = await collect(c.events(id));
  const last = events[events.length - 1];
  assert.equal(last.type, "result");
  for (const e of events.slice(0, -1)) assert.ok(e.type === "stdout" || e.type === "stderr", e.type);
  const out = Buffer.concat(events.filter((e) => e.type === "stdout").map((e) => e.bytes()));
  assert.deepEqual(out, Buffer.from("out1\nout2\nout3\n\xfe", "latin1"));
  assert.equal(events.filter((e) => e.type === "stderr").map((e) => e.text()).join(""),
               "err1\nerr2\nerr3\n");
  assert.deepEqual(events.map((e) => Number(e.id)), events.map((_, i) => i));
  assert.equal(last.result().run_id, id);
  assert.equal(last.result().outcome, "completed");
  const rest = await collect(c.events(id, { lastEventId: 1 }));
  assert.deepEqual(rest.map((e) => [e.id, e.type, e.data]),
                   events.slice(2).map((e) => [e.id, e.type, e.data]));
  assert.deepEqual(await collect(c.events(id, { lastEventId: last.id ?? "" })), []);
  await assert.rejects(collect(c.events(id, { lastEventId: "x" })), (e: unknown) =>
    e instanceof BadRequestError && e.error === "invalid_header");
  // without streaming the stream is just the result
  const quiet = await c.submit(sh("echo quiet"));
  const only = await collect(c.events(quiet));
  assert.deepEqual(only.map((e) => e.type), ["result"]);
  assert.equal(only[0].result().stdout, "quiet\n");
});

test("interrupt a sleeping run", async () => {
  const c = await clientP;
  const started = join(TMP, "started");
  const id = await c.submit(sh(`touch ${started}; exec sleep 60`, { limits: { wall_ms: 60_000 } }));
  for (let i = 0; i < 1500 && !existsSync(started); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(existsSync(started));
  const r = await c.interrupt(id, { wait: true, timeoutMs: 30_000 });
  assert.equal(r?.run_id, id);
  assert.equal(r?.outcome, "interrupted");
  await assert.rejects(c.interrupt(id), (e: unknown) =>
    e instanceof ConflictError && e.status === 409 && e.error === "run_finished");
  const id2 = await c.submit(sh("exec sleep 60", { limits: { wall_ms: 60_000 } }));
  assert.equal(await c.interrupt(id2), null);
  assert.equal((await c.wait(id2, { timeoutMs: 30_000 })).outcome, "interrupted");
});

test("artifacts: listing and streamed download", async () => {
  const c = await clientP;
  const gate = join(TMP, "gate-artifacts");
  const running = await c.submit(gated(gate));
  await assert.rejects(c.artifacts(running), RunNotFinishedError);
  writeFileSync(gate, "");
  await c.wait(running);
  const r = await c.run(sh("mkdir -p out; printf 'a\\0b' > out/small.dat;" +
                           " head -c 300000 /dev/urandom > out/big.bin; echo logged",
                           { outputs: ["out/*"] }));
  assert.equal(r.outcome, "completed");
  const arts = await c.artifacts(r.run_id);
  assert.deepEqual(arts, await c.artifacts(r));
  assert.deepEqual(arts.map((a) => a.path).sort(), ["out/big.bin", "out/small.dat", null].sort());
  for (const a of arts) {
    const dest = join(TMP, `dl-${a.name}`);
    const dl = await c.downloadArtifact(r.run_id, a.name, dest);
    const data = readFileSync(dest);
    assert.equal(dl.size, data.length);
    assert.equal(dl.sha256, createHash("sha256").update(data).digest("hex"));
    if (a.path !== null) {
      assert.equal(a.sha256, dl.sha256);
      assert.equal(a.size, dl.size);
    }
    if (a.path === "out/small.dat") assert.deepEqual(data, Buffer.from([0x61, 0, 0x62]));
    if (a.name === "log") assert.equal(data.toString(), "logged\n");
  }
  // to a WritableStream
  const chunks: Uint8Array[] = [];
  await c.downloadArtifact(r.run_id, "log", new WritableStream({ write: (ch) => { chunks.push(ch); } }));
  assert.equal(Buffer.concat(chunks).toString(), "logged\n");
  // an unknown artifact: typed 404 and no file left behind
  const none = join(TMP, "none");
  await assert.rejects(c.downloadArtifact(r.run_id, "out-9", none), (e: unknown) =>
    e instanceof NotFoundError && e.error === "not_found");
  assert.equal(existsSync(none), false);
  assert.deepEqual(readdirSync(TMP).filter((n) => n.includes(".part-")), []);
});

test("inbox delivery", async () => {
  const c = await clientP;
  // The program stays until "end" arrives, so the duplicate "go" below
  // reaches a live run (a finished one answers run_finished instead).
  const reader = 'while [ ! -e "$AIRLOCK_INBOX"/*-go.json ]; do sleep 0.02; done;' +
                 ' cat "$AIRLOCK_INBOX"/*-go.json; touch "$AIRLOCK_INBOX_ACKS/go";' +
                 ' while [ ! -e "$AIRLOCK_INBOX"/*-end.json ]; do sleep 0.02; done';
  const id = await c.submit(sh(reader, { limits: { wall_ms: 30_000 } }));
  let state = "";
  for (let i = 0; i < 200 && state === ""; i++) {
    try {
      state = await c.deliver(id, "go", { k: "v" });
    } catch (e) {
      assert.ok(e instanceof ConflictError && e.error === "not_started", String(e));
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  assert.equal(state, "delivered");
  assert.equal(await c.deliver(id, "go", { k: "v" }), "duplicate");
  assert.equal(await c.deliver(id, "end", {}), "delivered");
  const r = await c.wait(id, { timeoutMs: 30_000 });
  assert.deepEqual(r.inbox_acked, ["go"]);
});

test("typed errors, and never the token", async () => {
  const c = await clientP;
  const secret = "not-the-token-" + "z".repeat(40);
  const bad = new Client(URL_, { token: secret });
  assert.ok(!JSON.stringify(bad).includes(secret));
  let err: unknown;
  try {
    await bad.run(sh("echo hi"));
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof UnauthorizedError && err instanceof AirlockError);
  assert.equal(err.status, 401);
  assert.equal(err.error, "unauthorized");
  assert.ok(err.message.length > 0);
  for (const text of [String(err), err.stack ?? "", JSON.stringify(err), JSON.stringify(err.body)])
    assert.ok(!text.includes(secret));
  await assert.rejects(c.run({ ...sh("echo hi"), tenant: "other" } as RunRequest), (e: unknown) =>
    e instanceof BadRequestError && e.status === 400 && e.error === "invalid_request" &&
    e.result?.outcome === "invalid_request");
  await assert.rejects(c.submit(sh("true", { limits: { wall_ms: -1 } })), (e: unknown) =>
    e instanceof BadRequestError && e.error === "invalid_request");
  await assert.rejects(c.run({ language: "cobol", code: "x" }), (e: unknown) =>
    e instanceof ForbiddenError && e.status === 403 && e.error === "denied" &&
    e.message === "gate:language");
  await assert.rejects(c.get("no-such-run"), (e: unknown) =>
    e instanceof NotFoundError && e.status === 404 && e.error === "not_found");
  await assert.rejects(c.listRuns({ limit: 0 }), (e: unknown) =>
    e instanceof BadRequestError && e.error === "invalid_query");
  const tf = join(TMP, "bad-token");
  writeFileSync(tf, secret + "\n");
  await assert.rejects((await Client.create(URL_, { tokenFile: tf })).capabilities(), UnauthorizedError);
});

function parse(...chunks: string[]): [string | null, string, string][] {
  const p = new SSEParser();
  const out: [string | null, string, string][] = [];
  for (const ch of chunks)
    for (const e of p.feed(Buffer.from(ch, "latin1"))) out.push([e.id, e.type, e.data]);
  return out;
}

test("the SSE wire format", () => {
  assert.deepEqual(parse(": keep-alive\n\nevent: a\nid: 7\ndata: x\ndata:y\n\ndata\n\ndata: z\n\n"),
                   [["7", "a", "x\ny"], ["7", "message", ""], ["7", "message", "z"]]);
  const wire = "event: stdout\r\nid: 1\r\ndata: {}\r\n\r\nevent: r\rdata: 2\r\r";
  const whole = parse(wire);
  assert.deepEqual(whole, [["1", "stdout", "{}"], ["1", "r", "2"]]);
  for (let cut = 1; cut < wire.length; cut++)
    assert.deepEqual(parse(wire.slice(0, cut), wire.slice(cut)), whole, `cut ${cut}`);
  assert.deepEqual(parse("event: x\nid: 3\n\nevent: y\ndata: 1"), []);
  assert.deepEqual(parse("id: a\0b\ndata: 1\n\nid\ndata: 2\n\n"),
                   [[null, "message", "1"], ["", "message", "2"]]);
  // a multi-byte character split between chunks stays one character
  const p = new SSEParser();
  const bytes = Buffer.from("data: é\n\n", "utf8");
  assert.deepEqual([...p.feed(bytes.subarray(0, 7)), ...p.feed(bytes.subarray(7))].map((e) => e.data), ["é"]);
});
