/* The toolbelt's wire protocol (docs/toolbelt.md), shared by the
 * airlock-tool command and the run's supervisor that serves it.
 *
 * One request per connection on a SOCK_SEQPACKET Unix socket: the client
 * sends one message, a JSON object {"token", "op", ...}, and reads one
 * message back, {"ok": true, "result": ...} or {"ok": false, "error":
 * CODE}.  Messages are bounded so neither side ever reads an unbounded
 * amount. */
#ifndef AL_TOOL_PROTO_H
#define AL_TOOL_PROTO_H

/* One request or answer, whole. */
#define AL_TOOL_MAX_MSG (80u * 1024u)
/* An event's compact JSON (its data), a call's input, a call's answer. */
#define AL_TOOL_MAX_EVENT_BYTES (16u * 1024u)
#define AL_TOOL_MAX_CALL_BYTES (64u * 1024u)
/* Per run. */
#define AL_TOOL_MAX_EVENTS 256u
#define AL_TOOL_MAX_EVENTS_BYTES (256u * 1024u)
/* The credential: 32 random bytes, hex. */
#define AL_TOOL_TOKEN_HEX 64
/* Names: event types, operations, request ids, declared reasons. */
#define AL_TOOL_MAX_NAME 64

/* The directory the run sees the socket and token in, and the one with
 * the command (inside the sandbox). */
#define AL_TOOL_SANDBOX_DIR "/toolbelt"
#define AL_TOOL_SANDBOX_BIN "/toolbelt-bin"
#define AL_TOOL_SOCK_NAME "sock"
#define AL_TOOL_TOKEN_NAME "token"

#endif
