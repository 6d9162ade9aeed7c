// A client for airlockd's HTTP API (docs/api.md, docs/openapi.yaml).
//
// TypeScript, no dependencies: the global `fetch` of Node >= 18 (and of
// browsers, except `downloadArtifact` to a path, which needs node:fs).
// A run that ran resolves to its Result whatever its outcome; a refusal
// and every error of the HTTP layer reject with an AirlockError subclass
// carrying the HTTP status, the API's code and message, and for a refusal
// the typed result.  The bearer token is never part of an error.

export type Outcome =
  | "completed" | "failed" | "killed" | "timed_out" | "interrupted"
  | "cancelled" | "invalid_request" | "denied" | "unsupported_language"
  | "unenforceable_limit" | "disabled" | "unavailable" | "conflict";

/** Outcomes of a run that ran (a process existed); the rest are refusals. */
export const RAN_OUTCOMES: readonly Outcome[] = [
  "completed", "failed", "killed", "timed_out", "interrupted", "cancelled",
];

export interface Grant {
  network?: "none" | "loopback" | "host";
  workspace?: "none" | "ro" | "rw";
  secrets?: string[];
  streaming?: boolean;
  toolbelt?: boolean;
  operations?: string[];
}

export interface FileSpec {
  path: string;
  content: string;
  mode?: string;
}

/** The request JSON of docs/contract.md. */
export interface RunRequest {
  language: string;
  code: string;
  code_sha256?: string;
  argv?: string[];
  stdin?: string;
  stdin_b64?: string;
  files?: FileSpec[];
  outputs?: string[];
  purpose?: "script" | "plugin" | "asset";
  limits?: Record<string, number>;
  grant?: Grant;
  env?: Record<string, string>;
  idempotency_key?: string;
  isolation?: "required" | "preferred";
  toolchain?: Record<string, string>;
  name?: string;
  exec?: string[];
  continues?: string;
  build_flags?: string[];
  tests?: TestCaseRequest[];
  compare?: "exact" | "trailing_whitespace";
  image?: string;
}

/** One judged test case of a request (docs/contract.md). */
export interface TestCaseRequest {
  stdin?: string;
  stdin_b64?: string;
  argv?: string[];
  expected_stdout?: string;
  expected_stdout_b64?: string;
  limits?: Record<string, number>;
}

export interface Usage {
  wall_ms: number;
  cpu_user_ms: number;
  cpu_sys_ms: number;
  peak_memory_bytes: number;
}

export interface Isolation {
  process_contained: boolean;
  host_filesystem_restricted: boolean;
  privilege_escalation_blocked: boolean;
  syscalls_restricted: boolean;
  network_restricted: boolean;
}

export interface Output {
  path: string;
  size?: number;
  sha256?: string | null;
  /** The artifact id; null when not collected. */
  artifact?: string | null;
  /** Why the file was not collected; absent when collected. */
  refused?: string;
}

/** A run's result (docs/contract.md), as the JSON says.  Output is in
 * `stdout` when valid UTF-8, else in `stdout_b64`: `resultOutput` gives
 * the bytes either way. */
export interface Result {
  run_id: string;
  outcome: Outcome;
  reason: string | null;
  exit_code: number | null;
  signal: number | null;
  stdout?: string;
  stdout_b64?: string;
  stderr?: string;
  stderr_b64?: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  stdout_bytes: number;
  stderr_bytes: number;
  usage: Usage;
  provider: { id: string; safety_class: string; isolation: Isolation } | null;
  outputs: Output[];
  started_at: string | null;
  finished_at: string | null;
  permanent: boolean;
  inbox_acked?: string[];
  /** The build step of a compiled language. */
  build?: BuildResult;
  /** Judged test cases, in request order. */
  tests?: TestCaseResult[];
  /** Events the program emitted with `airlock-tool emit`. */
  events?: { seq: number; type: string; data: unknown; at_ms: number }[];
  declaration?: { outcome: "completed" | "failed"; reason?: string };
  /** Host operations called, never their payloads. */
  host_calls?: { operation: string; outcome: string; at_ms: number }[];
  workspace?: { kind: string; size_bytes: number; summary: string };
  timeout_ms?: number;
  log_artifact?: string;
  inbox_pending?: string[];
}

export interface BuildResult {
  outcome: Outcome;
  reason: string | null;
  exit_code: number | null;
  signal: number | null;
  stdout?: string;
  stdout_b64?: string;
  stderr?: string;
  stderr_b64?: string;
  stdout_truncated?: boolean;
  stderr_truncated?: boolean;
  wall_ms: number;
  cache_hit: boolean;
}

export interface TestCaseResult {
  outcome: Outcome;
  reason: string | null;
  exit_code: number | null;
  signal: number | null;
  stdout?: string;
  stdout_b64?: string;
  stderr?: string;
  stderr_b64?: string;
  stdout_truncated?: boolean;
  stderr_truncated?: boolean;
  usage: Usage;
  verdict: "accepted" | "wrong_answer" | null;
}

export interface Facts {
  provider: string;
  available: boolean;
  unavailable_reason: string | null;
  safety_class: "disabled" | "trusted_local" | "sandboxed" | "container" | "remote";
  isolation: Isolation;
  languages: { language: string; toolchain: string; version: string; path: string }[];
  limits: string[];
  network: ("none" | "loopback" | "host")[];
  workspace: ("none" | "ro" | "rw")[];
  streaming: boolean;
  mechanism?: Record<string, unknown> | null;
}

export interface Health {
  status: "ok" | "unavailable";
  live: boolean;
  ready: boolean;
  checks: { storage_writable: boolean; provider_available: boolean; accepting_runs: boolean };
  resources?: { open_fds: number; max_fds: number; connections: number; max_connections: number };
  records_pending: number;
}

export interface RunSummary {
  run_id: string;
  state: "running" | "finished";
  created_at: string;
  outcome?: Outcome;
}

export interface RunPage {
  runs: RunSummary[];
  next_after: string | null;
}

/** An artifact of a finished run: a collected output or `log`. */
export interface Artifact {
  name: string;
  path: string | null;
  size: number | null;
  sha256: string | null;
}

export interface Download {
  size: number;
  sha256: string;
}

function b64decode(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function streamBytes(o: Record<string, unknown>, name: string): Uint8Array {
  const text = o[name];
  if (typeof text === "string") return new TextEncoder().encode(text);
  const b64 = o[name + "_b64"];
  if (typeof b64 === "string") return b64decode(b64);
  return new Uint8Array(0);
}

/** A result's stdout or stderr as exact bytes. */
export function resultOutput(r: Result, stream: "stdout" | "stderr"): Uint8Array {
  return streamBytes(r as unknown as Record<string, unknown>, stream);
}

/** A result's stdout or stderr as text (invalid UTF-8 replaced). */
export function resultText(r: Result, stream: "stdout" | "stderr"): string {
  return new TextDecoder().decode(resultOutput(r, stream));
}

export function isRan(r: Result): boolean {
  return RAN_OUTCOMES.includes(r.outcome);
}

// ---- errors ------------------------------------------------------------------

/** Base of every error this client throws.  `status`: the HTTP status
 * (null for a condition found by the client); `error`: the API's code —
 * an HTTP-layer error's `error`, or a refused run's `outcome`; `message`:
 * the API's message or the refusal's `reason`; `result`: a refused run's
 * typed result. */
export class AirlockError extends Error {
  readonly status: number | null;
  readonly error: string;
  readonly result: Result | null;
  readonly body: unknown;
  readonly retryAfter: number | null;

  constructor(status: number | null, error: string, message: string,
              opts: { result?: Result | null; body?: unknown; retryAfter?: number | null } = {}) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.error = error;
    this.result = opts.result ?? null;
    this.body = opts.body ?? null;
    this.retryAfter = opts.retryAfter ?? null;
  }
}

/** 400: invalid_request, invalid_query, invalid_header, invalid_event. */
export class BadRequestError extends AirlockError {}
/** 401: a missing, malformed or unknown token. */
export class UnauthorizedError extends AirlockError {}
/** 403: a gate denied the run. */
export class ForbiddenError extends AirlockError {}
/** 404: unknown path, unknown or another tenant's run, artifact. */
export class NotFoundError extends AirlockError {}
/** 409: run_finished, superseded, inbox_full, not_started, conflict. */
export class ConflictError extends AirlockError {}
/** 413: body_too_large, body_not_allowed. */
export class PayloadTooLargeError extends AirlockError {}
/** 415: a JSON body without Content-Type application/json. */
export class UnsupportedMediaTypeError extends AirlockError {}
/** 422: unsupported_language, unenforceable_limit. */
export class UnprocessableError extends AirlockError {}
/** 429: no slot free now; `retryAfter` says when to try again. */
export class BusyError extends AirlockError {}
/** 503: unavailable, disabled, shutting_down. */
export class UnavailableError extends AirlockError {}
/** An answer this client cannot read. */
export class ProtocolError extends AirlockError {}
/** Asked for what only a finished run has, or a wait ran out of time. */
export class RunNotFinishedError extends AirlockError {}

const BY_STATUS: Record<number, typeof AirlockError> = {
  400: BadRequestError, 401: UnauthorizedError, 403: ForbiddenError,
  404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError, 422: UnprocessableError, 429: BusyError,
  503: UnavailableError,
};

async function errorOf(res: Response): Promise<AirlockError> {
  const Cls = BY_STATUS[res.status] ?? AirlockError;
  const ra = res.headers.get("retry-after");
  const retryAfter = ra !== null && /^\d+$/.test(ra.trim()) ? Number(ra) : null;
  let body: unknown = null;
  try {
    body = JSON.parse(await res.text());
  } catch {
    body = null;
  }
  if (body !== null && typeof body === "object") {
    const o = body as Record<string, unknown>;
    if (typeof o.error === "string")
      return new Cls(res.status, o.error, String(o.message ?? ""), { body, retryAfter });
    if (typeof o.outcome === "string") {
      const r = body as Result;
      return new Cls(res.status, r.outcome, r.reason ?? r.outcome,
                     { result: r, body, retryAfter });
    }
  }
  // An answer of the HTTP library itself (docs/api.md, "Requests refused
  // before routing"): its text is not ours to interpret.
  return new Cls(res.status, `http_${res.status}`,
                 `HTTP ${res.status} without a JSON error body`, { retryAfter });
}

// ---- server-sent events --------------------------------------------------------

/** One server-sent event: `type` the `event:` field (stdout, stderr,
 * dropped, result; "message" when absent), `id` the last event id seen,
 * `data` the data lines joined by newlines. */
export class SSEEvent {
  constructor(readonly type: string, readonly data: string,
              readonly id: string | null) {}

  json(): unknown {
    return JSON.parse(this.data);
  }

  /** An output chunk's exact bytes (stdout/stderr events). */
  bytes(): Uint8Array {
    return streamBytes(this.json() as Record<string, unknown>, "data");
  }

  text(): string {
    return new TextDecoder().decode(this.bytes());
  }

  /** The `result` event's result. */
  result(): Result {
    return this.json() as Result;
  }
}

/** An incremental parser of text/event-stream (the WHATWG HTML
 * server-sent events rules): lines end in CRLF, LF or CR; ':' starts a
 * comment; `field: value` loses one space after the colon; data lines
 * join with newlines; a blank line dispatches (nothing without data);
 * the last event id carries over between events. */
export class SSEParser {
  private buf: Uint8Array = new Uint8Array(0);
  private pendingCR = false;
  private type = "";
  private data: string[] = [];
  private hasData = false;
  private readonly decoder = new TextDecoder();
  lastId: string | null = null;

  feed(chunk: Uint8Array): SSEEvent[] {
    const out: SSEEvent[] = [];
    let start = 0;
    if (this.pendingCR && chunk.length > 0 && chunk[0] === 0x0a) start = 1;
    if (chunk.length > 0) this.pendingCR = false;
    const merged = new Uint8Array(this.buf.length + chunk.length - start);
    merged.set(this.buf, 0);
    merged.set(chunk.subarray(start), this.buf.length);
    let pos = 0;
    for (let i = 0; i < merged.length; i++) {
      const c = merged[i];
      if (c !== 0x0a && c !== 0x0d) continue;
      const ev = this.line(this.decoder.decode(merged.subarray(pos, i)));
      if (ev !== null) out.push(ev);
      if (c === 0x0d) {
        if (i + 1 < merged.length) {
          if (merged[i + 1] === 0x0a) i++;
        } else {
          this.pendingCR = true;
        }
      }
      pos = i + 1;
    }
    this.buf = merged.slice(pos);
    return out;
  }

  private line(line: string): SSEEvent | null {
    if (line === "") {
      if (!this.hasData) {
        this.type = "";
        return null;
      }
      const ev = new SSEEvent(this.type || "message", this.data.join("\n"), this.lastId);
      this.type = "";
      this.data = [];
      this.hasData = false;
      return ev;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") this.type = value;
    else if (name === "data") {
      this.data.push(value);
      this.hasData = true;
    } else if (name === "id" && !value.includes("\0")) this.lastId = value;
    // `retry` and unknown fields: nothing to do for a non-reconnecting reader.
    return null;
  }
}

// ---- the client ----------------------------------------------------------------

export interface ClientOptions {
  /** The bearer token; without one only health() succeeds. */
  token?: string;
  /** A file holding the token (Node only; read once, whitespace trimmed). */
  tokenFile?: string;
  /** Milliseconds for an ordinary call (default 60 000).  run() and
   * interrupt({wait: true}) wait as long as the run takes unless given
   * their own timeout; events() is not bounded by it. */
  timeoutMs?: number;
}

type Query = Record<string, string>;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A client of one airlockd.  `Client.create` also reads a token file. */
export class Client {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  #token: string | null;

  constructor(baseUrl: string, opts: ClientOptions = {}) {
    const u = new URL(baseUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:")
      throw new TypeError("baseUrl must be http(s)://host[:port][/prefix]");
    if (opts.tokenFile !== undefined)
      throw new TypeError("tokenFile needs Client.create (reading is async)");
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.#token = Client.checkToken(opts.token);
  }

  /** Like the constructor, and reads `tokenFile` when given. */
  static async create(baseUrl: string, opts: ClientOptions = {}): Promise<Client> {
    const { tokenFile, ...rest } = opts;
    if (tokenFile !== undefined) {
      if (rest.token !== undefined) throw new TypeError("give token or tokenFile, not both");
      const fs = await import("node:fs/promises");
      rest.token = (await fs.readFile(tokenFile, "utf8")).trim();
    }
    return new Client(baseUrl, rest);
  }

  private static checkToken(token: string | undefined): string | null {
    if (token === undefined) return null;
    if (token === "" || /[\r\n\0]/.test(token))
      throw new TypeError("the token is empty or not a single line");
    return token;
  }

  toJSON(): Record<string, unknown> {
    return { baseUrl: this.baseUrl, token: this.#token === null ? null : "<set>" };
  }

  private url(path: string, query?: Query): string {
    const q = query && Object.keys(query).length > 0
      ? "?" + new URLSearchParams(query).toString() : "";
    return this.baseUrl + path + q;
  }

  private static id(s: string): string {
    if (!s) throw new TypeError("empty id");
    return encodeURIComponent(s);
  }

  private async send(method: string, path: string,
                     opts: { query?: Query; body?: unknown; headers?: Record<string, string>;
                             timeoutMs?: number | null; signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
    if (this.#token !== null) headers.Authorization = `Bearer ${this.#token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["Content-Type"] = "application/json";
    }
    const t = opts.timeoutMs === undefined ? this.timeoutMs : opts.timeoutMs;
    const signals: AbortSignal[] = [];
    if (t !== null) signals.push(AbortSignal.timeout(t));
    if (opts.signal) signals.push(opts.signal);
    const signal = signals.length === 0 ? undefined
      : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    return fetch(this.url(path, opts.query), { method, headers, body, signal });
  }

  private async json<T>(res: Response, ok: number[] = [200]): Promise<T> {
    if (!ok.includes(res.status)) throw await errorOf(res);
    const text = await res.text();
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw new ProtocolError(res.status, "not_json", "the answer is not JSON");
    }
    if (v === null || typeof v !== "object" || Array.isArray(v))
      throw new ProtocolError(res.status, "not_json", "the answer is not a JSON object");
    return v as T;
  }

  private static checkRequest(req: RunRequest): RunRequest {
    if (typeof req?.language !== "string" || typeof req?.code !== "string")
      throw new TypeError("a request needs language and code");
    return req;
  }

  /** POST /v1/runs and wait for the result: the result of a run that ran
   * whatever its outcome; rejects for a refusal.  timeoutMs: how long to
   * wait (default: as long as the run takes; note that Node's fetch gives
   * up on an answer's headers after 300 s — for longer runs use submit()
   * and wait()). */
  async run(req: RunRequest, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Result> {
    const res = await this.send("POST", "/v1/runs", {
      body: Client.checkRequest(req), timeoutMs: opts.timeoutMs ?? null, signal: opts.signal,
    });
    return this.json<Result>(res);
  }

  /** POST /v1/runs?wait=false: the run id once admitted; rejects for a refusal. */
  async submit(req: RunRequest): Promise<string> {
    const res = await this.send("POST", "/v1/runs", {
      query: { wait: "false" }, body: Client.checkRequest(req),
    });
    const body = await this.json<{ run_id?: unknown }>(res, [200, 202]);
    if (typeof body.run_id !== "string" || body.run_id === "")
      throw new ProtocolError(res.status, "no_run_id", "the answer has no run_id");
    return body.run_id;
  }

  /** GET /v1/runs/{id}: the result when finished, null while running. */
  async get(runId: string): Promise<Result | null> {
    const res = await this.send("GET", `/v1/runs/${Client.id(runId)}`);
    const body = await this.json<Record<string, unknown>>(res);
    return "outcome" in body ? (body as unknown as Result) : null;
  }

  /** The run's result once it has one: follows its event stream to the
   * `result` event; if the stream ends without one (a restarting daemon),
   * asks again, for at most timeoutMs (default: no bound). */
  async wait(runId: string, opts: { timeoutMs?: number } = {}): Promise<Result> {
    const deadline = opts.timeoutMs === undefined ? null : Date.now() + opts.timeoutMs;
    let pause = 50;
    for (;;) {
      for await (const ev of this.events(runId)) {
        if (ev.type === "result") return ev.result();
      }
      const r = await this.get(runId);
      if (r !== null) return r;
      if (deadline !== null && Date.now() >= deadline)
        throw new RunNotFinishedError(null, "timeout", "the run did not finish in time");
      await sleep(pause);
      pause = Math.min(pause * 2, 2000);
    }
  }

  /** GET /v1/runs/{id}/events: the run's server-sent events in order,
   * ending after the `result` event or when the stream ends.  lastEventId
   * resumes after that event; past the result of a finished run the
   * server answers 204 and nothing is yielded.  Output events come only
   * for runs whose grant has streaming.  Breaking out of the loop closes
   * the connection. */
  async *events(runId: string, opts: { lastEventId?: string | number; signal?: AbortSignal } = {}):
      AsyncGenerator<SSEEvent, void, undefined> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (opts.lastEventId !== undefined) headers["Last-Event-ID"] = String(opts.lastEventId);
    const ctl = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, ctl.signal]) : ctl.signal;
    const res = await this.send("GET", `/v1/runs/${Client.id(runId)}/events`,
                                { headers, timeoutMs: null, signal });
    if (res.status === 204) return;
    if (res.status !== 200) throw await errorOf(res);
    if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
      ctl.abort();
      throw new ProtocolError(res.status, "not_event_stream", "the answer is not text/event-stream");
    }
    if (res.body === null) return;
    const reader = res.body.getReader();
    const parser = new SSEParser();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        for (const ev of parser.feed(value)) {
          yield ev;
          if (ev.type === "result") return;
        }
      }
    } finally {
      ctl.abort();
      reader.releaseLock();
    }
  }

  /** POST /v1/runs/{id}/interrupt.  Without wait: TERM the run's tree,
   * resolve to null once the service took it (202).  wait: true (a stop):
   * the result once the whole tree is verified gone.  A finished run
   * rejects with ConflictError `run_finished`. */
  async interrupt(runId: string, opts: { wait?: boolean; timeoutMs?: number } = {}): Promise<Result | null> {
    const path = `/v1/runs/${Client.id(runId)}/interrupt`;
    if (!opts.wait) {
      await this.json(await this.send("POST", path), [202]);
      return null;
    }
    const res = await this.send("POST", path, { query: { wait: "true" }, timeoutMs: opts.timeoutMs ?? null });
    return this.json<Result>(res);
  }

  /** POST /v1/runs/{id}/inbox: "delivered", or "duplicate" for an id
   * delivered before. */
  async deliver(runId: string, eventId: string, event: Record<string, unknown>): Promise<string> {
    const res = await this.send("POST", `/v1/runs/${Client.id(runId)}/inbox`,
                                { body: { id: eventId, event } });
    const body = await this.json<{ state?: unknown }>(res, [200, 202]);
    return String(body.state ?? "");
  }

  /** GET /v1/runs: one page of the tenant's recent runs, newest first. */
  async listRuns(opts: { limit?: number; after?: string } = {}): Promise<RunPage> {
    const query: Query = { limit: String(opts.limit ?? 50) };
    if (opts.after !== undefined) query.after = opts.after;
    return this.json<RunPage>(await this.send("GET", "/v1/runs", { query }));
  }

  /** A finished run's artifacts: each collected output and `log`.  Takes a
   * run id (one GET) or a result; a run still going rejects with
   * RunNotFinishedError. */
  async artifacts(run: string | Result): Promise<Artifact[]> {
    const r = typeof run === "string" ? await this.get(run) : run;
    if (r === null)
      throw new RunNotFinishedError(null, "run_not_finished", "artifacts exist once the run finished");
    const arts: Artifact[] = [];
    for (const o of r.outputs ?? []) {
      if (o.artifact)
        arts.push({ name: o.artifact, path: o.path, size: o.size ?? null, sha256: o.sha256 ?? null });
    }
    arts.push({ name: "log", path: null, size: null, sha256: null });
    return arts;
  }

  /** GET /v1/runs/{id}/artifacts/{name}, streamed to `dest`: a file path
   * (Node: written to a temporary file beside it, renamed into place when
   * complete) or a WritableStream.  Resolves to its size and SHA-256. */
  async downloadArtifact(runId: string, name: string,
                         dest: string | WritableStream<Uint8Array>): Promise<Download> {
    const res = await this.send("GET", `/v1/runs/${Client.id(runId)}/artifacts/${Client.id(name)}`,
                                { headers: { Accept: "application/octet-stream" }, timeoutMs: null });
    if (res.status !== 200) throw await errorOf(res);
    if (res.body === null) throw new ProtocolError(res.status, "no_body", "the answer has no body");
    const { createHash } = await import("node:crypto");
    const hash = createHash("sha256");
    let size = 0;
    const reader = res.body.getReader();
    if (typeof dest !== "string") {
      const writer = dest.getWriter();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          hash.update(value);
          size += value.length;
          await writer.write(value);
        }
        await writer.close();
      } finally {
        writer.releaseLock();
      }
      return { size, sha256: hash.digest("hex") };
    }
    const fs = await import("node:fs/promises");
    const tmp = `${dest}.part-${process.pid}`;
    const fh = await fs.open(tmp, "w", 0o644);
    try {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          hash.update(value);
          size += value.length;
          await fh.write(value);
        }
      } finally {
        await fh.close();
      }
      await fs.rename(tmp, dest);
    } catch (e) {
      await fs.rm(tmp, { force: true });
      throw e;
    }
    return { size, sha256: hash.digest("hex") };
  }

  /** GET /v1/capabilities: each configured provider's facts. */
  async capabilities(): Promise<Facts[]> {
    const body = await this.json<{ providers: Facts[] }>(await this.send("GET", "/v1/capabilities"));
    return body.providers ?? [];
  }

  /** GET /v1/health (no token needed): the health document, ready (200)
   * or not (503); check `ready`. */
  async health(): Promise<Health> {
    return this.json<Health>(await this.send("GET", "/v1/health"), [200, 503]);
  }
}
