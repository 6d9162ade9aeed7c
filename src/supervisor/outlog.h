/* Internal: a durable run's live output, RUN/output.
 *
 * The supervisor appends one record per chunk as the program writes it:
 * an 8-byte header (stream: 1 stdout, 2 stderr; three zero bytes; the
 * length, 32-bit little-endian, at most 64 KiB) and the bytes.  A daemon —
 * the one that launched the run or one that adopted it after a restart —
 * tails the file, so record N is the same event (`id: N` on the SSE
 * stream) whoever reads it.  A torn last record (a killed writer) is never
 * read.  Each stream is written up to the request's output_bytes. */
#ifndef AL_SUPERVISOR_OUTLOG_H
#define AL_SUPERVISOR_OUTLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_OUTLOG_MAX_CHUNK 65536u
/* A record of stream byte 3 is a toolbelt event (its JSON text, appended
 * by the toolbelt's server, docs/toolbelt.md); readers get it as stream
 * AL_OUTLOG_EVENT. */
#define AL_OUTLOG_EVENT 2
/* Stream byte 4: a compiled run's build step ended and its program
 * starts; the record is the result's "build" object (its JSON), so a
 * live reader can tell the build stage from the run's output. */
#define AL_OUTLOG_BUILD 3

typedef struct al_outlog_writer {
	int fd;
	uint64_t cap;	      /* bytes kept per stream */
	uint64_t written[2];
	bool broken;	      /* a write failed: nothing more is appended */
} al_outlog_writer;

int al_outlog_open(int dirfd, uint64_t cap, al_outlog_writer *w);
/* stream: AL_STDOUT / AL_STDERR, or AL_OUTLOG_EVENT (one event's JSON).
 * Thread-compatible (one writer). */
void al_outlog_append(al_outlog_writer *w, int stream,
		      const unsigned char *data, size_t len);
void al_outlog_close(al_outlog_writer *w);

typedef void (*al_outlog_fn)(void *ctx, int stream, const unsigned char *data,
			     size_t len);
/* Calls fn for every complete record from *offset on and advances it.
 * fd: the output file opened for reading.  -EBADMSG on a corrupt record
 * (the offset stays before it). */
int al_outlog_read(int fd, uint64_t *offset, al_outlog_fn fn, void *ctx);

#endif
