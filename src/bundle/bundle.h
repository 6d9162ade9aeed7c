/* Internal: the bundle module (public part in airlock/provider.h).
 *
 * bundle.c builds the immutable bundle and checks the request's files[]
 * and outputs[] against its workspace grant; manifest.c describes a
 * bundle; materialise.c writes one beneath directory descriptors and
 * checks what it wrote against the manifest.  See docs/workspaces.md. */
#ifndef AL_BUNDLE_BUNDLE_H
#define AL_BUNDLE_BUNDLE_H

#include <stdbool.h>
#include <sys/types.h>

#include <airlock/provider.h>

/* The code entry's mode (read-only to everyone). */
#define AL_BUNDLE_CODE_MODE 0444u

/* Checks what the bundle and the workspace need from a request, beyond
 * the codec's own rules (a request built in C never went through it):
 * code and files[] within bounds and clean, outputs[] clean, files[] only
 * with a workspace grant (ro or rw), outputs[] only with rw.  0, or
 * -EINVAL with AL_ERR_INVALID_REQUEST and the field path as reason. */
int al_bundle_request_check(const al_request *req, al_error **err);
/* true when a is b, or one is a directory prefix of the other: both
 * cannot be materialised as files. */
bool al_bundle_paths_collide(const char *a, const char *b);

/* The script file name the bundle gives a language's code. */
const char *al_bundle_script_name(const char *language);

/* Writes the bundle: the code into code_dirfd (when >= 0), the inputs
 * beneath ws_dirfd (when >= 0; parents 0755).  Every file is created
 * with O_EXCL|O_NOFOLLOW beneath its directory descriptor (parents opened
 * O_DIRECTORY|O_NOFOLLOW), given its mode exactly and, when uid is not
 * (uid_t)-1, inputs and their parents are owned by uid/gid.  Each file
 * is then read back through its descriptor and its SHA-256 compared with
 * the manifest.  Errors (AL_ERR_UNAVAILABLE): "bundle_mismatch" (the
 * manifest does not describe the bundle, or a file read back differs),
 * "workspace_no_space" (ENOSPC, EDQUOT, EFBIG), "workspace_setup_failed"
 * (anything else). */
int al_bundle_materialise(const al_bundle *b, const al_manifest *m,
			  int code_dirfd, int ws_dirfd, uid_t uid, gid_t gid,
			  al_error **err);

/* Checks the input files someone else wrote beneath ws_dirfd (the
 * sandbox's init, into its tmpfs) against the manifest: each a regular
 * file reached without a link, with the entry's mode, size and SHA-256.
 * "bundle_mismatch" otherwise. */
int al_bundle_verify_inputs(const al_manifest *m, int ws_dirfd,
			    al_error **err);

/* The provider's side of al_exec: the host's bundle and manifest, or
 * (both NULL in exec) ones built here from the request, released by
 * al_bundle_use_clear. */
typedef struct al_bundle_use {
	const al_bundle *bundle;
	const al_manifest *manifest;
	al_bundle *own_bundle;
	al_manifest *own_manifest;
} al_bundle_use;

/* 0; or -EINVAL with an invalid_request reason in err (the request
 * cannot be bundled); -ENOMEM. */
int al_bundle_use_init(al_bundle_use *u, const al_exec *exec, al_error **err);
void al_bundle_use_clear(al_bundle_use *u);

#endif
