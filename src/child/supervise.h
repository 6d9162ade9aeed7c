/* Internal: the supervision loop shared by the process-running providers.
 *
 * A provider starts the program its own way (a shepherd process for
 * `local`, an init inside namespaces for `sandbox`) and hands over the
 * pipes and a way to signal the whole tree.  The loop feeds stdin, drains
 * stdout/stderr (keeping at most the cap per stream and discarding the rest,
 * so the program never blocks on a full pipe), enforces the wall deadline
 * (TERM to the tree, then KILL after the grace), honours the cancel token,
 * and collects the exit report.
 */
#ifndef AL_CHILD_SUPERVISE_H
#define AL_CHILD_SUPERVISE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/provider.h>

/* Written once by the shepherd/init on the status pipe when the main
 * program has ended and its tree is gone. */
typedef struct al_exit_report {
	uint32_t magic;	     /* AL_EXIT_REPORT_MAGIC */
	int32_t wait_status; /* of the main program, as from waitpid() */
	uint64_t cpu_user_us;
	uint64_t cpu_sys_us;
	uint64_t max_rss_bytes;
} al_exit_report;

#define AL_EXIT_REPORT_MAGIC 0x616c7831u

typedef struct al_child {
	pid_t pid;     /* the shepherd / init */
	int pidfd;     /* pidfd of pid; readable when it exits */
	int stdin_fd;  /* write end of the program's stdin, or -1 */
	int stdout_fd; /* read ends */
	int stderr_fd;
	int status_fd; /* read end of the exit report pipe */
	/* Signals the whole tree: SIGTERM (polite, forwarded to every
	 * process) or SIGKILL (everything, verified gone on return). */
	int (*signal_tree)(void *ctx, int sig);
	void *signal_ctx;
} al_child;

typedef struct al_supervise_opts {
	const al_bytes *stdin_data; /* NULL: stdin closed empty at once */
	uint64_t output_cap;	    /* bytes kept per stream */
	uint64_t wall_ms;
	uint64_t grace_ms;
	al_cancel *cancel;
	al_output_fn on_output;
	void *on_output_ctx;
	/* Called once from the loop when the program is still running
	 * later_ms after the start (NULL: never): work that a short run
	 * should not pay for, such as starting a helper thread. */
	void (*later)(void *ctx);
	void *later_ctx;
	uint64_t later_ms;
	/* End once the report is in and the output pipes are closed, not
	 * when the shepherd/init has finished exiting: the report is written
	 * after the tree is gone, and what the init does after it is its
	 * own exit (tearing down its namespaces and its copy of the
	 * caller's memory).  The init is then left to the caller to reap
	 * (al_supervise_result.init_exiting). */
	bool end_at_report;
} al_supervise_opts;

typedef enum al_end {
	AL_END_EXITED = 0, /* report.wait_status says how */
	AL_END_TIMED_OUT,
	AL_END_CANCELLED,
	AL_END_INTERRUPTED,
	AL_END_LOST /* the shepherd/init died without a report */
} al_end;

typedef struct al_supervise_result {
	al_end end;
	bool have_report;
	al_exit_report report;
	al_bytes output[2];
	bool truncated[2];
	uint64_t output_seen[2];
	uint64_t wall_ms;
	/* end_at_report only: the loop ended on a valid report, and
	 * child->pid and child->pidfd were left as they were for the
	 * caller, who must reap the shepherd/init (al_child_reap). */
	bool init_exiting;
} al_supervise_result;

/* Runs the loop to the end: on return the tree is gone, the shepherd/init
 * is reaped and every fd in child is closed (but see end_at_report).  signal_ctx is left to the
 * provider that made it. */
int al_supervise(al_child *child, const al_supervise_opts *opts,
		 al_supervise_result *out, al_error **err);
void al_supervise_result_clear(al_supervise_result *r);
/* Waits for the shepherd/init behind pidfd to finish exiting, reaps it
 * through the pidfd (never by pid, which the embedder may have reaped
 * and reused) and closes pidfd.  For init_exiting. */
void al_child_reap(int pidfd);

/* Maps a supervise result onto a contract result: outcome, exit code or
 * signal, reason (cpu_limit for SIGXCPU, file_size_limit for SIGXFSZ),
 * output and usage.  Takes ownership of r->output. */
int al_supervise_to_result(al_supervise_result *r, al_result *res);

#endif
