/* airlock audit tail|verify: read the hash-chained audit trail. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/airlock.h>

#include "cli/cli.h"

static const char audit_usage[] =
	"usage: airlock audit tail [-n N] [--json]\n"
	"       airlock audit verify [--store URL]\n"
	"tail shows the last N records (default 20) of the state directory's\n"
	"audit trail; verify recomputes the hash chain and fails if any record\n"
	"was edited, removed or reordered; with --store, the fleet's chain in\n"
	"that store (docs/scale-out.md).\n";

/* One readable line per record; the JSON line is the source. */
static void print_record_text(const char *line)
{
	json_t *r = json_loads(line, 0, NULL);
	if (r == NULL) {
		puts(line);
		return;
	}
	const char *keys[] = {"seq", "time", "event", "tenant", "run_id",
			      "language", "provider", "outcome", "reason"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(r, keys[i]);
		if (v == NULL || json_is_null(v))
			continue;
		if (json_is_string(v))
			printf("%s%s=%s", i ? " " : "", keys[i], json_string_value(v));
		else if (json_is_integer(v))
			printf("%s%s=%lld", i ? " " : "", keys[i],
			       (long long)json_integer_value(v));
	}
	putchar('\n');
	json_decref(r);
}

int cmd_audit(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"store", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool as_json = false;
	const char *store = NULL;
	uint64_t n = 20;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(audit_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	const char *sub = argv[1];
	optind = 2;
	int c;
	while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (cli_parse_count(optarg, &n) < 0) {
				cli_error("audit: -n expects a number");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'j':
			as_json = true;
			break;
		case 's':
			store = optarg;
			break;
		case 'h':
			fputs(audit_usage, stdout);
			return 0;
		default:
			fputs(audit_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}

	al_error *err = NULL;
	if (strcmp(sub, "verify") == 0 && store != NULL) {
		uint64_t records = 0;
		if (cli_store_audit_verify(store, &records, &err) < 0) {
			cli_error("audit verify: FAILED: %s",
				  al_error_get_message(err));
			al_error_free(err);
			return 1;
		}
		printf("audit verify: ok, %llu records, chain intact\n",
		       (unsigned long long)records);
		return 0;
	}
	if (store != NULL) {
		cli_error("audit: --store goes with verify");
		return CLI_EXIT_USAGE;
	}
	if (strcmp(sub, "verify") == 0) {
		size_t records = 0;
		if (al_audit_verify(g->state_dir, &records, &err) < 0) {
			cli_error("audit verify: FAILED: %s%s%s",
				  al_error_get_message(err),
				  al_error_get_reason(err)[0] ? " at " : "",
				  al_error_get_reason(err));
			al_error_free(err);
			return 1;
		}
		printf("audit verify: ok, %zu records, chain intact\n", records);
		return 0;
	}
	if (strcmp(sub, "tail") == 0) {
		char *lines = NULL;
		if (al_audit_tail(g->state_dir, (size_t)n, &lines, &err) < 0) {
			cli_error("audit tail: %s", al_error_get_message(err));
			al_error_free(err);
			return 1;
		}
		char *save = NULL;
		for (char *line = strtok_r(lines, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			if (as_json)
				puts(line);
			else
				print_record_text(line);
		}
		free(lines);
		return 0;
	}
	cli_error("audit: unknown subcommand '%s'", sub);
	return CLI_EXIT_USAGE;
}
