/* Internal: the toolbelt's host side (docs/toolbelt.md).
 *
 * A run granted the toolbelt gets RUN/tool/ (0711): `sock`, a
 * SOCK_SEQPACKET Unix socket its supervisor serves, and `token` (0600),
 * the run's credential.  The supervisor outlives the daemon, so the socket
 * keeps working across a restart; a daemon that adopts the run replaces
 * the token (al_toolbelt_rotate) and the old one is refused from then on,
 * since every request is checked against the file.
 *
 * The server is one thread of the supervisor with its own poll loop:
 * nonblocking, a bounded number of connections each with a deadline, so a
 * hostile client can neither block the supervisor nor hold the server. */
#ifndef AL_SUPERVISOR_TOOLBELT_H
#define AL_SUPERVISOR_TOOLBELT_H

#include <stdint.h>

#include <airlock/contract.h>

#define AL_RF_TOOL "tool"
#define AL_RF_OPERATIONS "operations.json"

typedef struct al_toolbelt al_toolbelt;

/* A webhook call (the remote module's, which links libcurl): POSTs body
 * to url; *status the HTTP status, *out the answer (at most max bytes,
 * caller frees).  0, or a negative errno (-ETIMEDOUT, -EFBIG, -EIO). */
typedef int (*al_tool_webhook_fn)(const char *url, const char *body,
				  uint64_t timeout_ms, uint64_t max,
				  long *status, char **out);

typedef struct al_toolbelt_cfg {
	int run_dirfd;		  /* RUN; RUN/tool beneath */
	const char *run_id;
	const char *request_json; /* canonical: the context's fields */
	int64_t deadline_ms;
	/* RUN/output, where events are appended as records (stream 2), or
	 * -1: events reach the result only */
	int outlog_fd;
	al_tool_webhook_fn webhook; /* NULL: webhook operations fail */
} al_toolbelt_cfg;

/* Daemon, before the record: the granted operations' definitions beside
 * it (RUN/operations.json, 0600; never inside the run). */
int al_toolbelt_persist_operations(int run_dirfd, const char *ops_json);

/* Supervisor: RUN/tool, a fresh token, the socket, and the server thread.
 * *token_out: the credential (65 bytes, hex). */
int al_toolbelt_start(const al_toolbelt_cfg *cfg, char token_out[65],
		      al_toolbelt **out);
/* The host directory the run is shown (RUN/tool, absolute) from the run's
 * directory path; caller frees. */
char *al_toolbelt_dir(const char *run_dir);
/* The directory holding airlock-tool: exactly $AIRLOCK_TOOLBELT_DIR when
 * set (absolute), else beside the running binary (toolbelt/), else the
 * installed modules' directory; NULL when none has it.  Caller frees. */
char *al_toolbelt_bin_dir(void);
/* The webhook kind's call (libcurl; in the remote provider's module, so
 * a supervisor without webhook calls never loads libcurl). */
int al_tool_webhook_post(const char *url, const char *body,
			 uint64_t timeout_ms, uint64_t max, long *status,
			 char **out);
/* Stops the server (no request is answered after it) and puts the events,
 * the declaration and the host calls into res.  A declaration takes
 * effect here, when the host has observed the process finish: `failed`
 * turns a completed run into failed / declared; nothing else changes an
 * outcome.  Frees tb. */
int al_toolbelt_finish(al_toolbelt *tb, al_result *res);

/* Daemon, on adoption (run locked): a new token replaces RUN/tool/token
 * (same owner, 0600, atomically); the old one is refused from now on.
 * 0 also when the run has no toolbelt. */
int al_toolbelt_rotate(int run_dirfd);

#endif
