/* Version text parsing and constraint matching; see languages.h. */
#include "lang/languages.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Enough for any real toolchain version ("1.2.3.4"). */
#define MAX_PARTS 8
/* Components beyond 9 digits are not versions we will meet; refusing them
 * keeps the arithmetic in range. */
#define MAX_DIGITS 9

typedef struct version {
	long parts[MAX_PARTS];
	int n;
} version;

/* Length of the dotted-number run at s ("3.11.7" in "3.11.7rc1"), or 0
 * when it is not at least "N.N". */
static size_t dotted_run(const char *s)
{
	size_t i = 0;
	int parts = 0;

	for (;;) {
		size_t d = 0;

		while (isdigit((unsigned char)s[i + d]))
			d++;
		if (d == 0)
			break;
		i += d;
		parts++;
		if (s[i] != '.' || !isdigit((unsigned char)s[i + 1]))
			break;
		i++;
	}
	return parts >= 2 ? i : 0;
}

int al_version_parse(const char *text, char *out, size_t outsz)
{
	if (!text || !out || outsz == 0)
		return -EINVAL;
	for (const char *p = text; *p; p++) {
		size_t n;

		if (!isdigit((unsigned char)*p))
			continue;
		/* A version starts a word or follows a "v": not the "86" of
		 * "x86_64" nor the tail of "3.11.7" already skipped. */
		if (p > text) {
			unsigned char prev = (unsigned char)p[-1];
			int after_v = (prev == 'v' || prev == 'V') &&
				      (p - 1 == text || !isalnum((unsigned char)p[-2]));

			if ((isalnum(prev) || prev == '_' || prev == '.') && !after_v)
				continue;
		}
		n = dotted_run(p);
		if (n == 0) {
			while (isdigit((unsigned char)p[1]) || p[1] == '.')
				p++;
			continue;
		}
		if (n >= outsz)
			return -ERANGE;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return -EINVAL;
}

/* Parses exactly "N(.N)*" from s[0..len). */
static int parse_version(const char *s, size_t len, version *v)
{
	size_t i = 0;

	v->n = 0;
	if (len == 0)
		return -EINVAL;
	for (;;) {
		size_t d = 0;
		long val = 0;

		while (i + d < len && isdigit((unsigned char)s[i + d])) {
			if (d == MAX_DIGITS)
				return -EINVAL;
			val = val * 10 + (s[i + d] - '0');
			d++;
		}
		if (d == 0 || v->n == MAX_PARTS)
			return -EINVAL;
		v->parts[v->n++] = val;
		i += d;
		if (i == len)
			return 0;
		if (s[i] != '.')
			return -EINVAL;
		i++;
	}
}

/* Numeric comparison; a missing component counts as 0. */
static int compare(const version *a, const version *b)
{
	int n = a->n > b->n ? a->n : b->n;

	for (int i = 0; i < n; i++) {
		long x = i < a->n ? a->parts[i] : 0;
		long y = i < b->n ? b->parts[i] : 0;

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

static int prefix_match(const version *v, const version *want)
{
	if (want->n > v->n)
		return 0;
	for (int i = 0; i < want->n; i++) {
		if (v->parts[i] != want->parts[i])
			return 0;
	}
	return 1;
}

enum op { OP_PREFIX, OP_EQ, OP_GE, OP_GT, OP_LE, OP_LT };

/* One clause s[0..len) of a constraint against v: 1, 0 or -EINVAL. */
static int clause(const version *v, const char *s, size_t len)
{
	enum op op = OP_PREFIX;
	version want;

	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (len >= 2 && s[0] == '=' && s[1] == '=') {
		op = OP_EQ;
	} else if (len >= 2 && s[0] == '>' && s[1] == '=') {
		op = OP_GE;
	} else if (len >= 2 && s[0] == '<' && s[1] == '=') {
		op = OP_LE;
	} else if (len >= 1 && s[0] == '>') {
		op = OP_GT;
	} else if (len >= 1 && s[0] == '<') {
		op = OP_LT;
	}
	if (op == OP_EQ || op == OP_GE || op == OP_LE) {
		s += 2;
		len -= 2;
	} else if (op != OP_PREFIX) {
		s += 1;
		len -= 1;
	}
	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	if (parse_version(s, len, &want))
		return -EINVAL;
	switch (op) {
	case OP_PREFIX:
		return prefix_match(v, &want);
	case OP_EQ:
		return compare(v, &want) == 0;
	case OP_GE:
		return compare(v, &want) >= 0;
	case OP_GT:
		return compare(v, &want) > 0;
	case OP_LE:
		return compare(v, &want) <= 0;
	case OP_LT:
		return compare(v, &want) < 0;
	}
	return -EINVAL;
}

int al_version_satisfies(const char *version_text, const char *constraint)
{
	version v;
	int result = 1;

	if (!version_text || !constraint)
		return -EINVAL;
	if (parse_version(version_text, strlen(version_text), &v))
		return -EINVAL;
	/* Every clause is checked, so a malformed one is reported even when
	 * an earlier one already failed. */
	for (const char *p = constraint;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		int r = clause(&v, p, len);

		if (r < 0)
			return r;
		if (!r)
			result = 0;
		if (!comma)
			break;
		p = comma + 1;
	}
	return result;
}
