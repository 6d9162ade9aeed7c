/* Internal: small helpers for strings, string vectors and byte buffers. */
#ifndef AL_CORE_UTIL_H
#define AL_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <airlock/contract.h>

/* *out = strdup(s), or NULL when s is NULL.  0 or -ENOMEM. */
int al_strdup_opt(const char *s, char **out);
/* Copies n strings into a new NULL-terminated vector (NULL when n == 0). */
int al_strv_dup(char *const *v, size_t n, char ***out);
/* Frees the first n strings and the vector. */
void al_strv_free(char **v, size_t n);
/* Deep copy; the copy is NUL-terminated like every al_bytes. */
int al_bytes_dup(const al_bytes *src, al_bytes *dst);
int al_bytes_set(al_bytes *dst, const void *data, size_t len);
void al_bytes_clear(al_bytes *b);
/* Zeroes then frees a string that may hold a secret. */
void al_explicit_free_str(char *s);
/* snprintf into a new string; NULL on failure. */
char *al_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes all len bytes, retrying on EINTR and short writes.  0 or -errno
 * (-ENOSPC when the file takes no more). */
int al_write_all(int fd, const void *data, size_t len);
/* s as one line for a log: quoted, every byte outside printable ASCII
 * (and the quote and backslash) as \xNN, cut to at most max bytes of s
 * ("..." before the closing quote marks a cut).  NULL on failure. */
char *al_log_quote(const char *s, size_t max);
/* Reads the regular file open as fd whole (at most max bytes) into a new
 * NUL-terminated *out; *len (when non-NULL) its length.  A file that
 * shrinks while read gives what is there.  -EINVAL when not a regular
 * file, -EFBIG when larger than max, -ENOMEM, or the read's -errno. */
int al_read_whole_fd(int fd, size_t max, char **out, size_t *len);
/* The start of a small file (a /proc text) into buf, NUL-terminated: at
 * most len - 1 bytes from one read.  The length read, or -errno (-EIO
 * for an empty file).  Allocates nothing, so a forked child may call it. */
ssize_t al_read_head(const char *path, char *buf, size_t len);
/* Opens the directory at path (a link is not followed) when this process's
 * user owns it and its mode has none of the forbidden bits: the fd,
 * -EPERM when it is someone else's or too open, or -errno. */
int al_open_own_dir(const char *path, unsigned forbidden);
/* true when s is 1..max of [A-Za-z0-9_-] (ids that name files and
 * records). */
bool al_token_valid(const char *s, size_t max);
/* The value of one hex digit (either case), or -1. */
int al_hex_digit(char c);
/* true for a run id as al_run_id_new makes them: 8-4-4-4-12 lower-case
 * hex.  The host and the remote provider accept no other from a caller. */
bool al_run_id_canonical(const char *s);

/* CLOCK_MONOTONIC in ms: for deadlines and durations, never for a date.
 * Inline, so the network modules need no symbol for it. */
static inline int64_t al_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* *ts := clk's now + ms (ms >= 0), for pthread_cond_timedwait on a
 * condition of that clock (CLOCK_REALTIME unless its attributes say
 * otherwise). */
static inline void al_deadline(clockid_t clk, struct timespec *ts, int64_t ms)
{
	clock_gettime(clk, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* al_deadline on CLOCK_MONOTONIC. */
static inline void al_mono_deadline(struct timespec *ts, int64_t ms)
{
	al_deadline(CLOCK_MONOTONIC, ts, ms);
}

#endif
