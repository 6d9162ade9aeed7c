/* airlock supervise: the per-run supervisor airlockd starts for each run
 * (docs/durability.md).  Not for interactive use: it only acts on a run
 * directory whose recovery record carries the same nonce. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/log.h"
#include "sandbox/sandbox.h"
#include "supervisor/supervisor.h"

static const char supervise_usage[] =
	"usage: airlock --state-dir DIR supervise --run ID --nonce HEX\n"
	"                [--secrets-fd N]\n"
	"       airlock --state-dir DIR supervise --idle --nonce HEX\n"
	"                (its daemon's socket on fd 3)\n"
	"Supervises one airlockd run: started by the daemon, never by hand.\n"
	"See docs/durability.md.\n";

int cmd_supervise(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"run", required_argument, NULL, 'r'},
		{"nonce", required_argument, NULL, 'n'},
		{"secrets-fd", required_argument, NULL, 's'},
		{"idle", no_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *run = NULL;
	/* In the argument vector: an idle supervisor writes each run's
	 * nonce over it (supervisor/reuse.h). */
	char *nonce = NULL;
	int secrets_fd = -1;
	bool idle = false;
	uint64_t v;

	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			run = optarg;
			break;
		case 'n':
			nonce = optarg;
			break;
		case 's':
			if (cli_parse_count(optarg, &v) < 0 || v < 3 || v > 1024) {
				cli_error("supervise: --secrets-fd expects a "
					  "descriptor number");
				return CLI_EXIT_USAGE;
			}
			secrets_fd = (int)v;
			break;
		case 'i':
			idle = true;
			break;
		case 'h':
			fputs(supervise_usage, stdout);
			return 0;
		default:
			fputs(supervise_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	/* airlockd's log format and level (an invalid one: the defaults). */
	const char *bad_env = NULL;
	(void)al_log_from_env(&bad_env);
	if (idle && optind == argc && run == NULL && nonce != NULL &&
	    secrets_fd < 0)
		return al_supervisor_idle_main(g->state_dir, nonce, 3);
	if (idle || optind < argc || run == NULL || nonce == NULL) {
		fputs(supervise_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	/* A supervisor launched cold serves the one run it was started for:
	 * members of a warm pool would be made only to be thrown away (and
	 * would take the CPU the run needs).  Only idle supervisors, started
	 * ahead of a run, hold a warm sandbox. */
	al_sandbox_pools_off();
	return al_supervisor_main(g->state_dir, run, nonce, secrets_fd);
}
