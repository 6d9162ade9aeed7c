/* Internal: the `container` provider (docs/containers.md).
 *
 * One provider drives an OCI runtime's command line: a generated
 * config.json (spec.c), a private runtime root and a keeper process that
 * owns the container (keeper.c), each runtime variant's own construction
 * (variants.c), a probe that runs a real container (probe.c) and the
 * operations (provider.c). */
#ifndef AL_CONTAINER_H
#define AL_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/provider.h>

#include "child/rundir.h"
#include "child/supervise.h"

/* ---- variants ------------------------------------------------------- */

typedef struct al_ct_variant {
	const char *name;   /* the "runtime" config value */
	const char *binary; /* looked up in PATH, then /usr/sbin, /usr/bin */
	/* Global options before the subcommand, after --root. */
	const char *const *global_args;
	/* The runtime applies the OCI seccomp section itself (gVisor answers
	 * syscalls in its own kernel and ignores it). */
	bool oci_seccomp;
	/* `run --preserve-fds 1` passes the init's report descriptor;
	 * without it the report goes through a file (airlock-init). */
	bool preserve_fds;
	/* masked and read-only /proc paths apply: gVisor's /proc is its own
	 * kernel's (nothing of the host's), and its read-only paths make
	 * /proc unreadable */
	bool proc_paths;
	/* the runtime honours the seccomp section's errnoRet (gVisor's
	 * answers EPERM whatever it says: rows meant to say ENOSYS, such as
	 * clone3's that lets glibc fall back to clone, are left out) */
	bool seccomp_errno;
	/* AL_LIMIT_* bits the runtime does not enforce on the program
	 * (gVisor: no RLIMIT_CPU, and the cgroup bounds its own processes,
	 * not the program's memory or pids) */
	unsigned unenforced;
	/* the Docker Engine through its API (docker.c), not a CLI runtime */
	bool engine;
} al_ct_variant;

/* The variant named `name`, or NULL. */
const al_ct_variant *al_ct_variant_find(const char *name);
/* The names, for messages: "runc, crun, runsc". */
const char *al_ct_variant_names(void);
/* The runtime's executable: absolute path (caller frees), or NULL when
 * it is not installed. */
char *al_ct_variant_locate(const al_ct_variant *v);
/* argv for `BINARY --root ROOT GLOBAL... SUB ARGS...` (caller frees the
 * vector with al_ct_strv_free). */
char **al_ct_variant_argv(const al_ct_variant *v, const char *binary,
			  const char *root, const char *const *sub);

/* Frees a NULL-terminated vector. */
void al_ct_strv_free(char **v);

/* ---- configuration -------------------------------------------------- */

typedef struct al_ct_config {
	const al_ct_variant *variant; /* "runtime", default runc */
	char *runtime_name;	      /* as configured (for messages) */
	uint32_t uid_base;	      /* "uid_base", default 200000 */
	uint32_t uid_count;	      /* "uid_count", default 1000 */
	char *run_dir;		      /* "run_dir", default: al_rundir's */
	uint64_t tmp_bytes;	      /* "tmp_bytes", default 64 MiB */
	char *init_path; /* "init_path", default: al_ct_init_locate() */
	char *images_dir; /* "images_dir", default: al_ct_images_default_dir() */
	char *docker_socket; /* "docker_socket", default /run/docker.sock */
} al_ct_config;

int al_ct_config_parse(const char *json, al_ct_config *cfg, al_error **err);
void al_ct_config_clear(al_ct_config *cfg);

/* The container's pid 1 (airlock-init): beside the running executable,
 * else in the module directory; NULL when neither has it.  Caller
 * frees. */
char *al_ct_init_locate(void);

/* ---- cgroups -------------------------------------------------------- */

/* The cgroupsPath a container gets: beneath the deepest of our own
 * cgroups in the memory, pids and cpu hierarchies, when every other is
 * its ancestor (one path serves every hierarchy); *out (caller frees)
 * is that parent.  -ENOENT when our cgroups do not nest. */
int al_ct_cgroup_parent(char **out);

/* ---- the OCI bundle ------------------------------------------------- */

typedef struct al_ct_spec_in {
	const al_request *req;
	const al_rundir *rd;	  /* code, workspace, tmp on the host */
	const char *bundle_dir;	  /* RUN/bundle: config.json, rootfs */
	char *const *argv;
	char *const *envp;
	char *const *extra_roots; /* the toolchain's roots */
	uid_t uid;		  /* the program's uid and gid */
	const char *cgroups_path;
	const char *netns_path;	  /* the keeper's network namespace */
	uint64_t tmp_bytes;
	bool oci_seccomp;
	bool proc_paths;	  /* the variant's proc_paths */
	bool seccomp_errno;	  /* the variant's seccomp_errno */
	bool build;		  /* /build writable (a build step) */
	bool has_build_dir;
	const char *inbox_dir;	  /* NULL: no inbox */
	const char *acks_dir;	  /* host RUN/acks, bound at /inbox-acks */
	const char *init_path;	  /* airlock-init on the host */
	const char *report_dir;	  /* NULL: the report goes to fd 3 */
	/* an image's root (read-only, shared): the run's own mounts only,
	 * nothing of the host's system dirs; NULL: the host's /usr */
	const char *image_rootfs;
} al_ct_spec_in;

/* Where airlock-init and its report file are inside the container. */
#define AL_CT_INIT_PATH "/dev/.airlock-init"
#define AL_CT_REPORT_DIR "/dev/.airlock-report"
#define AL_CT_REPORT_FILE AL_CT_REPORT_DIR "/report"

/* Writes bundle_dir/config.json and prepares bundle_dir/rootfs (an empty
 * directory with the system dirs' symlinks; bound read-only).  0 or a
 * negative errno with err set. */
int al_ct_spec_write(const al_ct_spec_in *in, al_error **err);

/* ---- the keeper ----------------------------------------------------- */

/* A forked process that owns one container: it makes a fresh network
 * namespace (loopback up when asked), starts the runtime detached with
 * the program's stdio on pipes (never a terminal), becomes the parent of
 * the container's first process (a child subreaper) and reports its wait
 * status and the tree's usage like the shepherd does. */
typedef struct al_ct_keeper {
	pid_t pid;
	char netns[64]; /* /proc/<keeper>/ns/net */
	int go_fd;	/* write end: the bundle is ready */
	int note_fd;	/* read end: 'F' when the runtime failed */
	al_child child;
} al_ct_keeper;

typedef struct al_ct_launch {
	char *const *runtime_argv; /* `run --detach --pid-file ... ID` */
	bool loopback;
	bool stdin_pipe;
	const char *pid_file;
	/* the init's exit report: a pipe passed as fd 3, or this host file
	 * (report_fd false) */
	bool report_fd;
	const char *report_file;
	/* `runtime kill ID TERM`: the polite stop goes through the runtime
	 * to the container's init (gVisor's processes are not the host's) */
	char *const *term_argv;
} al_ct_launch;

/* Forks the keeper, which waits (in its network namespace) for
 * al_ct_keeper_go.  0 or a negative errno with err set. */
int al_ct_keeper_start(const al_ct_launch *l, al_ct_keeper *k,
		       al_error **err);
/* The bundle is written: start the runtime.  0 or a negative errno. */
int al_ct_keeper_go(al_ct_keeper *k);
/* After supervision: true when the runtime could not start the
 * container (its exit report is then not the program's). */
bool al_ct_keeper_start_failed(al_ct_keeper *k);
void al_ct_keeper_close_note(al_ct_keeper *k);
/* Ends a keeper that was never supervised. */
void al_ct_keeper_discard(al_ct_keeper *k);

/* The runtime's exit when it could not start the container is reported
 * as this wait status (exit code AL_CT_START_FAILED). */
#define AL_CT_START_FAILED 125

/* Runs `argv` to its end, stdin /dev/null; its exit code (128+N for a
 * signal), or a negative errno.  out_text (NULL: discarded) gets at most
 * cap bytes of its combined output, NUL-terminated (caller frees). */
int al_ct_run_quiet(char *const *argv, char **out_text, size_t cap);

/* ---- images (images.c) ---------------------------------------------- */

#include <jansson.h>

/* [a-z0-9._-], 1 to 64 bytes, not starting with '.' or '-'. */
bool al_ct_image_name_ok(const char *name);
/* The SHA-256 of the tree's canonical listing. */
int al_ct_tree_digest(const char *dir, char hex[65]);
/* A fresh directory beneath STORE/.tmp for a build or import. */
int al_ct_image_tmpdir(const char *store, char **out);
/* Stores the tree at rootfs (moved, never copied) under its digest and
 * points name at it. */
int al_ct_image_store(const char *store, const char *name, const char *rootfs,
		      const char *source, char digest[65], al_error **err);
/* The digest name points at, and its rootfs (caller frees; NULL: not
 * wanted).  -ENOENT when there is no such image. */
int al_ct_image_resolve(const char *store, const char *name, char digest[65],
			char **rootfs);
/* [{"name", "digest"}...], by name. */
int al_ct_image_list(const char *store, json_t **out);
/* $AIRLOCK_STATE_DIR/images, else /var/lib/airlock/images. */
char *al_ct_images_default_dir(void);

/* ---- the Docker Engine variant (docker.c, in the remote module) ---- */

#define AL_CT_DOCKER_IMAGE "airlock-hostusr:3"

typedef struct al_ct_docker_in {
	const char *socket;
	const al_request *req;
	const char *name;	   /* the container's name */
	char *const *argv;
	char *const *envp;
	char *const *binds;	   /* "SRC:DST:ro|rw", NULL-terminated */
	const char *tmp_opts;	   /* /tmp's tmpfs options */
	const char *seccomp;	   /* the profile (JSON), or NULL */
	uid_t uid;
	uint64_t memory, pids;
	al_cancel *cancel;
} al_ct_docker_in;

typedef struct al_ct_engine {
	int (*version)(const char *socket, char **version);
	int (*run)(const al_ct_docker_in *in, al_result *res, al_error **err);
} al_ct_engine;

const al_ct_engine *al_ct_docker_engine(void);
/* The engine: linked in (libairlock), else from the remote provider's
 * module beside the executable or in the module directory (the CLI);
 * NULL when neither has it. */
const al_ct_engine *al_ct_engine_load(void);

/* ---- probe ---------------------------------------------------------- */

/* Observed facts of cfg's variant: a real container is run. */
int al_ct_probe_facts(const al_ct_config *cfg, al_facts **out,
		      al_error **err);

/* One container run of argv as the provider runs programs (used by the
 * probe and the provider): fills res.  seq names it uniquely. */
typedef struct al_ct_run {
	const al_ct_config *cfg;
	const al_exec *exec;
	const al_request *req;
	const al_rundir *rd;
	char *const *argv;
	char *const *envp;
	char *const *extra_roots;
	uid_t uid;
	bool build, has_build_dir, with_stdin;
	const char *name; /* unique container id */
	/* NULL, or gets the runtime's message when it could not start the
	 * container (caller frees) */
	char **start_error;
	al_output_fn on_output;
	void *on_output_ctx;
	const char *image_rootfs; /* NULL: the host's /usr */
} al_ct_run;

int al_ct_run_step(const al_ct_run *r, al_result *res, al_error **err);

#endif
