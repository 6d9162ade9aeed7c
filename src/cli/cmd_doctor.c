/* airlock doctor: what the sandbox needs on this host, mechanism by
 * mechanism, and how an operator fixes what is missing. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sandbox/sandbox.h"

int cmd_doctor(const cli_globals *g, int argc, char **argv)
{
	bool as_json = false;
	(void)g;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			as_json = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			puts("usage: airlock doctor [--json]\n"
			     "Checks user namespaces, seccomp, Landlock and cgroups on this\n"
			     "host and explains how to fix what is missing.  Exits 0 when\n"
			     "the sandbox can enforce everything it needs.");
			return 0;
		} else {
			cli_error("doctor: unknown option '%s'", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	return al_sandbox_doctor(stdout, as_json) == 0 ? 0 : 1;
}
