/* Internal: collecting a run's declared outputs (docs/workspaces.md).
 *
 * After the program and everything it started are gone, each declared
 * path or pattern (`*` and `?` within one segment) is resolved beneath
 * the workspace's directory descriptor, never through a link, and only
 * regular files with one link, within the bounds, that stayed the same
 * file while they were read are copied into the artifact store (one file
 * per artifact id, 0600).  Every other match is listed in the result with
 * the reason it was refused; none is read through. */
#ifndef AL_CHILD_OUTPUTS_H
#define AL_CHILD_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>

#include <airlock/contract.h>

#define AL_OUTPUTS_MAX_FILES 64u		     /* collected per run */
#define AL_OUTPUTS_MAX_BYTES (64u * 1024u * 1024u) /* collected per run */
#define AL_OUTPUTS_MAX_ENTRIES 256u	/* result entries, refusals included */
#define AL_OUTPUTS_MAX_SCAN 65536u	/* directory entries read matching */
#define AL_OUTPUTS_MAX_WILD_SEGMENTS 8u /* wildcard segments per pattern */

typedef struct al_outputs_spec {
	int ws_dirfd;	 /* the workspace (an O_PATH descriptor will do) */
	int store_dirfd; /* the artifact store, or -1: nothing is kept */
	char *const *patterns;
	size_t n_patterns;
	uint64_t max_bytes; /* 0: AL_OUTPUTS_MAX_BYTES */
	/* Tests only: called after a file was read, before the final
	 * checks (to swap it). */
	void (*after_read)(void *ctx, const char *path);
	void *after_read_ctx;
} al_outputs_spec;

/* Appends one entry per match (or per pattern that matched nothing) to
 * res->outputs.  0, or -ENOMEM (res then holds what was listed). */
int al_outputs_collect(const al_outputs_spec *spec, al_result *res);

#endif
