/* airlock runs: what a run leaves, after the run (docs/workspaces.md).
 *
 *   runs forget [--older-than AGE] [RUN_ID...]  retention
 *   runs artifact RUN_ID ARTIFACT               one artifact to stdout */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "cli/cli.h"
#include "host/config.h"
#include "host/db.h"
#include "host/idempotency.h"
#include "child/artifacts.h"
#include "supervisor/retention.h"

static const char runs_usage[] =
	"usage: airlock runs forget [--older-than AGE] [RUN_ID...]\n"
	"       airlock runs artifact RUN_ID ARTIFACT\n"
	"\n"
	"forget: removes everything finished runs stored (final result,\n"
	"  output, artifacts; the audit trail keeps its records) for runs\n"
	"  finished more than AGE ago (default: the configuration's\n"
	"  \"retention\", 7 days), or exactly the named runs, with their\n"
	"  stored idempotent results.  A live run is never touched: it is\n"
	"  skipped (and, when named, the command fails).\n"
	"  AGE: 30s, 15m, 12h, 7d or plain seconds.\n"
	"artifact: writes one artifact of a run (\"log\", \"out-1\", ...) to\n"
	"  standard output.\n"
	"\n"
	"exit status: 0, 2 on a usage error, 125 when a named run is live or\n"
	"unknown, or something could not be removed or read.\n";

/* "7d", "12h", "15m", "30s", "45" (seconds) -> milliseconds. */
static int parse_age_ms(const char *s, uint64_t *out)
{
	char *end = NULL;
	if (s == NULL || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0)
		return -ERANGE;
	uint64_t scale = 1000;
	if (strcmp(end, "d") == 0)
		scale = 86400000;
	else if (strcmp(end, "h") == 0)
		scale = 3600000;
	else if (strcmp(end, "m") == 0)
		scale = 60000;
	else if (strcmp(end, "s") != 0 && end[0] != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / scale)
		return -ERANGE;
	*out = (uint64_t)v * scale;
	return 0;
}

/* The idempotent results stored for the named runs carry their output:
 * forgotten with them. */
static int forget_idempotent(const cli_globals *g, char *const *ids,
			     size_t n)
{
	al_db *db = NULL;
	al_error *err = NULL;
	if (al_db_open(g->state_dir, 5000, &db, &err) < 0) {
		cli_error("runs forget: %s", al_error_get_message(err));
		al_error_free(err);
		return -EIO;
	}
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = al_idem_forget_run(db, ids[i]);
	al_db_close(db);
	if (rc < 0)
		cli_error("runs forget: cannot remove the stored idempotent "
			  "results");
	return rc;
}

static int runs_forget(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"older-than", required_argument, NULL, 1},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *age = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 1:
			age = optarg;
			break;
		case 'h':
			fputs(runs_usage, stdout);
			return 0;
		default:
			fputs(runs_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	char *const *ids = argv + optind;
	size_t n_ids = (size_t)(argc - optind);
	if (age != NULL && n_ids > 0) {
		cli_error("runs forget: give --older-than or run ids, not both");
		return CLI_EXIT_USAGE;
	}
	uint64_t older_ms = 0;
	if (age != NULL) {
		if (parse_age_ms(age, &older_ms) < 0) {
			cli_error("runs forget: --older-than: expected an age "
				  "like 7d, 12h, 15m or 30s");
			return CLI_EXIT_USAGE;
		}
	} else if (n_ids == 0) {
		al_config *cfg = NULL;
		if (cli_load_config(g, &cfg) < 0)
			return CLI_EXIT_REFUSED;
		older_ms = cfg->retention_s * 1000u;
		al_config_free(cfg);
	}
	al_forget_stats st;
	al_error *err = NULL;
	if (al_runs_forget(g->state_dir, older_ms, ids, n_ids, &st, &err) <
	    0) {
		cli_error("runs forget: %s", al_error_get_message(err));
		al_error_free(err);
		return CLI_EXIT_REFUSED;
	}
	if (n_ids > 0 && forget_idempotent(g, ids, n_ids) < 0)
		st.failed++;
	printf("removed %zu, live %zu, younger %zu, unknown %zu, failed %zu\n",
	       st.removed, st.live, st.kept, st.missing, st.failed);
	if (n_ids > 0 && st.live > 0)
		cli_error("runs forget: refused: a named run is still live");
	if (n_ids > 0 && st.missing > 0)
		cli_error("runs forget: a named run has no stored data here");
	if (st.failed > 0 || (n_ids > 0 && (st.live > 0 || st.missing > 0)))
		return CLI_EXIT_REFUSED;
	return 0;
}

static int runs_artifact(const cli_globals *g, int argc, char **argv)
{
	if (argc != 3) {
		fputs(runs_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	int fd = al_artifact_open(g->state_dir, argv[1], argv[2]);
	if (fd < 0) {
		cli_error("runs artifact: %s",
			  fd == -EINVAL ? "malformed run id or artifact id"
					: "no such artifact");
		return CLI_EXIT_REFUSED;
	}
	int rc = 0;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? CLI_EXIT_REFUSED : 0;
			break;
		}
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
			rc = CLI_EXIT_REFUSED;
			break;
		}
	}
	close(fd);
	if (fflush(stdout) != 0)
		rc = CLI_EXIT_REFUSED;
	return rc;
}

int cmd_runs(const cli_globals *g, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		fputs(runs_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	if (strcmp(argv[1], "forget") == 0)
		return runs_forget(g, argc - 1, argv + 1);
	if (strcmp(argv[1], "artifact") == 0)
		return runs_artifact(g, argc - 1, argv + 1);
	cli_error("runs: unknown subcommand '%s'", argv[1]);
	return CLI_EXIT_USAGE;
}
