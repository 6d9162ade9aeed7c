/* Internal: cgroups, the one module for both users (docs/architecture.md).
 *
 * The sandbox (al_sb_cg*): discovery finds, for each controller, a
 * hierarchy where a child of our own cgroup can be created and limited
 * (the trial's verdict is cached per boot, see sandbox/observation_cache.h): v2
 * when the controller is enabled beneath our cgroup in the unified
 * hierarchy, else its v1 hierarchy; a hybrid machine mixes the two per
 * controller.  The unified hierarchy is also used, even without
 * controllers, for cgroup.kill, cgroup.events and cpu.stat.  What differs
 * between v1 and v2 (limit files, usage files) is in one manager per
 * version (v1.c, v2.c), picked per controller (cgroup.c).
 *
 * The durable run (al_run_cgroup_*): the daemon creates one cgroup per run
 * beneath its own cgroup in the unified hierarchy, `airlock-run-<id>`, and
 * starts the supervisor in it; everything the run starts stays inside
 * (the sandbox's own cgroups are created beneath it).  cgroup.events says
 * when the whole tree is gone and cgroup.kill ends it, even after the
 * supervisor itself died.  Without a usable v2 hierarchy (no permission,
 * no cgroup2 mount) runs have no cgroup and the daemon relies on the
 * supervisor's identity (run_tree.c).
 *
 * Placing a new process straight into a cgroup at clone time
 * (al_cg_clone3) serves both.  Only cgroups created here are ever
 * written to or removed. */
#ifndef AL_CGROUP_CGROUP_H
#define AL_CGROUP_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>

enum al_sb_ctrl { AL_CG_MEMORY = 0, AL_CG_PIDS, AL_CG_CPU, AL_CG__N };

typedef enum al_sb_cgver { AL_CG_NONE = 0, AL_CG_V1, AL_CG_V2 } al_sb_cgver;

typedef struct al_sb_cgroups {
	char *v2_base;		    /* our cgroup in the unified tree, or NULL */
	bool v2_kill;		    /* cgroup.kill usable in v2_base's children */
	al_sb_cgver ver[AL_CG__N];  /* where each controller is used */
	char *v1_base[AL_CG__N];    /* our cgroup in the controller's v1 tree */
	char v2_enabled[256];	    /* v2_base's cgroup.subtree_control */
	/* v1 memory: memory.kmem.tcp.limit_in_bytes can be written in a
	 * run's cgroup (al_sb_cgrun_limit_sockets) */
	bool v1_socket;
} al_sb_cgroups;

/* What the trials found, as cached (observation_cache.h). */
typedef struct al_sb_cgverdict {
	bool v2_ok;		   /* a child of v2_base could be created */
	bool v2_kill;
	al_sb_cgver ver[AL_CG__N];
	bool v1_socket;		   /* memory.kmem.tcp limit writable (v1) */
} al_sb_cgverdict;

/* Finds our cgroup in each hierarchy from /proc/self/cgroup and
 * /proc/self/mountinfo: paths only, nothing is created. */
void al_sb_cgroups_locate(al_sb_cgroups *cg);
/* Checks each located hierarchy by creating (and removing) a test child:
 * a controller whose child cannot be created or limited stays AL_CG_NONE.
 * Never fails for "not available". */
void al_sb_cgroups_trial(al_sb_cgroups *cg, al_sb_cgverdict *v);
/* Takes a verdict (fresh from the trial, or cached for the same located
 * paths) into cg. */
void al_sb_cgroups_apply(al_sb_cgroups *cg, const al_sb_cgverdict *v);
void al_sb_cgroups_clear(al_sb_cgroups *cg);
const char *al_sb_cgver_name(al_sb_cgver v);

/* The bounds a run that names no memory or pids limit still gets, where
 * the controller has a cgroup (explicit limits always win). */
#define AL_SB_DEFAULT_MEMORY_BYTES (512ull * 1024 * 1024)
#define AL_SB_DEFAULT_PIDS 256u

struct al_sb_cgreads;

typedef struct al_sb_cgrun {
	char *v2_dir;		/* created unified cgroup, or NULL */
	int v2_fd;		/* O_DIRECTORY fd of v2_dir for CLONE_INTO_CGROUP */
	char *v1_dir[AL_CG__N]; /* created v1 cgroups (NULL when none) */
	/* The files read after a run, kept open (al_sb_cgrun_keep_reads);
	 * NULL: read by path. */
	struct al_sb_cgreads *reads;
} al_sb_cgrun;

/* A run's cgroup name, "airlock-PID-RANDOM-tag": unique on the host.  A
 * pid and a counter alone repeat once pids wrap, and a cgroup can outlive
 * its creator (a tree that would not die), so a new run found it taken. */
void al_sb_cgrun_name(char *buf, size_t size, const char *tag);
/* The two halves of al_sb_cgrun_create: the cgroups alone, without limits
 * (made ahead of a run, sandbox/cgroups_ahead.h; never leaves a partial
 * set), and the limits of cgroups that hold no process yet (0 or a
 * negative errno; the caller removes them on failure). */
int al_sb_cgrun_make(const al_sb_cgroups *cg, const char *name,
		     al_sb_cgrun *run, al_error **err);
int al_sb_cgrun_limit(const al_sb_cgroups *cg, const al_sb_cgrun *run,
		      const al_limits *limits);
/* Opens the files read once a run is over (the unified cgroup.procs,
 * the usage files) and the v1 `tasks` files (al_sb_cgrun_open_tasks then copies
 * those) and keeps them with the set, so that reading one then is a
 * pread at offset 0 (which the kernel answers afresh) instead of a path
 * walk and an open: for sets made ahead of a run.  A file that does not
 * exist is remembered as absent.  0, or a negative errno with nothing
 * kept (the files are then read by path). */
int al_sb_cgrun_keep_reads(al_sb_cgrun *run);
/* Creates the run's cgroups named `name` and writes the limits that are
 * set (memory_bytes with swap off, pids).  Never leaves a partial set. */
int al_sb_cgrun_create(const al_sb_cgroups *cg, const char *name,
		       const al_limits *limits, al_sb_cgrun *run,
		       al_error **err);
/* Writes the limits again into cgroups that hold processes already (a
 * warm pool member taking its request's limits): the same values as
 * al_sb_cgrun_create would have written.  Lowering memory below what is
 * in use fails (EBUSY on v1). */
int al_sb_cgrun_relimit(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			const al_limits *limits);
/* Bounds the socket buffer memory of the run's processes: on v1 the
 * memory cgroup's memory.kmem.tcp.limit_in_bytes (which also turns the
 * kernel's per-cgroup socket accounting on: without it v1 charges socket
 * buffers to no cgroup at all).  On v2 there is nothing to write (socket
 * buffers are charged to memory.max) and without a memory controller
 * nothing can be: 0.  Write it before the run's first socket exists
 * (sockets made earlier stay uncharged).  0 or a negative errno. */
int al_sb_cgrun_limit_sockets(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			      uint64_t bytes);
/* Opens the `tasks` file of each distinct v1 cgroup for writing, so a
 * single-threaded child can move itself (al_sb_cgrun_join_self) instead of
 * being moved: writing a pid to cgroup.procs takes the kernel's global
 * threadgroup lock for write, which waits for an RCU grace period on
 * every run, while a thread moving itself through `tasks` does not.
 * Fills fds (AL_CG__N entries, -1 when unused); returns how many were
 * opened, or a negative errno (nothing left open). */
int al_sb_cgrun_open_tasks(const al_sb_cgrun *run, int fds[AL_CG__N]);
void al_sb_cgrun_close_tasks(int fds[AL_CG__N]);
/* In the child: writes "0" (the calling thread) to each fd.
 * Async-signal-safe. */
int al_sb_cgrun_join_self(const int fds[AL_CG__N]);
/* Moves pid into v2 when it was not cloned there. */
int al_sb_cgrun_attach_v2(const al_sb_cgrun *run, pid_t pid);
/* Kills every process in the run's cgroups (cgroup.kill; else SIGKILL to
 * each listed pid). */
void al_sb_cgrun_kill(const al_sb_cgrun *run);
/* true when no process is left in any of the run's cgroups. */
bool al_sb_cgrun_empty(const al_sb_cgrun *run);
/* The same, but pid (as this process sees it) may still be there: an
 * init that reported its tree gone and is exiting. */
bool al_sb_cgrun_empty_but(const al_sb_cgrun *run, pid_t pid);
/* Whether no process of a run started in these cgroups is left but pid:
 * where there is a unified cgroup, what it holds (a run's init is cloned
 * into it or the launch fails, and nothing of the run can move itself
 * out, so it holds every process of the run), else what each v1 one
 * holds.  For a run's end; removal waits for every hierarchy. */
bool al_sb_cgrun_run_gone_but(const al_sb_cgrun *run, pid_t pid);

typedef struct al_sb_cgusage {
	bool have_cpu;
	uint64_t cpu_user_us, cpu_sys_us;
	bool have_peak;
	uint64_t peak_memory_bytes;
	bool oom_killed;
	bool pids_max_hit;
} al_sb_cgusage;

void al_sb_cgrun_usage(const al_sb_cgrun *run, al_sb_cgusage *u);

/* ---- Removal (cgroup.c, sweep.c) ---------------------------------- */

/* How long a removal waits for a run's tree that is still dying (a
 * SIGKILLed process leaves its cgroups only at the end of its exit, after
 * its memory and files are released, which under load takes seconds). */
#define AL_CG_SETTLE_MS 10000
/* Removes the run's cgroups.  One still busy: the run's cgroups are
 * killed again and waited for (at most AL_CG_SETTLE_MS) until verifiably
 * empty (the unified cgroup.events says populated 0 and every
 * cgroup.procs is empty), and the removal retried; one that still stays
 * is handed to the sweep.  Returns 0 or -EBUSY when one could not be
 * removed. */
int al_sb_cgrun_destroy(al_sb_cgrun *run);

/* ---- a durable run's tree in the unified hierarchy (run_tree.c) ---- */

/* Our own cgroup directory in the unified hierarchy when children can be
 * made there; NULL (and 0) when not.  Caller frees. */
int al_run_cgroup_base(char **out);
/* Creates BASE/airlock-run-<run_id>.<tag>, which must not exist yet
 * (-EEXIST); *dir (caller frees).  The tag (AL_RUN_CGROUP_TAG_LEN hex, from the
 * daemon's state directory) tells apart daemons that run under the same
 * id on one machine. */
#define AL_RUN_CGROUP_TAG_LEN 8
int al_run_cgroup_create(const char *base, const char *run_id, const char *tag,
		    char **dir);
/* An idle supervisor's cgroup (docs/durability.md, "Idle supervisors"):
 * BASE/airlock-run-sup-<nonce>.<tag>, made when it is started, before
 * the run it will serve has an id; the run records it at hand-off. */
int al_run_cgroup_create_idle(const char *base, const char *nonce, const char *tag,
			 char **dir);
/* true when dir is exactly the run's cgroup under the unified mount: the
 * run id's, or the idle one named by the run's nonce (a recorded path is
 * checked before it is ever written to). */
bool al_run_cgroup_valid(const char *dir, const char *run_id, const char *nonce);
/* In an idle supervisor that ends without a run: moves the calling
 * process to the parent of its own idle cgroup, ends whatever is left in
 * it and removes it.  0, or negative errno; a process that is not in an
 * idle supervisor's cgroup touches nothing (-ENOENT). */
int al_run_cgroup_leave_idle(void);
/* 1 when a process is left anywhere in the subtree, 0 when none (or the
 * cgroup is gone), negative errno when it cannot be told. */
int al_run_cgroup_populated(const char *dir);
/* Kills every process in the subtree and waits (at most timeout_ms) until
 * none is left.  0 when the tree is verified gone, -ETIMEDOUT else. */
int al_run_cgroup_kill_wait(const char *dir, int timeout_ms);
/* Removes the (empty) subtree, deepest first; 0, or negative errno. */
int al_run_cgroup_remove(const char *dir);

/* ---- placing a child at clone time (clone.c) ---------------------- */

/* clone3(ca), straight into the cgroup cg_dirfd when it is >= 0
 * (CLONE_INTO_CGROUP): joining afterwards through cgroup.procs is a
 * migration, which waits for an RCU grace period while holding a lock
 * every fork and exit on the machine takes.  When the kernel refuses the
 * placement itself (an old kernel, a cgroup that takes no direct
 * placement: any error but ENOMEM and EAGAIN) the clone is tried again
 * without it, and the caller joins the child later.  *placed: the child
 * is in the cgroup.  Returns as clone3 does (0 in the child). */
struct clone_args;
pid_t al_cg_clone3(struct clone_args *ca, int cg_dirfd, bool *placed);
/* The same vfork-style (core/clone_vm.h): the child runs fn(arg) on the
 * given stack in the caller's memory until its execve.  Returns the pid
 * after that execve (or the child's end), or -1 with errno; ENOSYS when
 * this build has no vfork-style clone3 or the kernel no clone3: the
 * caller clones plainly. */
pid_t al_cg_clone3_vm(struct clone_args *ca, int cg_dirfd, bool *placed,
		      int (*fn)(void *), void *arg, void *stack, size_t size);

#endif
