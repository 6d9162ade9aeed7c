/* airlock serve: the runner service (airlockd) over HTTP. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/server.h>

#include "cli/cli.h"
#include "core/log.h"
#include "sandbox/sandbox.h"

/* Log lines waiting for stderr before more are dropped (some thousands
 * of access lines), and how long a stop waits for them to be written. */
#define SERVE_LOG_QUEUE_BYTES (1024u * 1024u)
#define SERVE_LOG_DRAIN_MS 2000u

static const char serve_usage[] =
	"usage: airlock serve [--listen ADDR:PORT] [--unix-socket PATH]\n"
	"                     [--max-body-bytes N] [--max-connections N]\n"
	"                     [--max-connections-per-client N]\n"
	"                     [--header-timeout-ms N] [--body-timeout-ms N]\n"
	"                     [--shutdown-grace-ms N]\n"
	"                     [--log-format text|json]\n"
	"                     [--log-level error|warn|info|debug]\n"
	"Starts the runner service on the configuration (global --config) and\n"
	"the state directory (global --state-dir).  Default: 127.0.0.1:7878\n"
	"with a token for tenant `default` created once in STATE_DIR/token.\n"
	"SIGTERM drains and stops; SIGHUP reloads the configuration.\n"
	"See docs/serve.md and docs/api.md.\n";

int cmd_serve(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"unix-socket", required_argument, NULL, 'u'},
		{"max-body-bytes", required_argument, NULL, 'b'},
		{"max-connections", required_argument, NULL, 'c'},
		{"shutdown-grace-ms", required_argument, NULL, 'g'},
		{"max-connections-per-client", required_argument, NULL, 'p'},
		{"header-timeout-ms", required_argument, NULL, 'H'},
		{"body-timeout-ms", required_argument, NULL, 'B'},
		{"log-format", required_argument, NULL, 'F'},
		{"log-level", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	al_server_options so = {
		.config_path = g->config,
		.state_dir = g->state_dir,
	};
	uint64_t v;

	/* The environment's choice first, the flags over it. */
	const char *bad_env = NULL;
	if (al_log_from_env(&bad_env) < 0) {
		cli_error("serve: %s expects text|json or a level", bad_env);
		return CLI_EXIT_USAGE;
	}
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			so.listen_addr = optarg;
			break;
		case 'u':
			so.unix_socket = optarg;
			break;
		case 'b':
			if (cli_parse_size(optarg, &v) < 0 || v == 0) {
				cli_error("serve: --max-body-bytes expects a size");
				return CLI_EXIT_USAGE;
			}
			so.max_body_bytes = (size_t)v;
			break;
		case 'c':
			if (cli_parse_count(optarg, &v) < 0 || v == 0 || v > 65536) {
				cli_error("serve: --max-connections expects 1..65536");
				return CLI_EXIT_USAGE;
			}
			so.max_connections = (unsigned)v;
			break;
		case 'p':
			if (cli_parse_count(optarg, &v) < 0 || v == 0 || v > 65536) {
				cli_error("serve: --max-connections-per-client "
					  "expects 1..65536");
				return CLI_EXIT_USAGE;
			}
			so.max_connections_per_client = (unsigned)v;
			break;
		case 'H':
		case 'B':
			if (cli_parse_count(optarg, &v) < 0 || v < 100 ||
			    v > 3600000) {
				cli_error("serve: --%s-timeout-ms expects 100..3600000",
					  c == 'H' ? "header" : "body");
				return CLI_EXIT_USAGE;
			}
			if (c == 'H')
				so.header_timeout_ms = (unsigned)v;
			else
				so.body_timeout_ms = (unsigned)v;
			break;
		case 'g':
			if (cli_parse_count(optarg, &v) < 0 || v > 86400000) {
				cli_error("serve: --shutdown-grace-ms expects milliseconds");
				return CLI_EXIT_USAGE;
			}
			so.shutdown_grace_ms = (unsigned)v;
			break;
		case 'F':
			if (al_log_set_format(optarg) < 0) {
				cli_error("serve: --log-format expects text or "
					  "json");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'L':
			if (al_log_set_level(optarg) < 0) {
				cli_error("serve: --log-level expects error, "
					  "warn, "
					  "info or debug");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(serve_usage, stdout);
			return 0;
		default:
			fputs(serve_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fputs(serve_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	/* Supervisors inherit the environment: they log alike. */
	al_log_export_env();
	al_error *err = NULL;
	/* The daemon's own sandbox handle only probes and selects; runs go to
	 * supervisors, and the idle ones hold the warm sandboxes
	 * (docs/durability.md, "Idle supervisors"). */
	al_sandbox_pools_off();
	/* A stderr nobody reads (a stalled log shipper, a paused pager)
	 * must not stop the daemon: its lines are queued for a writer. */
	int wrc = al_log_writer_start(SERVE_LOG_QUEUE_BYTES);
	if (wrc < 0)
		al_logf(AL_LOG_WARN, NULL,
			"cannot start the log writer (%s): lines are written "
			"by the threads that log them",
			strerror(-wrc));
	int rc = al_server_run(&so, &err);
	(void)al_log_writer_stop(SERVE_LOG_DRAIN_MS);
	if (rc < 0) {
		cli_error("serve: %s%s%s", al_error_get_message(err),
			  al_error_get_reason(err)[0] ? " at " : "",
			  al_error_get_reason(err));
		al_error_free(err);
		return 1;
	}
	return 0;
}
