/* airlock — the runner service (airlockd, `airlock serve`; docs/serve.md,
 * docs/api.md).
 *
 * JSON over HTTP in front of the host pipeline.  A bearer token maps to a
 * tenant; the request body never names one.  Every answer, errors included,
 * is typed JSON (GET /metrics is Prometheus text).
 */
#ifndef AIRLOCK_SERVER_H
#define AIRLOCK_SERVER_H

#include <stddef.h>

#include <airlock/error.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AL_SERVER_DEFAULT_LISTEN "127.0.0.1:7878"
#define AL_SERVER_DEFAULT_MAX_BODY (16u * 1024u * 1024u)
#define AL_SERVER_DEFAULT_MAX_CONNECTIONS 1024u
#define AL_SERVER_DEFAULT_MAX_CONNECTIONS_PER_CLIENT 256u
#define AL_SERVER_DEFAULT_HEADER_TIMEOUT_MS 20000u
#define AL_SERVER_DEFAULT_BODY_TIMEOUT_MS 60000u
#define AL_SERVER_DEFAULT_GRACE_MS 10000u

typedef struct al_server_options {
	/* Configuration file (docs/configuration.md); NULL: the defaults.
	 * Re-read on SIGHUP; a bad file keeps the running configuration. */
	const char *config_path;
	/* Database, run directories and the generated token.  Required. */
	const char *state_dir;
	/* "ADDR:PORT" ("[v6]:PORT" for IPv6).  NULL: "127.0.0.1:7878" unless
	 * unix_socket is set, in which case no TCP listener is opened. */
	const char *listen_addr;
	const char *unix_socket; /* path; NULL: none */
	size_t max_body_bytes;	 /* 0: 16 MiB */
	/* Connections per listener; 0: 1024, and never more than half the
	 * descriptor limit (RLIMIT_NOFILE). */
	unsigned max_connections;
	/* Connections per client IP address; 0: 256. */
	unsigned max_connections_per_client;
	/* A request's headers must have arrived this long after the
	 * connection opened or its previous answer was sent; 0: 20 s. */
	unsigned header_timeout_ms;
	/* A request's body must have arrived this long after its headers;
	 * 0: 60 s. */
	unsigned body_timeout_ms;
	unsigned shutdown_grace_ms; /* running runs get this long; 0: 10 s */
} al_server_options;

/* Runs the service until SIGTERM or SIGINT (graceful: stop accepting, let
 * running runs finish up to the grace, then interrupt them).  SIGHUP
 * reloads the configuration.  Start-up problems (bad configuration, port
 * in use, unwritable state directory) return a negative errno with *err
 * naming the cause; 0 after a clean shutdown.  Installs its own signal
 * handling for SIGTERM, SIGINT and SIGHUP and ignores SIGPIPE; call it
 * from the main thread of a process that runs one service. */
int al_server_run(const al_server_options *opts, al_error **err);

#ifdef __cplusplus
}
#endif
#endif
