/* airlock — the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "cli/cli.h"
#include "core/util.h"

static const char usage[] =
	"usage: airlock [--state-dir DIR] [--config FILE] COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"  run       run code and print its output or typed result\n"
	"  probe     show what each provider observed on this host\n"
	"  doctor    explain what the sandbox needs and what is missing\n"
	"  contract  run the conformance kit against providers\n"
	"  audit     show or verify the audit trail\n"
	"  runs      a run's artifacts: forget expired ones, read one\n"
	"  image     the container provider's images: build, import, list\n"
	"  serve     start the runner service (airlockd)\n"
	"\n"
	"global options:\n"
	"  --state-dir DIR  database, run directories, tokens\n"
	"                   (env AIRLOCK_STATE_DIR; default /var/lib/airlock\n"
	"                   for root, else $XDG_STATE_HOME/airlock)\n"
	"  --config FILE    configuration (env AIRLOCK_CONFIG; default\n"
	"                   /etc/airlock/config.json when it exists)\n"
	"  -h, --help       this help; `airlock COMMAND --help` for a command\n"
	"  --version        print the version\n";

static char *default_state_dir(void)
{
	const char *env = getenv("AIRLOCK_STATE_DIR");
	if (env != NULL && env[0] != '\0')
		return strdup(env);
	if (geteuid() == 0)
		return strdup("/var/lib/airlock");
	env = getenv("XDG_STATE_HOME");
	if (env != NULL && env[0] == '/')
		return al_strdup_printf("%s/airlock", env);
	env = getenv("HOME");
	return al_strdup_printf("%s/.local/state/airlock",
				env != NULL ? env : "/tmp");
}

int main(int argc, char **argv)
{
	cli_globals g = {0};
	char *state_owned = NULL;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(a, "--version") == 0) {
			printf("airlock %s\n", al_version());
			return 0;
		}
		if ((strcmp(a, "--state-dir") == 0 || strcmp(a, "--config") == 0) &&
		    i + 1 < argc) {
			if (a[2] == 's')
				g.state_dir = argv[++i];
			else
				g.config = argv[++i];
			continue;
		}
		if (strncmp(a, "--state-dir=", 12) == 0) {
			g.state_dir = a + 12;
			continue;
		}
		if (strncmp(a, "--config=", 9) == 0) {
			g.config = a + 9;
			continue;
		}
		cli_error("unknown option '%s' (see airlock --help)", a);
		return CLI_EXIT_USAGE;
	}
	if (i >= argc) {
		fputs(usage, stderr);
		return CLI_EXIT_USAGE;
	}
	if (g.state_dir == NULL) {
		state_owned = default_state_dir();
		if (state_owned == NULL)
			return 1;
		g.state_dir = state_owned;
	}
	if (g.config == NULL) {
		const char *env = getenv("AIRLOCK_CONFIG");
		if (env != NULL && env[0] != '\0')
			g.config = env;
		else if (access("/etc/airlock/config.json", F_OK) == 0)
			g.config = "/etc/airlock/config.json";
	}

	const char *cmd = argv[i];
	int sub_argc = argc - i;
	char **sub_argv = argv + i;
	int rc;
	if (strcmp(cmd, "run") == 0)
		rc = cmd_run(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "probe") == 0)
		rc = cmd_probe(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "audit") == 0)
		rc = cmd_audit(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "serve") == 0)
		rc = cmd_serve(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "contract") == 0)
		rc = cmd_contract(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "doctor") == 0)
		rc = cmd_doctor(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "runs") == 0)
		rc = cmd_runs(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "image") == 0)
		rc = cmd_image(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "supervise") == 0)
		rc = cmd_supervise(&g, sub_argc, sub_argv);
	else if (strcmp(cmd, "help") == 0) {
		fputs(usage, stdout);
		rc = 0;
	} else {
		cli_error("unknown command '%s' (see airlock --help)", cmd);
		rc = CLI_EXIT_USAGE;
	}
	free(state_owned);
	return rc;
}
