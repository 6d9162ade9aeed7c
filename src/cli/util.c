/* CLI helpers: parsing sizes and durations, reading files, messages. */
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

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

void cli_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* a closed stdout is not worth more noise */
		p += n;
		len -= (size_t)n;
	}
}

void cli_write_visible(int fd, const unsigned char *buf, size_t len,
		       bool json)
{
	/* UTF-8 decoding whatever the process's locale; without C.UTF-8
	 * every byte above 0x7f is shown as an escape */
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t old = utf8 != (locale_t)0 ? uselocale(utf8) : (locale_t)0;
	char out[4096 + 16];
	size_t n = 0;
	mbstate_t st;
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < len;) {
		unsigned char b = buf[i];
		size_t used = 1;
		int esc = -1; /* a byte or code point shown as an escape */
		if (b == '\n' || b == '\t' ||
		    (b == '\r' && i + 1 < len && buf[i + 1] == '\n')) {
			/* text layout, kept */
		} else if (b < 0x20 || b == 0x7f) {
			esc = b;
		} else if (b >= 0x80) {
			wchar_t wc = 0;
			size_t r = utf8 != (locale_t)0
					   ? mbrtowc(&wc, (const char *)buf + i,
						     len - i, &st)
					   : (size_t)-1;
			if (r == (size_t)-1 || r == (size_t)-2 || r == 0) {
				memset(&st, 0, sizeof(st));
				esc = b;
			} else {
				used = r;
				if (wc >= 0x80 && wc <= 0x9f) /* C1 controls */
					esc = 0x100 | (int)wc;
			}
		}
		if (esc < 0) {
			memcpy(out + n, buf + i, used);
			n += used;
		} else if (esc & 0x100) {
			n += (size_t)snprintf(out + n, sizeof(out) - n,
					      "\\u%04x", (unsigned)(esc & 0xff));
		} else {
			n += (size_t)snprintf(out + n, sizeof(out) - n,
					      json ? "\\u%04x" : "\\x%02x",
					      (unsigned)esc);
		}
		i += used;
		if (n >= sizeof(out) - 16) {
			cli_write_all(fd, out, n);
			n = 0;
		}
	}
	cli_write_all(fd, out, n);
	if (utf8 != (locale_t)0) {
		uselocale(old);
		freelocale(utf8);
	}
}
