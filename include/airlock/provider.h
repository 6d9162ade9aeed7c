/* airlock — the provider contract.
 *
 * A provider is a table of functions.  The host probes it (facts it
 * observed now), ensures a handle (one handle serves concurrent runs and
 * must be thread-safe), executes validated requests on it, may interrupt a
 * run by id, and releases the handle.  A provider never sees tenant identity
 * and never receives a host path to read code from.
 */
#ifndef AIRLOCK_PROVIDER_H
#define AIRLOCK_PROVIDER_H

#include <stdint.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cancel token ----------------------------------------------------
 * Fired by the caller (cancel: the caller gave up) or by an interrupt call
 * (interrupt: an operator stopped the run).  Providers poll al_cancel_fd()
 * (readable once fired) or call al_cancel_state(). */

typedef struct al_cancel al_cancel;

typedef enum al_cancel_kind {
	AL_CANCEL_NONE = 0,
	AL_CANCEL_CANCELLED,  /* -> outcome cancelled */
	AL_CANCEL_INTERRUPTED /* -> outcome interrupted */
} al_cancel_kind;

al_cancel *al_cancel_new(void);
void al_cancel_free(al_cancel *c);
/* The first fire wins; later fires are ignored.  Thread- and
 * async-signal-safe. */
void al_cancel_fire(al_cancel *c, al_cancel_kind kind);
al_cancel_kind al_cancel_state(const al_cancel *c);
int al_cancel_fd(const al_cancel *c);

/* ---- output sink ----------------------------------------------------
 * Called from the executing thread as output arrives (stream is AL_STDOUT
 * or AL_STDERR), before any cap, when the grant allows streaming.  A
 * provider whose program's toolbelt another host serves (remote) may also
 * pass stream 2 with one toolbelt event's JSON; a sink ignores streams it
 * does not show.  It must not block for long. */
typedef void (*al_output_fn)(void *ctx, int stream, const unsigned char *data,
			     size_t len);

/* ---- the bundle --------------------------------------------------------
 * The request's code and input files as one immutable object (its memory
 * is read-only once built) and a manifest describing it: per entry its
 * kind, path, mode, size and SHA-256, and the bundle's own digest, the
 * SHA-256 of the manifest's canonical text (docs/workspaces.md).  The
 * host builds both; a provider materialises the bundle — never the
 * request's files — and checks the bytes it wrote against the manifest
 * before anything runs. */

typedef struct al_bundle al_bundle;

typedef enum al_bundle_kind {
	AL_BUNDLE_CODE = 0, /* the program: path is the script's file name */
	AL_BUNDLE_INPUT	    /* an input file: path relative to the workspace */
} al_bundle_kind;

/* One entry of a bundle; every pointer is into the bundle's read-only
 * memory and lives as long as the bundle. */
typedef struct al_bundle_item {
	al_bundle_kind kind;
	const char *path;
	unsigned mode; /* permission bits; the code is 0444 */
	const unsigned char *data;
	size_t len;
} al_bundle_item;

typedef struct al_manifest_entry {
	al_bundle_kind kind;
	char *path;
	unsigned mode;
	uint64_t size;
	char sha256[65]; /* lower-case hex */
} al_manifest_entry;

typedef struct al_manifest {
	al_manifest_entry *entries; /* the code first, then inputs by path */
	size_t n;
	uint64_t total_bytes;
	char digest[65]; /* SHA-256 of al_manifest_canonical() */
} al_manifest;

/* Builds the bundle of a request: its code (named by the language's
 * script name, "main" for a language airlock does not know) and files[].
 * A path that is not relative and clean, a duplicate or nested path, a
 * mode beyond 0777, more than AL_MAX_FILES files or more than
 * AL_MAX_FILES_TOTAL_BYTES of content, or files[] without a workspace
 * grant fail with AL_ERR_INVALID_REQUEST and the field path as reason. */
int al_bundle_new(const al_request *req, al_bundle **out, al_error **err);
void al_bundle_free(al_bundle *bundle);
size_t al_bundle_count(const al_bundle *bundle);
/* Entry i, in manifest order; NULL past the end. */
const al_bundle_item *al_bundle_item_at(const al_bundle *bundle, size_t i);

/* The manifest of a bundle (hashes computed from its bytes). */
int al_manifest_new(const al_bundle *bundle, al_manifest **out);
void al_manifest_free(al_manifest *manifest);
/* The canonical text the digest is taken over (docs/workspaces.md);
 * caller frees.  NULL on allocation failure. */
char *al_manifest_canonical(const al_manifest *manifest);
/* Checks that the manifest is whole (its digest matches its entries)
 * and names exactly the bundle's entries (kind, path, mode, size, in
 * order).  The hashes are checked against the bytes a provider
 * materialises.  Fails with AL_ERR_UNAVAILABLE, reason "bundle_mismatch". */
int al_manifest_check(const al_manifest *manifest, const al_bundle *bundle,
		      al_error **err);

/* ---- the provider ABI --------------------------------------------------
 * A provider can be a shared object the host loads at run time (a provider
 * module, docs/writing-a-provider.md).  The structs a provider and the host
 * exchange by layout — al_provider_ops (the provider's) and al_exec (the
 * host's) — begin with the ABI version they were compiled against and
 * their size; the host refuses a module whose table carries another
 * version or size.  The contract's own structs (al_request, al_result,
 * al_facts) are allocated only by libairlock (al_*_new), never by a
 * provider, and their layout is part of the same ABI version: a change to
 * any of them raises AL_PROVIDER_ABI_VERSION. */
#define AL_PROVIDER_ABI_VERSION 1u

/* The first members of al_provider_ops and al_exec, in a designated
 * initializer: AL_ABI_HEADER(al_provider_ops). */
#define AL_ABI_HEADER(type)                                                 \
	.abi_version = AL_PROVIDER_ABI_VERSION, .struct_size = sizeof(type)

/* ---- one execution --------------------------------------------------- */

typedef struct al_exec {
	/* AL_PROVIDER_ABI_VERSION and sizeof(al_exec) of the host that
	 * built it (the host sets them; zero from a caller that is not the
	 * host, which links the provider in). */
	uint32_t abi_version;
	uint32_t struct_size;
	const char *run_id;
	const al_request *request; /* validated; limits have defaults applied */
	/* The request's code and files as the host bundled them, and the
	 * manifest to check them against; both NULL: the provider bundles
	 * the request itself (callers other than the host). */
	const al_bundle *bundle;
	const al_manifest *manifest;
	/* The run's artifact store (a directory the host created, 0700), or
	 * NULL: declared outputs are copied there one file per artifact id,
	 * with the run's combined output as "log". */
	const char *artifact_dir;
	al_output_fn on_output;	   /* may be NULL */
	void *on_output_ctx;
	al_cancel *cancel;	   /* never NULL */
	/* Extra environment the host resolved for this run (named secrets),
	 * "NAME=value" strings; never logged. */
	const char *const *host_env;
	size_t n_host_env;
	/* The run's inbox on the host (airlockd runs; docs/durability.md),
	 * or NULL: a directory of delivered events the program may read,
	 * and one where it acknowledges them by creating a file named after
	 * the event id.  A provider that runs programs shows both to the
	 * program and names them in AIRLOCK_INBOX / AIRLOCK_INBOX_ACKS. */
	const char *inbox_dir;
	const char *inbox_acks_dir;
	/* The run's toolbelt (docs/toolbelt.md), or NULL: tool_dir holds the
	 * socket and the token file (a host directory the provider shows to
	 * the program), tool_bin_dir the airlock-tool command, tool_token
	 * the credential.  A provider that shows them names them in
	 * AIRLOCK_TOOL_SOCKET, AIRLOCK_TOOL_TOKEN_FILE, AIRLOCK_TOOL_TOKEN
	 * and puts tool_bin_dir first on PATH. */
	const char *tool_dir;
	const char *tool_bin_dir;
	const char *tool_token;
	/* The build cache this run may use (docs/languages.md): a private
	 * directory of the host's, per tenant unless configured shared, and
	 * its byte bound; NULL: build every time. */
	const char *build_cache_dir;
	uint64_t build_cache_bytes;
	/* A live stdin stream (an interactive run, docs/compat.md): when
	 * stdin_stream is true, stdin_fd is a readable descriptor the
	 * provider gives the program as its stdin in place of the request's
	 * stdin (the caller wrote that into the stream first); its end is
	 * the program's end of input.  A provider that cannot do this
	 * refuses the run (unavailable, "stdin_stream_unsupported").  Read
	 * them with al_exec_stdin_fd(): a host built before them sets a
	 * smaller struct_size. */
	bool stdin_stream;
	int stdin_fd;
} al_exec;

/* The run's live stdin descriptor, or -1 when it has none (or when
 * exec came from a host whose al_exec ends before these members). */
int al_exec_stdin_fd(const al_exec *exec);

/* ---- operations table ------------------------------------------------ */

typedef struct al_provider_handle al_provider_handle; /* provider-defined */

typedef struct al_provider_ops {
	/* AL_PROVIDER_ABI_VERSION and sizeof(al_provider_ops) as the provider
	 * was compiled: initialise with AL_ABI_HEADER(al_provider_ops). */
	uint32_t abi_version;
	uint32_t struct_size;
	const char *id;
	/* Observe facts now.  config_json is the candidate's config object
	 * (or NULL).  Never fails for "not available": that is a fact. */
	int (*probe)(const char *config_json, al_facts **facts, al_error **err);
	int (*ensure)(const char *config_json, al_provider_handle **handle,
		      al_error **err);
	int (*health)(al_provider_handle *handle, al_error **err);
	/* Fills res (allocated by the caller) with exactly one outcome.
	 * Returns 0 whenever res holds an outcome, including refusals like
	 * unsupported_language; a negative errno only for a provider bug. */
	int (*execute)(al_provider_handle *handle, const al_exec *exec,
		       al_result *res, al_error **err);
	/* Interrupts a live run of this handle (TERM, grace, KILL); its
	 * execute then reports `interrupted`.  -ESRCH if unknown. */
	int (*interrupt)(al_provider_handle *handle, const char *run_id,
			 al_error **err);
	/* A failure is visible: the host quarantines the handle. */
	int (*release)(al_provider_handle *handle, al_error **err);
} al_provider_ops;

/* Built-in providers: "disabled", "local", "sandbox", "remote" (as built).
 * NULL when unknown. */
const al_provider_ops *al_provider_lookup(const char *id);
/* NULL-terminated list of the built-in providers, safest first. */
const al_provider_ops *const *al_provider_builtins(void);

/* ---- provider modules --------------------------------------------------
 * A module is a shared object that defines one function with this name
 * and type, returning its operations table (static storage; the module
 * stays loaded for the life of the process).  Build it -shared -fPIC
 * without linking libairlock: its al_ references resolve against the host
 * that loads it (the airlock binary exports the public API, as does
 * libairlock.so.0), and it may use only the API these headers declare. */
#define AL_PROVIDER_MODULE_ENTRY "al_provider_module_entry"
typedef const al_provider_ops *(*al_provider_module_entry_fn)(void);
/* Defined by a module, never by libairlock. */
const al_provider_ops *al_provider_module_entry(void);

/* Loads the provider module at `path` that must provide the provider
 * named `id`, and returns its table in *out.  The path must be absolute;
 * the file must be a regular file owned by root or by this user and
 * writable by no one else, and so must every directory above it (a
 * root-owned sticky directory, such as /tmp, is accepted).  A file already
 * loaded is not loaded again.  Failures are AL_ERR_INVALID_CONFIG (a bad
 * path, an id that names a built-in provider or differs from the table's)
 * or AL_ERR_UNAVAILABLE (missing, untrusted, not loadable, no entry
 * symbol, another ABI version or table size, a missing operation); the
 * reason is "module" and the message says which. */
int al_provider_module_load(const char *id, const char *path,
			    const al_provider_ops **out, al_error **err);

#ifdef __cplusplus
}
#endif
#endif
