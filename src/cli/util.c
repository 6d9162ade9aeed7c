/* CLI helpers: parsing sizes and durations, reading files, messages. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/airlock.h>

#include "cli/cli.h"
#include "host/config.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("airlock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_scaled(const char *s, uint64_t *out,
			const char *const *units, const uint64_t *scales,
			size_t n_units, uint64_t bare_scale)
{
	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	char *end = NULL;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0)
		return -ERANGE;
	uint64_t scale = bare_scale;
	if (*end != '\0') {
		scale = 0;
		for (size_t i = 0; i < n_units; i++) {
			if (strcasecmp(end, units[i]) == 0) {
				scale = scales[i];
				break;
			}
		}
		if (scale == 0)
			return -EINVAL;
	}
	if (v != 0 && scale > UINT64_MAX / v)
		return -ERANGE;
	*out = (uint64_t)v * scale;
	return 0;
}

int cli_parse_duration_ms(const char *s, uint64_t *out)
{
	static const char *const units[] = {"ms", "s", "m", "h"};
	static const uint64_t scales[] = {1, 1000, 60000, 3600000};
	return parse_scaled(s, out, units, scales, 4, 1000);
}

int cli_parse_size(const char *s, uint64_t *out)
{
	static const char *const units[] = {"b",  "k",	"kb", "kib", "m",
					    "mb", "mib", "g", "gb", "gib"};
	static const uint64_t scales[] = {
		1,	       1024,	      1024,	     1024,
		1024 * 1024,   1024 * 1024,   1024 * 1024,   1024ull * 1024 * 1024,
		1024ull * 1024 * 1024, 1024ull * 1024 * 1024};
	return parse_scaled(s, out, units, scales, 10, 1);
}

int cli_parse_count(const char *s, uint64_t *out)
{
	return parse_scaled(s, out, NULL, NULL, 0, 1);
}

int cli_read_file(const char *path, char **data, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rbe");
	if (f == NULL)
		return -errno;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	int rc = 0;
	if (buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= (size_t)AL_MAX_REQUEST_BYTES * 2) {
				rc = -EFBIG;
				goto out;
			}
			cap *= 2;
			char *grown = realloc(buf, cap + 1);
			if (grown == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			buf = grown;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0) {
			if (ferror(f))
				rc = -EIO;
			break;
		}
	}
out:
	if (f != stdin)
		fclose(f);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

int cli_load_config(const cli_globals *g, al_config **out)
{
	al_error *err = NULL;
	int rc = g->config != NULL ? al_config_load(g->config, out, &err)
				   : al_config_default(out, &err);
	if (rc < 0) {
		cli_error("configuration: %s%s%s", al_error_get_message(err),
			  al_error_get_reason(err)[0] ? " at " : "",
			  al_error_get_reason(err));
		al_error_free(err);
	}
	return rc;
}

const char *cli_candidate_config(const al_config *cfg, const char *id)
{
	for (size_t i = 0; cfg != NULL && i < cfg->n_candidates; i++)
		if (strcmp(cfg->candidates[i].provider, id) == 0)
			return cfg->candidates[i].config_json;
	return NULL;
}
