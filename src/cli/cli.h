/* Internal to the CLI: shared options and helpers. */
#ifndef AL_CLI_H
#define AL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cli_globals {
	const char *state_dir; /* resolved: never NULL after main() */
	const char *config;    /* NULL: the defaults */
} cli_globals;

/* Exit statuses shared by the commands. */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_USAGE = 2,
	CLI_EXIT_TIMEOUT = 124,
	CLI_EXIT_REFUSED = 125,
};

int cmd_run(const cli_globals *g, int argc, char **argv);
int cmd_probe(const cli_globals *g, int argc, char **argv);
int cmd_audit(const cli_globals *g, int argc, char **argv);
int cmd_doctor(const cli_globals *g, int argc, char **argv);
int cmd_contract(const cli_globals *g, int argc, char **argv);
int cmd_serve(const cli_globals *g, int argc, char **argv);
int cmd_runs(const cli_globals *g, int argc, char **argv);
/* The container provider's images (src/cli/cmd_image.c). */
int cmd_image(const cli_globals *g, int argc, char **argv);
/* The per-run supervisor airlockd starts (src/cli/cmd_supervise.c). */
int cmd_supervise(const cli_globals *g, int argc, char **argv);

/* "500ms", "5s", "2m", "1h", "5" (seconds) -> milliseconds. */
int cli_parse_duration_ms(const char *s, uint64_t *out);
/* "256M", "64k", "1G", "1000" (bytes) -> bytes. */
int cli_parse_size(const char *s, uint64_t *out);
int cli_parse_count(const char *s, uint64_t *out);
/* Reads a whole file ("-" = stdin); NUL-terminated; caller frees. */
int cli_read_file(const char *path, char **data, size_t *len);
/* Loads the configuration named by the globals, or the defaults. */
struct al_config;
int cli_load_config(const cli_globals *g, struct al_config **out);
/* The fleet store's audit chain (network module; docs/scale-out.md). */
struct al_error;
int cli_store_audit_verify(const char *url, uint64_t *records,
			   struct al_error **err);
/* The configuration's candidate config for provider `id`, or NULL. */
const char *cli_candidate_config(const struct al_config *cfg, const char *id);
/* The configuration's provider module `id`, loaded (cli/module_provider.c):
 * 0, -ENOENT when `id` names no module candidate, another negative errno
 * when it may not or cannot be loaded (the reason already printed). */
struct al_provider_ops;
int cli_module_provider(const struct al_config *cfg, const char *id,
			const struct al_provider_ops **out);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes all of buf (retrying short writes; gives up on an error). */
void cli_write_all(int fd, const void *buf, size_t len);
/* Writes buf for a terminal: valid UTF-8 text as it is (with newline, tab
 * and CR LF), every other control character (C0, DEL, C1) and every byte
 * that is not UTF-8 shown as an escape (\x1b, \u009b), so a program's
 * output cannot move the cursor, retitle the window or set the
 * clipboard.  json: every escape as \u00XX (JSON text stays JSON). */
void cli_write_visible(int fd, const unsigned char *buf, size_t len,
		       bool json);

/* run --exec (cli/run_exec.c): turns the request object built from the
 * options into the exec shape — exec = [prog] + its argv, no language,
 * code or argv.  0 or -ENOMEM (reported). */
struct json_t;
int cli_exec_shape(struct json_t *req, const char *prog);

#endif
