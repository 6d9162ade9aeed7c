/* airlock probe: what each provider observed on this host, now. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/airlock.h>

#include "cli/cli.h"

static const char probe_usage[] =
	"usage: airlock probe [-p ID] [--json]\n"
	"Probes each built-in provider (or only ID) and prints the facts it\n"
	"observed: availability, safety class, isolation axes, languages with\n"
	"their real interpreter and version, enforceable limits, mechanisms.\n";

static void print_facts_text(const al_facts *f)
{
	printf("%s: %s, %s\n", f->provider,
	       f->available ? "available" : "unavailable",
	       al_safety_class_name(f->safety_class));
	if (!f->available && f->unavailable_reason != NULL)
		printf("  why: %s\n", f->unavailable_reason);
	printf("  isolation: process_contained=%s host_filesystem_restricted=%s\n"
	       "             privilege_escalation_blocked=%s syscalls_restricted=%s\n"
	       "             network_restricted=%s\n",
	       f->isolation.process_contained ? "yes" : "no",
	       f->isolation.host_filesystem_restricted ? "yes" : "no",
	       f->isolation.privilege_escalation_blocked ? "yes" : "no",
	       f->isolation.syscalls_restricted ? "yes" : "no",
	       f->isolation.network_restricted ? "yes" : "no");
	for (size_t i = 0; i < f->n_languages; i++) {
		const al_language_fact *l = &f->languages[i];
		printf("  %-11s %-7s %-10s %s\n", l->language, l->toolchain,
		       l->version, l->path);
	}
	printf("  limits:");
	for (unsigned bit = 1; bit & AL_LIMIT__ALL; bit <<= 1)
		if (f->limits & bit)
			printf(" %s", al_limit_name(bit));
	printf("\n  network:");
	for (int n = AL_NETWORK_NONE; n <= AL_NETWORK_HOST; n++)
		if (f->network & (1u << n))
			printf(" %s", al_network_name((al_network)n));
	printf("\n  workspace:");
	for (int w = AL_WORKSPACE_NONE; w <= AL_WORKSPACE_RW; w++)
		if (f->workspace & (1u << w))
			printf(" %s", al_workspace_mode_name((al_workspace_mode)w));
	printf("\n");
	if (f->mechanism_json != NULL)
		printf("  mechanism: %s\n", f->mechanism_json);
}

int cmd_probe(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"provider", required_argument, NULL, 'p'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *only = NULL;
	bool as_json = false;

	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "+p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			only = optarg;
			break;
		case 'j':
			as_json = true;
			break;
		case 'h':
			fputs(probe_usage, stdout);
			return 0;
		default:
			fputs(probe_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fputs(probe_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	/* With a configuration, each provider is probed with its candidate
	 * config, as the host would probe it. */
	al_config *cfg = NULL;
	if (g->config != NULL && cli_load_config(g, &cfg) < 0)
		return CLI_EXIT_REFUSED;
	/* -p naming a provider module of the configuration: that one. */
	const al_provider_ops *module[2] = {NULL, NULL};
	int mrc = only != NULL && al_provider_lookup(only) == NULL
			  ? cli_module_provider(cfg, only, &module[0])
			  : -ENOENT;
	if (mrc < 0 && mrc != -ENOENT) {
		al_config_free(cfg);
		return CLI_EXIT_REFUSED;
	}
	if (only != NULL && module[0] == NULL &&
	    al_provider_lookup(only) == NULL) {
		cli_error("probe: unknown provider '%s'", only);
		al_config_free(cfg);
		return CLI_EXIT_USAGE;
	}
	int rc = 0;
	bool first = true;
	if (as_json && only == NULL)
		fputs("[\n", stdout);
	const al_provider_ops *const *list =
		module[0] != NULL ? module : al_provider_builtins();
	for (const al_provider_ops *const *p = list; *p; p++) {
		if (only != NULL && strcmp((*p)->id, only) != 0)
			continue;
		al_facts *f = NULL;
		al_error *err = NULL;
		if ((*p)->probe(cli_candidate_config(cfg, (*p)->id), &f, &err) < 0) {
			cli_error("probe %s: %s", (*p)->id, al_error_get_message(err));
			al_error_free(err);
			rc = 1;
			continue;
		}
		if (as_json) {
			char *text = al_facts_to_json(f, 1);
			if (text != NULL) {
				printf("%s%s", first ? "" : ",\n", text);
				free(text);
			}
		} else {
			print_facts_text(f);
		}
		first = false;
		al_facts_free(f);
	}
	if (as_json)
		fputs(only == NULL ? "\n]\n" : "\n", stdout);
	al_config_free(cfg);
	return rc;
}
