/* The live output file of a durable run (see outlog.h). */
#include "supervisor/outlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <airlock/contract.h>

int al_outlog_open(int dirfd, uint64_t cap, al_outlog_writer *w)
{
	memset(w, 0, sizeof(*w));
	w->cap = cap;
	w->fd = openat(dirfd, "output",
		       O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	return w->fd < 0 ? -errno : 0;
}

static bool write_record(int fd, int stream, const unsigned char *d,
			 size_t n)
{
	unsigned char hdr[8] = {(unsigned char)(stream + 1), 0, 0, 0,
				(unsigned char)(n & 0xff),
				(unsigned char)((n >> 8) & 0xff),
				(unsigned char)((n >> 16) & 0xff),
				(unsigned char)((n >> 24) & 0xff)};
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)d, n}};
	size_t want = sizeof(hdr) + n;
	/* One writev, O_APPEND: a record is whole or torn at the end, and a
	 * torn one ends the log. */
	ssize_t w;
	do
		w = writev(fd, iov, 2);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)want;
}

void al_outlog_append(al_outlog_writer *w, int stream,
		      const unsigned char *data, size_t len)
{
	if (w->fd < 0 || w->broken)
		return;
	/* A toolbelt event another host served (a remote run): one whole
	 * record, bounded by its sender, outside the output cap. */
	if (stream == AL_OUTLOG_EVENT || stream == AL_OUTLOG_BUILD) {
		if (len <= AL_OUTLOG_MAX_CHUNK &&
		    !write_record(w->fd, stream, data, len))
			w->broken = true;
		return;
	}
	if (stream != AL_STDOUT && stream != AL_STDERR)
		return;
	uint64_t room = w->cap > w->written[stream]
				? w->cap - w->written[stream]
				: 0;
	if (len > room)
		len = (size_t)room;
	while (len > 0) {
		size_t n = len > AL_OUTLOG_MAX_CHUNK ? AL_OUTLOG_MAX_CHUNK : len;
		if (!write_record(w->fd, stream, data, n)) {
			w->broken = true;
			return;
		}
		w->written[stream] += n;
		data += n;
		len -= n;
	}
}

void al_outlog_close(al_outlog_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0; /* not all there yet */
		got += (size_t)n;
	}
	return 1;
}

int al_outlog_read(int fd, uint64_t *offset, al_outlog_fn fn, void *ctx)
{
	unsigned char *buf = NULL;
	int rc = 0;
	if (fd < 0)
		return 0;
	for (int records = 0; records < 4096; records++) {
		unsigned char hdr[8];
		int r = pread_all(fd, hdr, sizeof(hdr), *offset);
		if (r <= 0) {
			rc = r;
			break;
		}
		size_t n = (size_t)hdr[4] | (size_t)hdr[5] << 8 |
			   (size_t)hdr[6] << 16 | (size_t)hdr[7] << 24;
		if (hdr[0] < 1 || hdr[0] > AL_OUTLOG_BUILD + 1 || hdr[1] || hdr[2] ||
		    hdr[3] || n == 0 || n > AL_OUTLOG_MAX_CHUNK) {
			rc = -EBADMSG;
			break;
		}
		if (buf == NULL && (buf = malloc(AL_OUTLOG_MAX_CHUNK)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		r = pread_all(fd, buf, n, *offset + sizeof(hdr));
		if (r <= 0) {
			rc = r;
			break;
		}
		fn(ctx, hdr[0] - 1, buf, n);
		*offset += sizeof(hdr) + n;
	}
	free(buf);
	return rc;
}
