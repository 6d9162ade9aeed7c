/* airlock contract: run the conformance kit against providers. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/airlock.h>
#include <airlock/contract_kit.h>

#include "cli/cli.h"

static const char contract_usage[] =
	"usage: airlock contract [-p ID | --all] [--json] [--only PREFIXES]\n"
	"Runs the conformance kit (docs/conformance.md) against a built-in\n"
	"provider or a provider module the configuration names, or every\n"
	"built-in one with --all, each with its configuration's candidate\n"
	"config when it has one.  Exits 1 when any case fails.\n"
	"  --only PREFIXES  comma-separated case name prefixes (limit.,io.)\n"
	"  --json           {\"provider\": ID, \"cases\": [...]} per provider\n";

int cmd_contract(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"provider", required_argument, NULL, 'p'},
		{"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},
		{"only", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *only_provider = NULL;
	bool all = false, as_json = false;
	al_kit_options kopts = {0};

	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			only_provider = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'j':
			as_json = true;
			break;
		case 'o':
			kopts.only = optarg;
			break;
		case 'h':
			fputs(contract_usage, stdout);
			return 0;
		default:
			fputs(contract_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc || (all == (only_provider != NULL))) {
		fputs(contract_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	al_config *cfg = NULL;
	if (g->config != NULL && cli_load_config(g, &cfg) < 0)
		return CLI_EXIT_REFUSED;
	/* A provider module the configuration names stands in for the
	 * built-ins' list. */
	const al_provider_ops *module[2] = {NULL, NULL};
	int mrc = only_provider != NULL &&
			  al_provider_lookup(only_provider) == NULL
		  ? cli_module_provider(cfg, only_provider, &module[0])
		  : -ENOENT;
	if (mrc < 0 && mrc != -ENOENT) {
		al_config_free(cfg);
		return CLI_EXIT_REFUSED;
	}
	if (only_provider != NULL && module[0] == NULL &&
	    al_provider_lookup(only_provider) == NULL) {
		cli_error("contract: unknown provider '%s'", only_provider);
		al_config_free(cfg);
		return CLI_EXIT_USAGE;
	}
	if (!as_json)
		kopts.progress = stderr;

	size_t failures = 0;
	bool first = true;
	int rc = 0;
	if (as_json && all)
		fputs("[\n", stdout);
	const al_provider_ops *const *list =
		module[0] != NULL ? module : al_provider_builtins();
	for (const al_provider_ops *const *p = list; *p; p++) {
		if (!all && strcmp((*p)->id, only_provider) != 0)
			continue;
		al_kit_report *report = NULL;
		al_error *err = NULL;
		if (al_kit_run(*p, cli_candidate_config(cfg, (*p)->id), &kopts, &report,
			       &err) < 0) {
			cli_error("contract %s: %s", (*p)->id, al_error_get_message(err));
			al_error_free(err);
			rc = 1;
			continue;
		}
		failures += al_kit_report_failures(report);
		if (as_json) {
			char *text = al_kit_report_to_json(report);
			if (text != NULL)
				printf("%s%s", first ? "" : ",\n", text);
			free(text);
		} else {
			al_kit_report_print(report, stdout);
		}
		first = false;
		al_kit_report_free(report);
	}
	if (as_json)
		fputs(all ? "\n]\n" : "\n", stdout);
	al_config_free(cfg);
	return rc != 0 || failures > 0 ? 1 : 0;
}
