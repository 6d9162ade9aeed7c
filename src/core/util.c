/* Small helpers for strings, string vectors and byte buffers. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool al_run_id_canonical(const char *s)
{
	if (strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-'
			 : !((s[i] >= '0' && s[i] <= '9') ||
			     (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

void al_run_id_new(char out[40])
{
	unsigned char b[16];
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n > 0)
			got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 40,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

int al_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

char *al_log_quote(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *out = malloc(n * 4 + 6);
	size_t k = 0;
	if (out == NULL)
		return NULL;
	out[k++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* A newline or an escape sequence could forge a log line or
		 * drive the operator's terminal. */
		if (c < 0x20 || c == 0x7f || c >= 0x80 || c == '"' || c == '\\')
			k += (size_t)sprintf(out + k, "\\x%02x", c);
		else
			out[k++] = (char)c;
	}
	if (n == max && s[n] != '\0') {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k++] = '"';
	out[k] = '\0';
	return out;
}

int al_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t al_read_head(const char *path, char *buf, size_t len)
{
	if (len < 2)
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	if (n == 0)
		return -EIO;
	buf[n] = '\0';
	return n;
}

int al_read_whole_fd(int fd, size_t max, char **out, size_t *len)
{
	struct stat st;
	char *buf;
	size_t got = 0;

	*out = NULL;
	if (len != NULL)
		*len = 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (n == 0)
			break; /* shrank under us: what is there */
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	if (len != NULL)
		*len = got;
	return 0;
}

int al_open_own_dir(const char *path, unsigned forbidden)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & forbidden) != 0) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

bool al_token_valid(const char *s, size_t max)
{
	size_t n = s != NULL ? strlen(s) : 0;
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}
