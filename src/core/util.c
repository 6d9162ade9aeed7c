/* Small helpers for strings, string vectors and byte buffers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

int al_strdup_opt(const char *s, char **out)
{
	*out = NULL;
	if (s == NULL)
		return 0;
	*out = strdup(s);
	return *out != NULL ? 0 : -ENOMEM;
}

int al_strv_dup(char *const *v, size_t n, char ***out)
{
	*out = NULL;
	if (n == 0)
		return 0;
	char **copy = calloc(n + 1, sizeof(*copy));
	if (copy == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(v[i] != NULL ? v[i] : "");
		if (copy[i] == NULL) {
			al_strv_free(copy, i);
			return -ENOMEM;
		}
	}
	*out = copy;
	return 0;
}

void al_strv_free(char **v, size_t n)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int al_bytes_set(al_bytes *dst, const void *data, size_t len)
{
	unsigned char *p = malloc(len + 1);
	if (p == NULL)
		return -ENOMEM;
	if (len > 0)
		memcpy(p, data, len);
	p[len] = '\0';
	dst->data = p;
	dst->len = len;
	return 0;
}

int al_bytes_dup(const al_bytes *src, al_bytes *dst)
{
	return al_bytes_set(dst, src->data, src->data != NULL ? src->len : 0);
}

void al_bytes_clear(al_bytes *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

void al_explicit_free_str(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

char *al_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}
