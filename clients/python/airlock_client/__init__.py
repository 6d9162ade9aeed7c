"""A client for airlockd's HTTP API (docs/api.md, docs/openapi.yaml).

Standard library only, synchronous, typed.  One `Client` per service::

    from airlock_client import Client

    c = Client("http://127.0.0.1:7878", token_file="/var/lib/airlock/token")
    result = c.run(language="python", code="print(6 * 7)")
    print(result.outcome, result.stdout)

A run that ran returns its `Result` whatever its outcome (completed,
failed, timed_out...); a refusal (no process existed) and every error of
the HTTP layer raise an `AirlockError` subclass that carries the HTTP
status, the API's code and message, and for a refusal the typed result.
The bearer token is never part of an error, a repr or a log line.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import (IO, Any, Dict, Iterator, List, Literal, Mapping,
                    Optional, Sequence, Tuple, Type, TypedDict, Union)

__all__ = [
    "Client", "RunRequest", "Grant", "FileSpec", "Result", "Usage", "Output",
    "Event", "Artifact", "Download", "RunSummary", "RunPage", "SSEParser",
    "Build", "TestCase", "ToolEvent", "HostCall", "Workspace",
    "AirlockError", "BadRequestError", "UnauthorizedError", "ForbiddenError",
    "NotFoundError", "ConflictError", "PayloadTooLargeError",
    "UnsupportedMediaTypeError", "UnprocessableError", "BusyError",
    "UnavailableError", "ProtocolError", "RunNotFinishedError",
]

__version__ = "0.1.0"

Outcome = Literal["completed", "failed", "killed", "timed_out",
                  "interrupted", "cancelled", "invalid_request", "denied",
                  "unsupported_language", "unenforceable_limit", "disabled",
                  "unavailable", "conflict"]

# Outcomes of a run that ran (a process existed); the rest are refusals.
RAN = frozenset({"completed", "failed", "killed", "timed_out",
                 "interrupted", "cancelled"})


# ---- request ---------------------------------------------------------------

class Grant(TypedDict, total=False):
    network: Literal["none", "loopback", "host"]
    workspace: Literal["none", "ro", "rw"]
    secrets: List[str]
    streaming: bool
    toolbelt: bool
    operations: List[str]


class _FileSpecRequired(TypedDict):
    path: str
    content: str


class FileSpec(_FileSpecRequired, total=False):
    mode: str


class _RunRequestRequired(TypedDict):
    language: str
    code: str


class RunRequest(_RunRequestRequired, total=False):
    """The request JSON of docs/contract.md."""
    code_sha256: str
    argv: List[str]
    stdin: str
    stdin_b64: str
    files: List[FileSpec]
    outputs: List[str]
    purpose: Literal["script", "plugin", "asset"]
    limits: Dict[str, int]
    grant: Grant
    env: Dict[str, str]
    idempotency_key: str
    isolation: Literal["required", "preferred"]
    toolchain: Dict[str, str]
    name: str
    exec: List[str]
    continues: str
    build_flags: List[str]
    tests: List[Dict[str, Any]]
    compare: Literal["exact", "trailing_whitespace"]
    image: str


# ---- result ----------------------------------------------------------------

@dataclass(frozen=True)
class Usage:
    wall_ms: int
    cpu_user_ms: int
    cpu_sys_ms: int
    peak_memory_bytes: int


@dataclass(frozen=True)
class Output:
    """One declared output: collected (`artifact` names it) or refused."""
    path: str
    size: Optional[int]
    sha256: Optional[str]
    artifact: Optional[str]
    refused: Optional[str]


@dataclass(frozen=True)
class Build:
    """The build step of a compiled language (docs/languages.md)."""
    outcome: str
    reason: Optional[str]
    exit_code: Optional[int]
    signal: Optional[int]
    stdout: str
    stderr: str
    wall_ms: int
    cache_hit: bool

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Build":
        return cls(str(raw.get("outcome", "")), raw.get("reason"),
                   raw.get("exit_code"), raw.get("signal"),
                   _stream(raw, "stdout").decode("utf-8", "replace"),
                   _stream(raw, "stderr").decode("utf-8", "replace"),
                   int(raw.get("wall_ms", 0)),
                   bool(raw.get("cache_hit", False)))


@dataclass(frozen=True)
class TestCase:
    """One judged test case's result; `verdict` is `accepted`,
    `wrong_answer`, or None without an expected output."""
    outcome: str
    reason: Optional[str]
    exit_code: Optional[int]
    signal: Optional[int]
    stdout: str
    stderr: str
    usage: Usage
    verdict: Optional[str]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "TestCase":
        return cls(str(raw.get("outcome", "")), raw.get("reason"),
                   raw.get("exit_code"), raw.get("signal"),
                   _stream(raw, "stdout").decode("utf-8", "replace"),
                   _stream(raw, "stderr").decode("utf-8", "replace"),
                   _usage(raw.get("usage") or {}), raw.get("verdict"))


@dataclass(frozen=True)
class ToolEvent:
    """An event the program emitted with `airlock-tool emit`."""
    seq: int
    type: str
    data: Any
    at_ms: int


@dataclass(frozen=True)
class HostCall:
    """A host operation the program called (never its payload)."""
    operation: str
    outcome: str
    at_ms: int


@dataclass(frozen=True)
class Workspace:
    """What the run's workspace was: `kind`, its bound, one line."""
    kind: str
    size_bytes: int
    summary: str


def _usage(u: Mapping[str, Any]) -> Usage:
    return Usage(int(u.get("wall_ms", 0)), int(u.get("cpu_user_ms", 0)),
                 int(u.get("cpu_sys_ms", 0)),
                 int(u.get("peak_memory_bytes", 0)))


def _stream(raw: Mapping[str, Any], name: str) -> bytes:
    if name in raw and raw[name] is not None:
        return str(raw[name]).encode("utf-8")
    if raw.get(name + "_b64") is not None:
        return base64.b64decode(raw[name + "_b64"])
    return b""


@dataclass(frozen=True)
class Result:
    """A run's result (docs/contract.md).  `stdout`/`stderr` are text
    (invalid UTF-8 replaced); `stdout_data`/`stderr_data` the exact bytes;
    `raw` the JSON as received."""
    run_id: str
    outcome: str
    reason: Optional[str]
    exit_code: Optional[int]
    signal: Optional[int]
    stdout: str
    stderr: str
    stdout_data: bytes
    stderr_data: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_bytes: int
    stderr_bytes: int
    usage: Usage
    provider: Optional[Dict[str, Any]]
    outputs: List[Output]
    started_at: Optional[str]
    finished_at: Optional[str]
    permanent: bool
    inbox_acked: List[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)
    build: Optional[Build] = None
    tests: List[TestCase] = field(default_factory=list)
    events: List[ToolEvent] = field(default_factory=list)
    declaration: Optional[Dict[str, str]] = None
    host_calls: List[HostCall] = field(default_factory=list)
    workspace: Optional[Workspace] = None
    timeout_ms: Optional[int] = None
    log_artifact: Optional[str] = None
    inbox_pending: List[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        """True when a process existed (not a refusal)."""
        return self.outcome in RAN

    @property
    def ok(self) -> bool:
        """Completed with exit code 0."""
        return self.outcome == "completed" and self.exit_code == 0

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Result":
        out = _stream(raw, "stdout")
        err = _stream(raw, "stderr")
        return cls(
            run_id=str(raw.get("run_id", "")),
            outcome=str(raw.get("outcome", "")),
            reason=raw.get("reason"),
            exit_code=raw.get("exit_code"),
            signal=raw.get("signal"),
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            stdout_data=out,
            stderr_data=err,
            stdout_truncated=bool(raw.get("stdout_truncated", False)),
            stderr_truncated=bool(raw.get("stderr_truncated", False)),
            stdout_bytes=int(raw.get("stdout_bytes", len(out))),
            stderr_bytes=int(raw.get("stderr_bytes", len(err))),
            usage=_usage(raw.get("usage") or {}),
            provider=raw.get("provider"),
            outputs=[Output(str(o.get("path", "")), o.get("size"),
                            o.get("sha256"), o.get("artifact"),
                            o.get("refused"))
                     for o in raw.get("outputs") or []],
            started_at=raw.get("started_at"),
            finished_at=raw.get("finished_at"),
            permanent=bool(raw.get("permanent", False)),
            inbox_acked=list(raw.get("inbox_acked") or []),
            raw=dict(raw),
            build=Build.from_json(raw["build"]) if raw.get("build") else None,
            tests=[TestCase.from_json(t) for t in raw.get("tests") or []],
            events=[ToolEvent(int(e.get("seq", 0)), str(e.get("type", "")),
                              e.get("data"), int(e.get("at_ms", 0)))
                    for e in raw.get("events") or []],
            declaration=raw.get("declaration"),
            host_calls=[HostCall(str(c.get("operation", "")),
                                 str(c.get("outcome", "")),
                                 int(c.get("at_ms", 0)))
                        for c in raw.get("host_calls") or []],
            workspace=(Workspace(str(raw["workspace"].get("kind", "")),
                                 int(raw["workspace"].get("size_bytes", 0)),
                                 str(raw["workspace"].get("summary", "")))
                       if raw.get("workspace") else None),
            timeout_ms=raw.get("timeout_ms"),
            log_artifact=raw.get("log_artifact"),
            inbox_pending=list(raw.get("inbox_pending") or []),
        )


@dataclass(frozen=True)
class Event:
    """One server-sent event.  `type` is the `event:` field (`stdout`,
    `stderr`, `dropped`, `result`; `message` when absent), `id` the last
    event id seen, `data` the data lines joined by newlines."""
    type: str
    data: str
    id: Optional[str] = None

    def json(self) -> Any:
        return json.loads(self.data)

    @property
    def bytes(self) -> bytes:
        """An output chunk's exact bytes (stdout/stderr events)."""
        return _stream(self.json(), "data")

    @property
    def text(self) -> str:
        return self.bytes.decode("utf-8", "replace")

    def result(self) -> Result:
        """The `result` event's result."""
        return Result.from_json(self.json())


@dataclass(frozen=True)
class Artifact:
    """An artifact of a finished run: a collected output or `log`."""
    name: str
    path: Optional[str]
    size: Optional[int]
    sha256: Optional[str]


@dataclass(frozen=True)
class Download:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    state: str
    created_at: str
    outcome: Optional[str]


@dataclass(frozen=True)
class RunPage:
    runs: List[RunSummary]
    next_after: Optional[str]


# ---- errors ----------------------------------------------------------------

class AirlockError(Exception):
    """Base of every error this client raises.

    status: the HTTP status (None for a condition found by the client);
    error: the API's code — the `error` of an HTTP-layer error, or the
    `outcome` of a refused run (`invalid_request`, `denied`, ...);
    message: the API's message, or a refusal's `reason`;
    result: the typed result of a refused run, else None;
    body: the JSON body as received (None when it was not JSON)."""

    def __init__(self, status: Optional[int], error: str, message: str,
                 result: Optional[Result] = None,
                 body: Optional[Dict[str, Any]] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__("%s %s: %s" % (status if status is not None else "-",
                                        error, message))
        self.status = status
        self.error = error
        self.message = message
        self.result = result
        self.body = body
        self.retry_after = retry_after


class BadRequestError(AirlockError):
    """400: invalid_request, invalid_query, invalid_header, invalid_event."""


class UnauthorizedError(AirlockError):
    """401: a missing, malformed or unknown token."""


class ForbiddenError(AirlockError):
    """403: a gate denied the run (`denied`)."""


class NotFoundError(AirlockError):
    """404: unknown path, unknown or another tenant's run, artifact."""


class ConflictError(AirlockError):
    """409: run_finished, superseded, inbox_full, not_started, conflict."""


class PayloadTooLargeError(AirlockError):
    """413: body_too_large, body_not_allowed."""


class UnsupportedMediaTypeError(AirlockError):
    """415: a JSON body without Content-Type application/json."""


class UnprocessableError(AirlockError):
    """422: unsupported_language, unenforceable_limit."""


class BusyError(AirlockError):
    """429: no slot free now; `retry_after` says when to try again."""


class UnavailableError(AirlockError):
    """503: unavailable, disabled, shutting_down."""


class ProtocolError(AirlockError):
    """An answer this client cannot read (not JSON where JSON is due,
    an unexpected status, a stream cut short)."""


class RunNotFinishedError(AirlockError):
    """Asked for what only a finished run has (its artifacts)."""


_BY_STATUS: Dict[int, Type[AirlockError]] = {
    400: BadRequestError, 401: UnauthorizedError, 403: ForbiddenError,
    404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError, 422: UnprocessableError,
    429: BusyError, 503: UnavailableError,
}


def _error(status: int, headers: Mapping[str, str], data: bytes) -> AirlockError:
    cls = _BY_STATUS.get(status, AirlockError)
    retry: Optional[float] = None
    ra = headers.get("retry-after")
    if ra is not None and ra.strip().isdigit():
        retry = float(ra.strip())
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return cls(status, body["error"], str(body.get("message", "")),
                   body=body, retry_after=retry)
    if isinstance(body, dict) and isinstance(body.get("outcome"), str):
        res = Result.from_json(body)
        return cls(status, res.outcome, res.reason or res.outcome,
                   result=res, body=body, retry_after=retry)
    # An answer of the HTTP library itself (docs/api.md, "Requests refused
    # before routing"): its text is not ours to interpret.
    return cls(status, "http_%d" % status,
               "HTTP %d without a JSON error body" % status,
               retry_after=retry)


# ---- server-sent events ------------------------------------------------------

class SSEParser:
    """An incremental parser of the text/event-stream format (the WHATWG
    HTML "server-sent events" rules): lines end in CRLF, LF or CR; a line
    starting with ':' is a comment; `field: value` loses one space after
    the colon; a field without a colon has an empty value; data lines
    join with newlines; a blank line dispatches the event (none when no
    data line came); the last event id carries over between events."""

    def __init__(self) -> None:
        self._buf = b""
        self._cr = False
        self._type = ""
        self._data: List[str] = []
        self._has_data = False
        self.last_id: Optional[str] = None

    def feed(self, chunk: bytes) -> List[Event]:
        out: List[Event] = []
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split between chunks
        self._cr = False
        self._buf += chunk
        while True:
            i_n = self._buf.find(b"\n")
            i_r = self._buf.find(b"\r")
            if i_n < 0 and i_r < 0:
                break
            if i_r >= 0 and (i_n < 0 or i_r < i_n):
                line, rest = self._buf[:i_r], self._buf[i_r + 1:]
                if rest.startswith(b"\n"):
                    rest = rest[1:]
                elif not rest:
                    self._cr = True
            else:
                line, rest = self._buf[:i_n], self._buf[i_n + 1:]
            self._buf = rest
            ev = self._line(line.decode("utf-8", "replace"))
            if ev is not None:
                out.append(ev)
        return out

    def _line(self, line: str) -> Optional[Event]:
        if line == "":
            if not self._has_data:
                self._type = ""
                return None
            ev = Event(self._type or "message", "\n".join(self._data),
                       self.last_id)
            self._type, self._data, self._has_data = "", [], False
            return ev
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        # `retry` and unknown fields: nothing to do for a non-reconnecting
        # reader.
        return None


# ---- the client --------------------------------------------------------------

_Body = Optional[Union[bytes, Dict[str, Any]]]


class Client:
    """A synchronous client of one airlockd.

    base_url: `http://host:port` (https works too; a path prefix is kept).
    token / token_file: the bearer token, or a file holding it (read once,
    whitespace stripped); neither: only `health()` will succeed.
    timeout: seconds for connecting and for each read of an ordinary call.
    """

    def __init__(self, base_url: str, token: Optional[str] = None,
                 token_file: Optional[Union[str, "os.PathLike[str]"]] = None,
                 timeout: float = 60.0) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url must be http(s)://host[:port][/prefix]")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token is not None and (not token or any(
                c in token for c in "\r\n\0")):
            raise ValueError("the token is empty or not a single line")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self._token = token
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def __repr__(self) -> str:
        return "Client(%r, token=%s)" % (
            self.base_url, "<set>" if self._token else None)

    # ---- plumbing ----
    def _connect(self) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port,
                                               timeout=self.timeout)
        return http.client.HTTPConnection(self._host, self._port,
                                          timeout=self.timeout)

    def _open(self, method: str, path: str, query: Optional[Dict[str, str]] = None,
              body: _Body = None, headers: Optional[Dict[str, str]] = None,
              read_timeout: Union[float, None, str] = "default",
              ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        url = self._prefix + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        h: Dict[str, str] = {"Accept": "application/json"}
        if self._token is not None:
            h["Authorization"] = "Bearer " + self._token
        data: Optional[bytes] = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(
                body, separators=(",", ":")).encode("utf-8")
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        conn = self._connect()
        try:
            conn.request(method, url, body=data, headers=h)
            if read_timeout != "default" and conn.sock is not None:
                conn.sock.settimeout(read_timeout)  # type: ignore[arg-type]
            resp = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        return conn, resp

    def _call(self, method: str, path: str,
              query: Optional[Dict[str, str]] = None, body: _Body = None,
              ok: Sequence[int] = (200,),
              read_timeout: Union[float, None, str] = "default",
              ) -> Tuple[int, Dict[str, Any]]:
        conn, resp = self._open(method, path, query, body,
                                read_timeout=read_timeout)
        try:
            data = resp.read()
            headers = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        if resp.status not in ok:
            raise _error(resp.status, headers, data)
        try:
            parsed = json.loads(data)
        except ValueError:
            raise ProtocolError(resp.status, "not_json",
                                "the answer is not JSON") from None
        if not isinstance(parsed, dict):
            raise ProtocolError(resp.status, "not_json",
                                "the answer is not a JSON object")
        return resp.status, parsed

    @staticmethod
    def _id(run_id: str) -> str:
        if not run_id:
            raise ValueError("empty run id")
        return urllib.parse.quote(run_id, safe="")

    @staticmethod
    def _request(request: Optional[Mapping[str, Any]],
                 kwargs: Mapping[str, Any]) -> Dict[str, Any]:
        if request is not None and kwargs:
            raise TypeError("pass a request or keyword fields, not both")
        req = dict(request if request is not None else kwargs)
        if "language" not in req or "code" not in req:
            raise TypeError("a request needs language and code")
        return req

    # ---- runs ----
    def run(self, request: Optional[RunRequest] = None, *,
            timeout: Optional[float] = None, **fields: Any) -> Result:
        """POST /v1/runs and wait for the result.  The request is a
        `RunRequest` dict or its fields as keywords.  Returns the result of
        a run that ran, whatever its outcome; raises for a refusal.
        timeout: seconds to wait for the answer; None (default) waits as
        long as the run takes (its wall limit bounds it)."""
        req = self._request(request, fields)
        _, body = self._call("POST", "/v1/runs", body=req,
                             read_timeout=timeout)
        return Result.from_json(body)

    def submit(self, request: Optional[RunRequest] = None,
               **fields: Any) -> str:
        """POST /v1/runs?wait=false: start the run, return its id once it
        is admitted; raises for a refusal."""
        req = self._request(request, fields)
        _, body = self._call("POST", "/v1/runs", {"wait": "false"}, req,
                             ok=(200, 202))
        rid = body.get("run_id")
        if not isinstance(rid, str) or not rid:
            raise ProtocolError(202, "no_run_id", "the answer has no run_id")
        return rid

    def get(self, run_id: str) -> Optional[Result]:
        """GET /v1/runs/{id}: the result when finished, None while running."""
        _, body = self._call("GET", "/v1/runs/" + self._id(run_id))
        if "outcome" in body:
            return Result.from_json(body)
        return None

    def wait(self, run_id: str, timeout: Optional[float] = None) -> Result:
        """The run's result once it has one: follows its event stream to
        the `result` event; if the stream ends without one (a restarting
        daemon), asks again, for at most `timeout` seconds (None: no bound)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.05
        while True:
            for ev in self.events(run_id):
                if ev.type == "result":
                    return ev.result()
            res = self.get(run_id)
            if res is not None:
                return res
            if deadline is not None and time.monotonic() >= deadline:
                raise RunNotFinishedError(None, "timeout",
                                          "the run did not finish in time")
            time.sleep(pause)
            pause = min(pause * 2, 2.0)

    def events(self, run_id: str,
               last_event_id: Optional[Union[int, str]] = None,
               ) -> Iterator[Event]:
        """GET /v1/runs/{id}/events: the run's server-sent events, in
        order, ending after the `result` event (or when the stream ends).
        last_event_id resumes after that event; past the result of a
        finished run the server answers 204 and nothing is yielded.
        Output events come only for runs whose grant has streaming."""
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        # Keep-alives come every 15 s of silence; wait for at least two.
        conn, resp = self._open("GET", "/v1/runs/%s/events" % self._id(run_id),
                                headers=headers,
                                read_timeout=max(self.timeout, 35.0))
        try:
            if resp.status == 204:
                return
            if resp.status != 200:
                hdrs = {k.lower(): v for k, v in resp.getheaders()}
                raise _error(resp.status, hdrs, resp.read())
            ctype = resp.getheader("Content-Type", "")
            if not ctype.startswith("text/event-stream"):
                raise ProtocolError(resp.status, "not_event_stream",
                                    "the answer is not text/event-stream")
            parser = SSEParser()
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    return
                for ev in parser.feed(chunk):
                    yield ev
                    if ev.type == "result":
                        return
        finally:
            conn.close()

    def interrupt(self, run_id: str, wait: bool = False,
                  timeout: Optional[float] = None) -> Optional[Result]:
        """POST /v1/runs/{id}/interrupt.  wait=False: TERM the run's tree
        and return None once the service has taken it (202).  wait=True
        (a stop): return the result once the whole tree is verified gone.
        A finished run raises ConflictError `run_finished`."""
        if not wait:
            self._call("POST", "/v1/runs/%s/interrupt" % self._id(run_id),
                       ok=(202,))
            return None
        _, body = self._call("POST", "/v1/runs/%s/interrupt" % self._id(run_id),
                             {"wait": "true"},
                             read_timeout=timeout)
        return Result.from_json(body)

    def deliver(self, run_id: str, event_id: str,
                event: Mapping[str, Any]) -> str:
        """POST /v1/runs/{id}/inbox: deliver an event to the running
        program; returns `delivered`, or `duplicate` for an id delivered
        before."""
        _, body = self._call("POST", "/v1/runs/%s/inbox" % self._id(run_id),
                             body={"id": event_id, "event": dict(event)},
                             ok=(200, 202))
        return str(body.get("state", ""))

    def list_runs(self, limit: int = 50, after: Optional[str] = None) -> RunPage:
        """GET /v1/runs: one page of the tenant's recent runs, newest
        first; pass the page's `next_after` as `after` for the next."""
        q = {"limit": str(limit)}
        if after is not None:
            q["after"] = after
        _, body = self._call("GET", "/v1/runs", q)
        return RunPage([RunSummary(str(r.get("run_id")), str(r.get("state")),
                                   str(r.get("created_at")), r.get("outcome"))
                        for r in body.get("runs") or []],
                       body.get("next_after"))

    # ---- artifacts ----
    def artifacts(self, run: Union[str, Result]) -> List[Artifact]:
        """A finished run's artifacts: each collected output (named as in
        the result's `outputs`) and `log`.  Takes a run id (one GET) or a
        result.  A run still going raises RunNotFinishedError."""
        res = run if isinstance(run, Result) else self.get(run)
        if res is None:
            raise RunNotFinishedError(None, "run_not_finished",
                                      "artifacts exist once the run finished")
        arts = [Artifact(o.artifact, o.path, o.size, o.sha256)
                for o in res.outputs if o.artifact]
        arts.append(Artifact("log", None, None, None))
        return arts

    def download_artifact(self, run_id: str, name: str,
                          dest: Union[str, "os.PathLike[str]", IO[bytes]],
                          ) -> Download:
        """GET /v1/runs/{id}/artifacts/{name}, streamed to `dest` (a path,
        written through a temporary file beside it and renamed into place
        when complete, or a binary file object).  Returns its size and
        SHA-256."""
        conn, resp = self._open(
            "GET", "/v1/runs/%s/artifacts/%s" % (self._id(run_id),
                                                 self._id(name)),
            headers={"Accept": "application/octet-stream"})
        try:
            if resp.status != 200:
                hdrs = {k.lower(): v for k, v in resp.getheaders()}
                raise _error(resp.status, hdrs, resp.read())
            if isinstance(dest, (str, os.PathLike)):
                path = os.fspath(dest)
                tmp = "%s.part-%d" % (path, os.getpid())
                try:
                    with open(tmp, "wb") as f:
                        size, digest = self._copy(resp, f)
                    os.replace(tmp, path)
                except BaseException:
                    try:
                        os.unlink(tmp)
                    except FileNotFoundError:
                        pass
                    raise
            else:
                path = getattr(dest, "name", "") or ""
                size, digest = self._copy(resp, dest)
        finally:
            conn.close()
        return Download(str(path), size, digest)

    @staticmethod
    def _copy(resp: http.client.HTTPResponse, f: IO[bytes]) -> Tuple[int, str]:
        h = hashlib.sha256()
        size = 0
        expect = resp.getheader("Content-Length")
        while True:
            chunk = resp.read(65536)
            if not chunk:
                break
            f.write(chunk)
            h.update(chunk)
            size += len(chunk)
        if expect is not None and expect.isdigit() and int(expect) != size:
            raise ProtocolError(200, "short_body",
                                "the artifact ended after %d of %s bytes"
                                % (size, expect))
        return size, h.hexdigest()

    # ---- service ----
    def capabilities(self) -> List[Dict[str, Any]]:
        """GET /v1/capabilities: each configured provider's facts
        (docs/contract.md), as this tenant may use them."""
        _, body = self._call("GET", "/v1/capabilities")
        return list(body.get("providers") or [])

    def health(self) -> Dict[str, Any]:
        """GET /v1/health (no token needed): the health document, whether
        ready (200) or not (503); check its `ready`."""
        _, body = self._call("GET", "/v1/health", ok=(200, 503))
        return body
