/* Internal: run directories made ahead (docs/durability.md, "Run
 * directories made ahead").
 *
 * Every durable run's directory starts with the same entries: inbox/,
 * acks/, the result's reserve, supervisor.log and the temp files its
 * records are written through.  On a file system whose inode allocation
 * is slow (ext4 walking past recently freed inodes) making them was the
 * largest part of the daemon's own CPU per run.  A thread at SCHED_IDLE
 * makes them ahead, each spare in a slot directory of its own under
 * STATE_DIR/spare-runs (so it never holds a lock that admission waits
 * for), and admission moves a ready spare to runs/<id> with one rename;
 * with none ready the run makes its directory as before. */
#ifndef AL_SERVER_RUN_SPARES_H
#define AL_SERVER_RUN_SPARES_H

#include <stdint.h>

typedef struct al_run_spares al_run_spares;

/* The name of the spares' directory in the state directory. */
#define AL_SPARE_RUNS_DIR "spare-runs"
/* Upper bound of the "spare_run_dirs" setting. */
#define AL_RUN_SPARES_MAX 64u

/* Removes what earlier daemons left in STATE_DIR/spare-runs (each
 * daemon's spares are in a directory named by its epoch, locked while it
 * lives), makes `count` slots in our own and starts the thread that
 * fills them.  count 0: *out is NULL and nothing is started.  runs_fd is
 * duplicated. */
int al_run_spares_start(int state_fd, int runs_fd, uint64_t epoch,
			unsigned count, al_run_spares **out);
/* Moves a ready spare to runs/<run_id> (never over an existing entry).
 * 0 when it did; -EAGAIN when none is ready or spares cannot be used
 * (the caller makes the directory itself); -EEXIST when runs/<run_id>
 * exists; -EINVAL for an invalid run id.  s may be NULL (-EAGAIN). */
int al_run_spares_take(al_run_spares *s, const char *run_id);
/* Spares taken and misses (none ready) since the start. */
void al_run_spares_counts(al_run_spares *s, unsigned long long *taken,
			  unsigned long long *missed);
/* Stops the thread and frees s; the spares stay on disk for the next
 * start to remove.  NULL is fine. */
void al_run_spares_stop(al_run_spares *s);

#endif
