/* Runs the airlock conformance kit against the example provider.
 *
 *   example-provider-kit [--json] [--config JSON] [--only PREFIXES]
 *
 * Exits 0 when no case failed, 1 when one did, 2 on a usage or kit
 * error.  Skipped cases print why (always a fact the provider reported). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/contract_kit.h>

#include "example_provider.h"

int main(int argc, char **argv)
{
	const char *config = NULL;
	bool json = false;
	al_kit_options opts = {.progress = stderr};
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config = argv[++i];
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			opts.only = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--json] [--config JSON] "
					"[--only PREFIXES]\n",
				argv[0]);
			return 2;
		}
	}
	al_kit_report *rep = NULL;
	al_error *err = NULL;
	if (al_kit_run(&example_provider_ops, config, &opts, &rep, &err) < 0) {
		fprintf(stderr, "kit: %s\n", al_error_get_message(err));
		al_error_free(err);
		return 2;
	}
	if (json) {
		char *text = al_kit_report_to_json(rep);
		if (text == NULL) {
			al_kit_report_free(rep);
			return 2;
		}
		puts(text);
		free(text);
	} else {
		al_kit_report_print(rep, stdout);
	}
	int status = al_kit_report_failures(rep) > 0 ? 1 : 0;
	al_kit_report_free(rep);
	return status;
}
