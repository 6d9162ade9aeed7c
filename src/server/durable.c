/* The daemon's side of durable runs: create, launch, watch, control,
 * collect, finish and clean up (see durable.h). */
#include "server/durable.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <linux/sched.h>

#include <airlock/json.h>

#include "core/log.h"
#include "core/util.h"
#include "child/artifacts.h"
#include "child/rundir.h"
#include "child/shepherd.h"
#include "supervisor/record_file.h"
#include "supervisor/fault.h"
#include "supervisor/identity.h"
#include "supervisor/inbox.h"
#include "cgroup/cgroup.h"
#include "supervisor/toolbelt.h"
#include "server/run_spares.h"

extern char **environ;

/* How long a stop waits for the tree to be verified gone after a kill. */
#define KILL_WAIT_MS 10000
/* How long a supervisor that recorded its result gets to exit. */
#define EXIT_WAIT_MS 5000

struct al_durable {
	char *state_dir;
	int runs_fd;
	uint64_t epoch;
	char *cg_base; /* NULL: runs get no cgroup */
	char cg_tag[AL_RUN_CGROUP_TAG_LEN + 1]; /* from the state directory */
	al_run_spares *spares; /* NULL: none made ahead */
};

struct al_idle_sup {
	pid_t pid;
	uint64_t starttime;
	int pidfd; /* -1 when none */
	int sock;  /* our end of its socketpair */
	/* The nonce it was started with; its cgroup is named by it. */
	char nonce[AL_NONCE_HEX + 1];
	char *cgroup; /* NULL: none */
	/* Runs it may serve in all (docs/durability.md, "A supervisor that
	 * serves several runs"), and has been handed. */
	unsigned runs, served;
};

struct al_drun {
	al_durable *d;
	char run_id[40];
	int dirfd;
	int lock_fd; /* -1 unless locked */
	al_recovery rec;
	al_identity id;
	bool have_id;
	bool own_child; /* launched by this process: reap it */
	int pidfd;	/* -1 when none (or no pidfds) */
	bool ended;
	int out_fd;
	uint64_t out_off;
	bool handed; /* to an idle supervisor */
	/* An idle supervisor that may serve another run after this one:
	 * kept (its socket says "ended" when this run's tree is gone), NULL
	 * otherwise. */
	al_idle_sup *idle;
	bool sup_done; /* it said so: it lives on, alone in its cgroup */
};

int al_durable_open(const char *state_dir, al_durable **out, al_error **err)
{
	al_durable *d = calloc(1, sizeof(*d));
	int rc;

	*out = NULL;
	if (d == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	d->runs_fd = -1;
	/* Absolute: the supervisor and the sandbox's mounts use it. */
	if ((d->state_dir = realpath(state_dir, NULL)) == NULL) {
		rc = al_error_set(err, AL_ERR_IO, errno, "state_dir",
				  "cannot resolve the state directory: %s",
				  strerror(errno));
		goto fail;
	}
	if ((rc = al_runs_dir_open(d->state_dir, &d->runs_fd)) < 0) {
		rc = al_error_set(err, AL_ERR_IO, -rc, "state_dir",
				  "cannot open the runs directory: %s",
				  strerror(-rc));
		goto fail;
	}
	if ((rc = al_epoch_next(d->state_dir, &d->epoch)) < 0) {
		rc = al_error_set(err, AL_ERR_IO, -rc, "state_dir",
				  "cannot take the next epoch: %s",
				  strerror(-rc));
		goto fail;
	}
	/* Two daemons (a front and its remote back) may run under one id. */
	char hex[65];
	al_sha256_hex(d->state_dir, strlen(d->state_dir), hex);
	snprintf(d->cg_tag, sizeof(d->cg_tag), "%.*s", AL_RUN_CGROUP_TAG_LEN, hex);
	if ((rc = al_run_cgroup_base(&d->cg_base)) < 0) {
		rc = al_error_set(err, AL_ERR_INTERNAL, -rc, NULL,
				  "out of memory");
		goto fail;
	}
	*out = d;
	return 0;
fail:
	al_durable_close(d);
	return rc;
}

void al_durable_close(al_durable *d)
{
	if (d == NULL)
		return;
	al_run_spares_stop(d->spares);
	if (d->runs_fd >= 0)
		close(d->runs_fd);
	free(d->state_dir);
	free(d->cg_base);
	free(d);
}

int al_durable_spares_start(al_durable *d, unsigned count)
{
	if (d->spares != NULL || count == 0)
		return 0;
	int state_fd = open(d->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state_fd < 0)
		return -errno;
	int rc = al_run_spares_start(state_fd, d->runs_fd, d->epoch, count,
				     &d->spares);
	close(state_fd);
	return rc;
}

void al_durable_spares_counts(al_durable *d, unsigned long long *taken,
			      unsigned long long *missed)
{
	al_run_spares_counts(d != NULL ? d->spares : NULL, taken, missed);
}

uint64_t al_durable_epoch(const al_durable *d)
{
	return d->epoch;
}

static al_drun *drun_new(al_durable *d, const char *run_id)
{
	al_drun *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->d = d;
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	r->dirfd = r->lock_fd = r->pidfd = r->out_fd = -1;
	return r;
}

static void idle_release(al_idle_sup *i);

void al_drun_free(al_drun *r)
{
	if (r == NULL)
		return;
	if (r->idle != NULL && r->sup_done) {
		/* Done with this run and not given back: it ends (its socket
		 * closes), is reaped and its cgroup removed. */
		r->idle->pidfd = r->pidfd;
		r->pidfd = -1;
		al_idle_discard(r->idle);
	} else if (r->idle != NULL) {
		idle_release(r->idle);
	}
	r->idle = NULL;
	if (r->own_child && !r->ended && r->id.pid > 0) {
		/* Never left unreaped: it may still run (it is durable), so
		 * only a finished one is reaped here. */
		waitpid(r->id.pid, NULL, WNOHANG);
	}
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	if (r->pidfd >= 0)
		close(r->pidfd);
	if (r->out_fd >= 0)
		close(r->out_fd);
	if (r->dirfd >= 0)
		close(r->dirfd);
	al_recovery_clear(&r->rec);
	free(r);
}

const al_recovery *al_drun_record(const al_drun *r)
{
	return &r->rec;
}

const char *al_drun_id(const al_drun *r)
{
	return r->run_id;
}

int al_drun_lock(al_drun *r)
{
	if (r->lock_fd >= 0)
		return 0;
	int fd = al_record_file_lock_dir(r->dirfd);
	if (fd < 0)
		return fd;
	r->lock_fd = fd;
	return 0;
}

void al_drun_unlock(al_drun *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	r->lock_fd = -1;
}

/* ---- creating -------------------------------------------------------- */

int al_drun_create(al_durable *d, const al_launch_spec *s, al_drun **out,
		   al_error **err)
{
	al_drun *r = drun_new(d, s->run_id);
	bool made = false;
	int rc;

	*out = NULL;
	if (r == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	/* A directory made ahead when one is ready (run_spares.h), else
	 * made here. */
	rc = al_run_spares_take(d->spares, s->run_id);
	if (rc == -EAGAIN)
		rc = al_run_dir_open(d->runs_fd, s->run_id, true, &r->dirfd);
	else if (rc == 0)
		rc = al_run_dir_open(d->runs_fd, s->run_id, false, &r->dirfd);
	if (rc < 0)
		goto fail;
	made = true;
	if ((rc = al_drun_lock(r)) < 0 || (rc = al_inbox_prepare(r->dirfd)) < 0)
		goto fail;
	/* RUN/work only where the provider's run directory stays on the
	 * state directory (else the supervisor's provider makes its own on
	 * the tmpfs: no disk inode per run for it). */
	if (al_run_work_tmpfs(s->provider, s->provider_module) == NULL &&
	    mkdirat(r->dirfd, AL_RF_WORK, 0700) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = al_toolbelt_persist_operations(r->dirfd,
						 s->operations_json)) < 0)
		goto fail;
	snprintf(r->rec.run_id, sizeof(r->rec.run_id), "%s", s->run_id);
	if (s->idle != NULL && s->idle->served == 0) {
		memcpy(r->rec.nonce, s->idle->nonce, sizeof(r->rec.nonce));
	} else if ((rc = al_nonce_new(r->rec.nonce)) < 0) {
		goto fail;
	} else if (s->idle != NULL) {
		/* A supervisor's later run: a nonce of its own (the process
		 * shows it in its argv from the hand-off on), the cgroup still
		 * named by the supervisor's first. */
		memcpy(r->rec.sup_nonce, s->idle->nonce,
		       sizeof(r->rec.sup_nonce));
	}
	if ((r->rec.tenant = strdup(s->tenant)) == NULL ||
	    al_strdup_opt(s->principal, &r->rec.principal) < 0 ||
	    (r->rec.provider = strdup(s->provider)) == NULL ||
	    (r->rec.request = strdup(s->request_json)) == NULL ||
	    al_strdup_opt(s->provider_config, &r->rec.config) < 0 ||
	    al_strdup_opt(s->provider_module, &r->rec.module) < 0 ||
	    al_strdup_opt(s->facts_json, &r->rec.facts) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	/* Without a cgroup the run still goes; the tree is then found by
	 * the supervisor's identity only (docs/durability.md). */
	if (s->idle != NULL) {
		/* The idle supervisor's own cgroup becomes the run's. */
		if (s->idle->cgroup != NULL &&
		    (r->rec.cgroup = strdup(s->idle->cgroup)) == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
	} else if (d->cg_base != NULL &&
		   al_run_cgroup_create(d->cg_base, s->run_id, d->cg_tag,
				   &r->rec.cgroup) < 0) {
		r->rec.cgroup = NULL;
	}
	r->rec.epoch = d->epoch;
	r->rec.created_ms = s->created_ms;
	r->rec.deadline_ms = s->deadline_ms;
	r->rec.build_cache_bytes = s->build_cache_bytes;
	r->rec.build_cache_shared = s->build_cache_shared;
	r->rec.parallel = s->parallel ? s->parallel : 1;
	/* The result's space, made here so that the record's directory
	 * sync makes its entry durable too: the supervisor's result then
	 * needs a sync of the file alone.  Without it (a full disk) the
	 * supervisor makes its own, as before. */
	(void)al_record_file_reserve_make(r->dirfd, AL_RF_RESERVE,
					  AL_RF_RESERVE_BYTES);
	/* One record, last, whole (a temp file renamed): from here on a
	 * daemon that dies leaves a run the next one classifies.  Synced
	 * once the supervisor is started (al_drun_make_durable): a machine
	 * crash before that ends whatever was launched, and the audit
	 * trail's run.started, synced before the launch, has the next
	 * daemon close the run as lost (docs/durability.md, "Recovery"). */
	if ((rc = al_recovery_write_unsynced(r->dirfd, &r->rec)) < 0)
		goto fail;
	*out = r;
	return 0;
fail:
	if (r->rec.cgroup != NULL && s->idle == NULL)
		al_run_cgroup_remove(r->rec.cgroup);
	if (made)
		al_remove_tree_at(d->runs_fd, s->run_id);
	al_drun_free(r);
	return al_error_set(err, AL_ERR_IO, rc < 0 ? -rc : EIO,
			    "workspace_setup_failed",
			    "cannot persist the run: %s",
			    strerror(rc < 0 ? -rc : EIO));
}

/* ---- launching ------------------------------------------------------- */

/* The secrets as a JSON array of "NAME=value" in a sealed memory file. */
/* The pipe a starting child reports a failed set-up on (closed by its
 * exec when all went well); the write end sits above every fd the child
 * rearranges.  0 or -errno; on failure nothing is left open. */
static int error_pipe(int err_fd[2])
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	int hi = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
	int rc = hi < 0 ? -errno : 0;
	close(p[1]);
	if (rc < 0) {
		close(p[0]);
		return rc;
	}
	err_fd[0] = p[0];
	err_fd[1] = hi;
	return 0;
}

static int secrets_memfd(const al_launch_spec *s)
{
	json_t *arr = json_array();
	char *text = NULL;
	int fd = -1, rc = 0;
	for (size_t i = 0; arr != NULL && i < s->n_host_env; i++)
		if (json_array_append_new(arr, json_string(s->host_env[i])) < 0)
			rc = -ENOMEM;
	if (arr == NULL || rc < 0 ||
	    (text = json_dumps(arr, JSON_COMPACT)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	fd = memfd_create("airlock-secrets", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			goto out;
		}
		off += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		rc = -errno;
out:
	if (text != NULL)
		al_explicit_free_str(text);
	json_decref(arr);
	if (rc < 0 && fd >= 0) {
		close(fd);
		fd = -1;
	}
	return rc < 0 ? rc : fd;
}

static void close_all(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The cgroup's directory and its cgroup.procs (for spawn_into). */
static int open_cgroup(const char *dir, int *dirfd, int *procs_fd)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	if ((*dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (*procs_fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	return 0;
}

/* In the forked child: only async-signal-safe calls until exec. */
static void child_exec(char *const argv[], int cg_fd, int log_fd,
		       int null_fd, int secrets_fd, int err_fd)
{
	/* The doorbell stays blocked across exec (the supervisor reads it
	 * from a signalfd), so one rung before it is ready stays pending
	 * instead of killing it. */
	sigset_t all, bell;
	sigfillset(&all);
	sigemptyset(&bell);
	sigaddset(&bell, SIGUSR1);
	/* Handlers reset with every signal blocked: a vfork-style child
	 * shares the daemon's memory, where a handler must never run. */
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &bell, NULL);
	int e = 0;
	if (cg_fd >= 0 && write(cg_fd, "0", 1) != 1)
		e = errno;
	if (e == 0 && setsid() < 0)
		e = errno;
	if (e == 0 && (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 ||
		       dup2(log_fd, 2) < 0 ||
		       (secrets_fd >= 0 && dup2(secrets_fd, 3) < 0)))
		e = errno;
	/* dup2 onto the same number keeps close-on-exec: clear it. */
	for (int fd = 0; e == 0 && fd <= (secrets_fd >= 0 ? 3 : 2); fd++)
		if (fcntl(fd, F_SETFD, 0) < 0)
			e = errno;
	if (e == 0) {
		al_close_fds_from(secrets_fd >= 0 ? 4 : 3, &err_fd, 1);
		execve("/proc/self/exe", argv, environ);
		e = errno;
	}
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

struct child_args {
	char *const *argv;
	struct clone_args ca; /* CLONE_INTO_CGROUP: placed already */
	int cg_fd, log_fd, null_fd, secrets_fd, err_fd;
};

static int child_main(void *p)
{
	const struct child_args *a = p;
	bool placed = a->ca.flags & CLONE_INTO_CGROUP;
	child_exec(a->argv, placed ? -1 : a->cg_fd, a->log_fd, a->null_fd,
		   a->secrets_fd, a->err_fd);
	return 127;
}

/* The stack a vfork-style child runs child_exec on: system calls only. */
#define CHILD_STACK_BYTES (32 * 1024)

/* fork + exec of child_exec, straight into the cgroup (a directory fd)
 * when there is one (al_cg_clone3); *placed: the child is in it.
 * Vfork-style where the build has it: the daemon's page tables are not
 * copied for a child that only execs (core/clone_vm.h).  Else a raw
 * clone3, like a fork without glibc's atfork handlers; a kernel without
 * clone3 gets a plain fork, joined afterwards.  Returns as fork does in
 * the parent: the child never returns here. */
static pid_t spawn_into(int cg_dirfd, bool *placed, struct child_args *a)
{
	memset(&a->ca, 0, sizeof(a->ca));
	a->ca.exit_signal = SIGCHLD;
	_Alignas(16) char stack[CHILD_STACK_BYTES];
	pid_t pid = al_cg_clone3_vm(&a->ca, cg_dirfd, placed, child_main, a,
				    stack, sizeof(stack));
	if (pid >= 0 || errno != ENOSYS)
		return pid;
	memset(&a->ca, 0, sizeof(a->ca));
	a->ca.exit_signal = SIGCHLD;
	pid = cg_dirfd >= 0 ? al_cg_clone3(&a->ca, cg_dirfd, placed) : -1;
	if (cg_dirfd < 0 || (pid < 0 && errno == ENOSYS)) {
		*placed = false;
		pid = fork();
	}
	if (pid == 0)
		child_exec(a->argv, *placed ? -1 : a->cg_fd, a->log_fd,
			   a->null_fd, a->secrets_fd, a->err_fd);
	return pid;
}

/* fork + exec of a new supervisor for the run. */
static int launch_cold(al_drun *r, const al_launch_spec *s)
{
	al_durable *d = r->d;
	int log_fd = -1, null_fd = -1, sec_fd = -1, cg_fd = -1, cg_dir = -1;
	int err_fd[2] = {-1, -1};
	int rc = 0;

	char *argv[] = {"airlock", "--state-dir", d->state_dir, "supervise",
			"--run", r->run_id, "--nonce", r->rec.nonce,
			s->n_host_env > 0 ? "--secrets-fd" : NULL, "3", NULL};
	log_fd = openat(r->dirfd, AL_RF_LOG,
			O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			0600);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (log_fd < 0 || null_fd < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = error_pipe(err_fd)) < 0)
		goto out;
	if (s->n_host_env > 0 && (sec_fd = secrets_memfd(s)) < 0) {
		rc = sec_fd;
		goto out;
	}
	if (r->rec.cgroup != NULL &&
	    (rc = open_cgroup(r->rec.cgroup, &cg_dir, &cg_fd)) < 0)
		goto out;
	bool placed;
	struct child_args ca = {.argv = argv, .cg_fd = cg_fd,
				.log_fd = log_fd, .null_fd = null_fd,
				.secrets_fd = sec_fd, .err_fd = err_fd[1]};
	pid_t pid = spawn_into(cg_dir, &placed, &ca);
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	close(err_fd[1]);
	err_fd[1] = -1;
	int child_errno = 0;
	ssize_t n;
	do
		n = read(err_fd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	r->own_child = true;
	r->id.pid = pid;
	if (n == (ssize_t)sizeof(child_errno)) {
		/* Nothing ran: the supervisor never started. */
		waitpid(pid, NULL, 0);
		r->ended = true;
		rc = -(child_errno ? child_errno : EIO);
		goto out;
	}
	if (al_proc_stat(pid, &r->id.starttime, NULL) < 0) {
		/* It already ended (and waits to be reaped). */
		r->id.starttime = 0;
	}
	r->have_id = true;
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	al_fault_point("after_launch");
	if ((rc = al_identity_write(r->dirfd, &r->id)) < 0) {
		/* Recovery finds it by its nonce; carry on. */
		al_logf(AL_LOG_WARN, r->run_id,
			"cannot record the supervisor's identity: %s",
			strerror(-rc));
		rc = 0;
	}
out:
	close_all((const int[]){log_fd, null_fd, sec_fd, cg_fd, cg_dir,
				err_fd[0], err_fd[1]},
		  7);
	return rc;
}

/* Frees our side of an idle supervisor handed a run: it is the run's
 * supervisor now and must not be ended. */
static void idle_release(al_idle_sup *i)
{
	if (i->sock >= 0)
		close(i->sock);
	if (i->pidfd >= 0)
		close(i->pidfd);
	free(i->cgroup);
	free(i);
}

/* Hands the run to an idle supervisor: its id and nonce, the log and the
 * secrets (SCM_RIGHTS).  0 when the message is on its socket (it is then
 * the run's supervisor: identity recorded, idle taken), else negative
 * errno and nothing reached it. */
static int handoff(al_drun *r, const al_launch_spec *s, al_idle_sup *idle)
{
	int log_fd = -1, sec_fd = -1, rc = 0;
	char msg[128];
	int n = snprintf(msg, sizeof(msg), "run %s %s", r->run_id,
			 r->rec.nonce);
	log_fd = openat(r->dirfd, AL_RF_LOG,
			O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (log_fd < 0) {
		rc = -errno;
		goto out;
	}
	if (s->n_host_env > 0 && (sec_fd = secrets_memfd(s)) < 0) {
		rc = sec_fd;
		goto out;
	}
	int fds[2] = {log_fd, sec_fd};
	size_t nfd = sec_fd >= 0 ? 2 : 1;
	union {
		char buf[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {.iov_base = msg, .iov_len = (size_t)n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * nfd)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfd);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfd);
	ssize_t sent;
	do
		sent = sendmsg(idle->sock, &mh, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent != (ssize_t)n) {
		rc = sent < 0 ? -errno : -EIO;
		goto out;
	}
	/* On its socket: from here on it is the run's supervisor. */
	r->handed = true;
	r->own_child = true;
	r->id.pid = idle->pid;
	r->id.starttime = idle->starttime;
	r->have_id = true;
	r->pidfd = idle->pidfd;
	idle->pidfd = -1;
	if (++idle->served < idle->runs && r->pidfd >= 0)
		r->idle = idle; /* it may serve another after this one */
	else
		idle_release(idle);
	al_fault_point("after_launch");
	int wr = al_identity_write(r->dirfd, &r->id);
	if (wr < 0)
		al_logf(AL_LOG_WARN, r->run_id,
			"cannot record the supervisor's identity: %s",
			strerror(-wr));
out:
	if (log_fd >= 0)
		close(log_fd);
	if (sec_fd >= 0)
		close(sec_fd);
	return rc;
}

/* The idle supervisor named in the record never got the run: the record
 * gets a fresh nonce and the run's own cgroup, durably, before a cold
 * launch (a crash in between leaves a run the next daemon finds lost). */
static int rebind_cold(al_drun *r)
{
	al_durable *d = r->d;
	int rc = al_nonce_new(r->rec.nonce);
	if (rc < 0)
		return rc;
	r->rec.sup_nonce[0] = '\0';
	free(r->rec.cgroup);
	r->rec.cgroup = NULL;
	if (d->cg_base != NULL &&
	    al_run_cgroup_create(d->cg_base, r->run_id, d->cg_tag, &r->rec.cgroup) <
		    0)
		r->rec.cgroup = NULL;
	return al_recovery_write(r->dirfd, &r->rec);
}

int al_drun_start(al_drun *r, const al_launch_spec *s, al_error **err)
{
	int rc = 0;
	al_fault_point("after_persist");
	if (s->idle != NULL) {
		rc = handoff(r, s, s->idle);
		if (rc == 0)
			goto out;
		al_logf(AL_LOG_WARN, r->run_id,
			"the idle supervisor did not take it (%s); starting "
			"one",
			strerror(-rc));
		al_idle_discard(s->idle);
		if ((rc = rebind_cold(r)) < 0)
			goto out;
	}
	rc = launch_cold(r, s);
out:
	al_drun_unlock(r);
	if (rc < 0)
		return al_error_set(err, AL_ERR_UNAVAILABLE, -rc,
				    "start_failed",
				    "cannot start the run's supervisor: %s",
				    strerror(-rc));
	return 0;
}

int al_drun_make_durable(al_drun *r)
{
	return al_record_file_sync_named(r->dirfd, AL_RF_RECOVERY);
}

bool al_drun_handed_off(const al_drun *r)
{
	return r->handed;
}

al_idle_sup *al_drun_give_back(al_drun *r)
{
	al_idle_sup *i = r->idle;
	if (i == NULL || !r->sup_done)
		return NULL;
	i->pidfd = r->pidfd;
	r->pidfd = -1;
	r->idle = NULL;
	return i;
}

bool al_idle_reusable(const al_idle_sup *i)
{
	return i != NULL && i->served + 1 < i->runs;
}

/* ---- idle supervisors ------------------------------------------------ */

void al_durable_sweep_idle(al_durable *d)
{
	char suffix[AL_RUN_CGROUP_TAG_LEN + 2];
	DIR *base = d->cg_base != NULL ? opendir(d->cg_base) : NULL;
	snprintf(suffix, sizeof(suffix), ".%s", d->cg_tag);
	struct dirent *de;
	while (base != NULL && (de = readdir(base)) != NULL) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "airlock-run-sup-", 16) != 0 ||
		    len < sizeof(suffix) ||
		    strcmp(de->d_name + len - (sizeof(suffix) - 1), suffix) != 0)
			continue;
		/* rmdir refuses a cgroup that still has a process. */
		if (unlinkat(dirfd(base), de->d_name, AT_REMOVEDIR) == 0)
			al_logf(AL_LOG_INFO, NULL,
				"removed the empty cgroup of an idle "
				"supervisor that "
				"was killed");
	}
	if (base != NULL)
		closedir(base);
}

bool al_idle_alive(const al_idle_sup *i)
{
	struct pollfd pfd[2] = {{i->sock, POLLIN, 0}, {i->pidfd, POLLIN, 0}};
	int n = poll(pfd, i->pidfd >= 0 ? 2 : 1, 0);
	/* It says nothing after "ready": anything readable is its end. */
	return n == 0;
}

void al_idle_discard(al_idle_sup *i)
{
	if (i == NULL)
		return;
	if (i->sock >= 0)
		close(i->sock);
	i->sock = -1;
	if (i->pid > 0) {
		/* Its socket ended: it releases the provider and goes. */
		bool gone = false;
		if (i->pidfd >= 0) {
			struct pollfd pfd = {i->pidfd, POLLIN, 0};
			gone = poll(&pfd, 1, EXIT_WAIT_MS) == 1;
			if (!gone)
				(void)syscall(SYS_pidfd_send_signal, i->pidfd,
					      SIGKILL, NULL, 0);
		} else {
			kill(i->pid, SIGKILL);
		}
		waitpid(i->pid, NULL, 0);
	}
	if (i->cgroup != NULL && al_run_cgroup_kill_wait(i->cgroup, KILL_WAIT_MS) ==
					 0)
		(void)al_run_cgroup_remove(i->cgroup);
	if (i->pidfd >= 0)
		close(i->pidfd);
	free(i->cgroup);
	free(i);
}

/* Sends the provider to ensure and waits for "ready". */
static int idle_prepare(al_idle_sup *i, const char *provider,
			const char *config_json, int ready_ms)
{
	json_t *cfg = NULL;
	if (config_json != NULL &&
	    (cfg = json_loads(config_json, 0, NULL)) == NULL)
		return -EINVAL;
	json_t *o = json_pack("{s:s, s:o, s:i}", "provider", provider, "config",
			      cfg != NULL ? cfg : json_null(), "runs",
			      (int)i->runs);
	char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (text == NULL)
		return -ENOMEM;
	ssize_t n = send(i->sock, text, strlen(text), MSG_NOSIGNAL);
	int rc = n == (ssize_t)strlen(text) ? 0 : (n < 0 ? -errno : -EIO);
	al_explicit_free_str(text);
	if (rc < 0)
		return rc;
	struct pollfd pfd = {i->sock, POLLIN, 0};
	char buf[16];
	int p;
	do
		p = poll(&pfd, 1, ready_ms);
	while (p < 0 && errno == EINTR);
	if (p <= 0)
		return p == 0 ? -ETIMEDOUT : -errno;
	n = recv(i->sock, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return strcmp(buf, "ready") == 0 ? 0 : -EIO;
}

int al_idle_spawn(al_durable *d, const char *provider, const char *config_json,
		  unsigned runs, int ready_ms, al_idle_sup **out)
{
	al_idle_sup *i = calloc(1, sizeof(*i));
	int sv[2] = {-1, -1}, null_fd = -1, cg_fd = -1, cg_dir = -1;
	int err_fd[2] = {-1, -1};
	int rc = 0;

	*out = NULL;
	if (i == NULL)
		return -ENOMEM;
	i->pidfd = i->sock = -1;
	i->runs = runs > 1 ? runs : 1;
	if ((rc = al_nonce_new(i->nonce)) < 0)
		goto fail;
	if (d->cg_base != NULL &&
	    al_run_cgroup_create_idle(d->cg_base, i->nonce, d->cg_tag, &i->cgroup) <
		    0)
		i->cgroup = NULL;
	char *argv[] = {"airlock", "--state-dir", d->state_dir, "supervise",
			"--idle", "--nonce", i->nonce, NULL};
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = error_pipe(err_fd)) < 0)
		goto fail;
	if (i->cgroup != NULL &&
	    (rc = open_cgroup(i->cgroup, &cg_dir, &cg_fd)) < 0)
		goto fail;
	/* Its diagnostics before a run go to our stderr; the run's log
	 * replaces them at hand-off. */
	bool placed;
	struct child_args ca = {.argv = argv, .cg_fd = cg_fd, .log_fd = 2,
				.null_fd = null_fd, .secrets_fd = sv[1],
				.err_fd = err_fd[1]};
	pid_t pid = spawn_into(cg_dir, &placed, &ca);
	if (pid < 0) {
		rc = -errno;
		goto fail;
	}
	close(err_fd[1]);
	err_fd[1] = -1;
	close(sv[1]);
	sv[1] = -1;
	i->sock = sv[0];
	sv[0] = -1;
	i->pid = pid;
	int child_errno = 0;
	ssize_t n;
	do
		n = read(err_fd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(child_errno)) {
		rc = -(child_errno ? child_errno : EIO);
		goto fail;
	}
	if (al_proc_stat(pid, &i->starttime, NULL) < 0)
		i->starttime = 0;
	i->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* Serving several runs needs a cgroup to verify its tree in and a
	 * pidfd to watch it by. */
	if (i->cgroup == NULL || i->pidfd < 0)
		i->runs = 1;
	if ((rc = idle_prepare(i, provider, config_json, ready_ms)) < 0)
		goto fail;
	*out = i;
	goto out;
fail:
	al_idle_discard(i);
out:
	close_all((const int[]){sv[0], sv[1], null_fd, cg_fd, cg_dir,
				err_fd[0], err_fd[1]},
		  7);
	return rc;
}

/* ---- watching -------------------------------------------------------- */

static void mark_ended(al_drun *r)
{
	r->ended = true;
	if (r->own_child && r->id.pid > 0)
		waitpid(r->id.pid, NULL, 0);
}

/* 1 when the idle supervisor's next word is "<word> <run_id>", 0 when
 * nothing came yet (flags MSG_DONTWAIT), -1 on anything else (the end of
 * its socket: its last run, or it gave up): then our side is closed. */
static int sup_said(al_idle_sup *i, const char *word, const char *run_id,
		    int flags)
{
	char buf[80], want[80];
	ssize_t n;
	do
		n = recv(i->sock, buf, sizeof(buf) - 1, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	buf[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "%s %s", word, run_id);
	if (n > 0 && strcmp(buf, want) == 0)
		return 1;
	close(i->sock);
	i->sock = -1;
	return -1;
}

/* The kept idle supervisor's word after the run: "ended <id>" when its
 * result is recorded and its tree is gone.  Anything else leaves the
 * pidfd to tell (the process is the run's). */
static bool sup_said_ended(al_drun *r)
{
	return sup_said(r->idle, "ended", r->run_id, MSG_DONTWAIT) == 1;
}

int al_idle_wait_done(al_idle_sup *i, const char *run_id, int timeout_ms)
{
	if (i == NULL || i->sock < 0)
		return -EPIPE;
	struct pollfd pfd = {i->sock, POLLIN, 0};
	int n;
	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -ETIMEDOUT;
	return n > 0 && sup_said(i, "done", run_id, 0) == 1 ? 0 : -EPIPE;
}

int al_drun_wait(al_drun *r, int timeout_ms)
{
	if (r->ended || !r->have_id)
		return 1;
	if (r->idle != NULL && r->idle->sock >= 0 && r->pidfd >= 0) {
		struct pollfd pfd[2] = {{r->pidfd, POLLIN, 0},
					{r->idle->sock, POLLIN, 0}};
		int n = poll(pfd, 2, timeout_ms);
		if (n > 0 && pfd[0].revents) {
			mark_ended(r);
			return 1;
		}
		if (n > 0 && pfd[1].revents && sup_said_ended(r)) {
			r->sup_done = true;
			r->ended = true;
			return 1;
		}
		return 0;
	}
	if (r->pidfd >= 0) {
		struct pollfd pfd = {.fd = r->pidfd, .events = POLLIN};
		int n = poll(&pfd, 1, timeout_ms);
		if (n > 0) {
			mark_ended(r);
			return 1;
		}
		return 0;
	}
	/* No pidfds: look, then sleep a little. */
	if (r->own_child) {
		pid_t w = waitpid(r->id.pid, NULL, WNOHANG);
		if (w == r->id.pid || (w < 0 && errno == ECHILD)) {
			r->own_child = false;
			r->ended = true;
			return 1;
		}
	} else if (al_identity_verify(&r->id, r->rec.nonce) < 0) {
		r->ended = true;
		return 1;
	}
	struct timespec ts = {timeout_ms / 1000,
			      (long)(timeout_ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	return 0;
}

int al_drun_tail(al_drun *r, al_outlog_fn fn, void *ctx)
{
	if (r->out_fd < 0) {
		r->out_fd = openat(r->dirfd, AL_RF_OUTPUT,
				   O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (r->out_fd < 0)
			return errno == ENOENT ? 0 : -errno;
	}
	return al_outlog_read(r->out_fd, &r->out_off, fn, ctx);
}

bool al_drun_superseded(al_drun *r)
{
	uint64_t lease = 0;
	return al_lease_read(r->dirfd, &r->rec, &lease) == 0 &&
	       lease > r->d->epoch;
}

int al_drun_control(al_drun *r, al_control_action action)
{
	if (al_drun_superseded(r))
		return -EPERM;
	if (r->ended || !r->have_id)
		return -ESRCH;
	int rc = al_control_write(r->dirfd, r->d->epoch, action);
	if (rc < 0)
		return rc;
	rc = al_identity_signal(&r->id, r->rec.nonce, SIGUSR1);
	return rc == -ENOSYS ? -ESRCH : rc;
}

int al_drun_kill(al_drun *r)
{
	if (al_drun_superseded(r))
		return -EPERM;
	if (r->rec.cgroup != NULL) {
		/* Everything it started is in there, itself included. */
		int rc = al_run_cgroup_kill_wait(r->rec.cgroup, KILL_WAIT_MS);
		if (rc < 0)
			return rc;
	} else if (!r->ended && r->have_id) {
		(void)al_identity_signal(&r->id, r->rec.nonce, SIGKILL);
	}
	for (int waited = 0; !r->ended; waited += 50) {
		if (al_drun_wait(r, 50) == 1)
			break;
		if (waited >= KILL_WAIT_MS)
			return -ETIMEDOUT;
	}
	return 0;
}

int al_drun_deliver(al_drun *r, const char *id, const char *event_json)
{
	if (al_drun_superseded(r))
		return -EPERM;
	/* A lock of its own (HTTP threads deliver while the watcher, or the
	 * launch, may hold the handle's). */
	int lock = al_record_file_lock_dir(r->dirfd);
	if (lock < 0)
		return lock;
	int rc = al_inbox_deliver(r->dirfd, id, event_json);
	close(lock);
	return rc;
}

/* ---- collecting and finishing ---------------------------------------- */

static void ensure_tree_gone(al_drun *r)
{
	/* A supervisor that serves another run said its cgroup holds only
	 * itself: the run's tree is gone (supervisor/reuse.h). */
	if (r->rec.cgroup == NULL || r->sup_done)
		return;
	int pop = al_run_cgroup_populated(r->rec.cgroup);
	if (pop != 0 && al_run_cgroup_kill_wait(r->rec.cgroup, KILL_WAIT_MS) < 0)
		al_logf(AL_LOG_WARN, r->run_id, "its cgroup did not empty");
}

/* Longest provider message copied to the daemon's log. */
#define PROVIDER_MSG_MAX 2048

/* The provider's own message for a failure (RUN/provider_error.json,
 * written by the supervisor) goes to the operator's log, never to the
 * API's answer. */
static void log_provider_error(al_drun *r)
{
	json_t *o = NULL;
	if (al_record_file_read_json(r->dirfd, AL_RF_PROVIDER_ERROR, AL_RF_MAX_SMALL,
			       &o) < 0)
		return;
	const char *call = json_string_value(json_object_get(o, "call"));
	const char *msg = json_string_value(json_object_get(o, "message"));
	/* The provider's own message goes to the operator's log only; the
	 * logger escapes what it holds. */
	char *cut = strndup(msg != NULL ? msg : "", PROVIDER_MSG_MAX);
	al_log_field f[] = {
		AL_LF_S("run_id", r->run_id),
		AL_LF_S("provider",
			r->rec.provider != NULL ? r->rec.provider : "?"),
		AL_LF_S("call", call != NULL && strcmp(call, "ensure") == 0
					? "ensure"
					: "execute"),
		AL_LF_S("error", cut != NULL ? cut : "(out of memory)"),
	};
	al_log_fields(AL_LOG_ERROR, "the provider failed", f,
		      sizeof(f) / sizeof(f[0]));
	free(cut);
	json_decref(o);
}

int al_drun_collect(al_drun *r, al_result **res)
{
	char *text = NULL;
	size_t len = 0;
	*res = NULL;
	ensure_tree_gone(r);
	log_provider_error(r);
	/* A supervisor that ended between syncing its result and naming it
	 * left it in the reserve. */
	(void)al_record_file_settle(r->dirfd, AL_RF_RESERVE, AL_RF_RESULT,
				    AL_RF_MAX_RECORD);
	int rc = al_record_file_read(r->dirfd, AL_RF_RESULT, AL_RF_MAX_RECORD, &text,
			       &len);
	if (rc == -ENOENT)
		return 0;
	if (rc == 0 && al_result_from_json(text, len, res, NULL) < 0) {
		/* A record that does not parse is no result. */
		al_logf(AL_LOG_WARN, r->run_id,
			"its recorded result does not parse");
		*res = NULL;
	}
	free(text);
	return rc;
}

bool al_drun_result_pending(al_drun *r)
{
	return al_record_file_exists(r->dirfd, AL_RF_PENDING) &&
	       !al_record_file_exists(r->dirfd, AL_RF_RESULT);
}

int al_drun_acked(al_drun *r, al_result *res)
{
	for (size_t i = 0; i < res->n_inbox_acked; i++)
		free(res->inbox_acked[i]);
	free(res->inbox_acked);
	res->inbox_acked = NULL;
	res->n_inbox_acked = 0;
	int rc = al_inbox_acked(r->dirfd, &res->inbox_acked,
				&res->n_inbox_acked);
	return rc < 0 ? rc : al_inbox_result_pending(r->dirfd, res);
}

int al_drun_read_final(al_drun *r, char **json)
{
	return al_record_file_read(r->dirfd, AL_RF_FINAL, AL_RF_MAX_RECORD, json,
			     NULL);
}

int al_drun_mark_finishing(al_drun *r)
{
	/* Not synced: another daemon on this machine sees it in the page
	 * cache; after a machine crash the recovering daemon checks the
	 * audit trail for every run it finishes (service: finish).  Only
	 * its existence is ever asked, so it is a second name of
	 * identity.json's inode when there is one: a link allocates no
	 * inode (docs/performance.md, "Inodes per durable run"). */
	if (linkat(r->dirfd, AL_RF_IDENTITY, r->dirfd, AL_RF_FINISHING, 0) ==
	    0)
		return 0;
	if (errno == EEXIST)
		return 1;
	int fd = openat(r->dirfd, AL_RF_FINISHING,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return errno == EEXIST ? 1 : -errno;
	close(fd);
	return 0;
}

/* A final result larger than this is stored once: final.json durably,
 * and the supervisor's result.json (the same output again) removed. */
#define FINAL_ONCE_BYTES (64u * 1024u)

/* true when result.json holds exactly the len bytes of json.  Compared
 * a block at a time: a result of many MiB is not held twice. */
static bool result_is(const al_drun *r, const char *json, size_t len)
{
	int fd = openat(r->dirfd, AL_RF_RESULT,
			O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	bool same = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == len;
	char block[16384];
	for (size_t off = 0; same && off < len;) {
		ssize_t n = read(fd, block, sizeof(block));
		if (n < 0 && errno == EINTR)
			continue;
		same = n > 0 && (size_t)n <= len - off &&
		       memcmp(block, json + off, (size_t)n) == 0;
		off += n > 0 ? (size_t)n : 0;
	}
	if (fd >= 0)
		close(fd);
	return same;
}

/* The final result as a second name of the supervisor's result.json when
 * both are the same bytes, the usual case: the run keeps one inode and
 * one block fewer, and nothing is written.  The link is atomic like a
 * rename; result.json is durable already, so a large one's only name is
 * made durable by syncing the directory before result.json goes. */
static int link_final(al_drun *r, const char *json, size_t len, bool once)
{
	if (!result_is(r, json, len) ||
	    linkat(r->dirfd, AL_RF_RESULT, r->dirfd, AL_RF_FINAL, 0) < 0)
		return -1;
	if (once && fsync(r->dirfd) == 0 &&
	    unlinkat(r->dirfd, AL_RF_RESULT, 0) < 0 && errno != ENOENT)
		al_logf(AL_LOG_WARN, r->run_id,
			"cannot remove its result record");
	return 0;
}

int al_drun_write_final(al_drun *r, const char *json)
{
	/* With the supervisor's result.json (durable) the same final result
	 * is made again should this one be lost in a machine crash; a
	 * result the daemon made itself exists only here. */
	size_t len = strlen(json);
	bool has_result = al_record_file_exists(r->dirfd, AL_RF_RESULT);
	bool once = has_result && len > FINAL_ONCE_BYTES;
	if (has_result && link_final(r, json, len, once) == 0)
		return 0;
	al_record_file_how how = has_result && !once ? AL_RECORD_FILE_ATOMIC : AL_RECORD_FILE_DURABLE;
	int rc = al_record_file_write_how(r->dirfd, AL_RF_FINAL, json, len, 0600,
				    how);
	if (rc == 0 && once && unlinkat(r->dirfd, AL_RF_RESULT, 0) < 0 &&
	    errno != ENOENT)
		al_logf(AL_LOG_WARN, r->run_id,
			"cannot remove its result record");
	return rc;
}

static void cleanup_locked(al_drun *r);

/* How long a cleanup waits for the run directory's lock: its holder is a
 * `runs forget` removing it (nothing then to clean) or a supervisor
 * writing its result.  Short, as a daemon's start cleans up every
 * answered run it finds and must not wait on each. */
#define CLEANUP_LOCK_MS 100

void al_drun_cleanup(al_drun *r)
{
	/* Under the run's lock, like every other writer of its directory:
	 * `airlock runs forget` may remove an answered run meanwhile, and a
	 * file made here while it removes the tree would leave it half
	 * gone.  A directory already removed needs nothing. */
	int fd = -1;
	if (r->lock_fd < 0) {
		fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && al_record_file_lock_wait(fd, CLEANUP_LOCK_MS) < 0) {
			close(fd);
			fd = -1;
		}
	}
	struct stat st;
	if ((r->lock_fd >= 0 || fd >= 0) && fstat(r->dirfd, &st) == 0 &&
	    st.st_nlink > 0)
		cleanup_locked(r);
	/* Not had in time: the next start cleans up what is left. */
	if (fd >= 0)
		close(fd);
}

static void cleanup_locked(al_drun *r)
{
	/* The request holds code and stdin: not kept past the run. */
	if (al_recovery_drop_request(r->dirfd, &r->rec) < 0)
		al_logf(AL_LOG_WARN, r->run_id, "cannot drop its request");
	al_remove_tree_at(r->dirfd, AL_RF_WORK);
	/* A killed provider's run directory on the tmpfs (run ids are
	 * unique, so the name is this run's). */
	if (al_rundir_remove_leftover(al_run_work_tmpfs(r->rec.provider,
							r->rec.module),
				      r->run_id) < 0)
		al_logf(AL_LOG_WARN, r->run_id,
			"cannot remove its run directory");
	/* What a supervisor killed while holding its result left. */
	unlinkat(r->dirfd, AL_RF_RESERVE, 0);
	unlinkat(r->dirfd, AL_RF_PENDING, 0);
	/* Temp files made ahead that this run did not need, and its
	 * artifact store made ahead when the run never came to use it. */
	al_record_file_blanks_drop(r->dirfd);
	if (unlinkat(r->dirfd, AL_RF_STORE_AHEAD, AT_REMOVEDIR) < 0 &&
	    errno != ENOENT)
		(void)al_remove_tree_at(r->dirfd, AL_RF_STORE_AHEAD);
	/* The live output is in the final result now: kept once. */
	if (unlinkat(r->dirfd, AL_RF_OUTPUT, 0) < 0 && errno != ENOENT)
		al_logf(AL_LOG_WARN, r->run_id,
			"cannot remove its output file");
	al_drun_remove_cgroup(r);
}

void al_drun_remove_cgroup(al_drun *r)
{
	if (r->rec.cgroup != NULL && al_run_cgroup_populated(r->rec.cgroup) == 0 &&
	    al_run_cgroup_remove(r->rec.cgroup) < 0)
		al_logf(AL_LOG_WARN, r->run_id, "cannot remove its cgroup");
}

int al_durable_remove_run(al_durable *d, const char *run_id)
{
	if (!al_run_id_valid(run_id))
		return -EINVAL;
	return al_remove_tree_at(d->runs_fd, run_id);
}

int al_drun_read_request(al_drun *r, char **request_json, char **facts_json)
{
	*request_json = NULL;
	*facts_json = NULL;
	if (r->rec.request == NULL)
		return -ENOENT;
	if ((*request_json = strdup(r->rec.request)) == NULL ||
	    al_strdup_opt(r->rec.facts, facts_json) < 0) {
		free(*request_json);
		*request_json = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- recovery -------------------------------------------------------- */

int al_durable_list(al_durable *d, char ***ids, size_t *n)
{
	return al_dir_names_at(d->runs_fd, al_run_id_valid, ids, n);
}

/* Finds the run's supervisor: the recorded identity when it still
 * verifies, else a process carrying the nonce (a launch whose identity
 * was never recorded).  true when it is alive. */
static bool find_live(al_drun *r)
{
	al_identity id;
	if (al_identity_read(r->dirfd, &id) == 0 &&
	    al_identity_verify(&id, r->rec.nonce) == 0) {
		r->id = id;
		r->have_id = true;
		return true;
	}
	if (al_identity_scan(r->rec.nonce, &id) == 0) {
		r->id = id;
		r->have_id = true;
		if (al_identity_write(r->dirfd, &id) < 0)
			al_logf(AL_LOG_WARN, r->run_id,
				"cannot record the identity found");
		return true;
	}
	return false;
}

/* Opens a pidfd of the (verified) supervisor for watching it. */
static void watch_live(al_drun *r)
{
	if (al_identity_pidfd(&r->id, r->rec.nonce, &r->pidfd) == -ESRCH)
		r->ended = true;
}

/* true when pid holds the run's directory open (a supervisor does for
 * as long as it runs). */
static bool holds_dir(long pid, const char *want)
{
	char path[64], link[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	DIR *dir = opendir(path);
	bool found = false;
	if (dir == NULL)
		return false;
	struct dirent *de;
	while (!found && (de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char fdp[sizeof(path) + 260];
		snprintf(fdp, sizeof(fdp), "%s/%s", path, de->d_name);
		ssize_t n = readlink(fdp, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = strcmp(link, want) == 0;
	}
	closedir(dir);
	return found;
}

/* A run handed to an idle supervisor lives in the cgroup named by that
 * supervisor's nonce, which only the (untrusted) record names: look in
 * each of our idle-named cgroups for a process holding the run's
 * directory open, and end that cgroup. */
static void end_unknown_idle(al_drun *r)
{
	char *want = al_strdup_printf("%s/" AL_RUNS_DIR "/%s", r->d->state_dir,
				      r->run_id);
	char suffix[AL_RUN_CGROUP_TAG_LEN + 2];
	DIR *base = want != NULL ? opendir(r->d->cg_base) : NULL;
	snprintf(suffix, sizeof(suffix), ".%s", r->d->cg_tag);
	struct dirent *de;
	while (base != NULL && (de = readdir(base)) != NULL) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "airlock-run-sup-", 16) != 0 ||
		    len < sizeof(suffix) ||
		    strcmp(de->d_name + len - (sizeof(suffix) - 1), suffix) != 0)
			continue;
		char *cg = al_strdup_printf("%s/%s", r->d->cg_base, de->d_name);
		char *procs = cg != NULL ? al_strdup_printf("%s/cgroup.procs",
							     cg)
					 : NULL;
		FILE *f = procs != NULL ? fopen(procs, "re") : NULL;
		bool ours = false;
		long pid;
		while (f != NULL && !ours && fscanf(f, "%ld", &pid) == 1)
			ours = holds_dir(pid, want);
		if (f != NULL)
			fclose(f);
		if (ours && al_run_cgroup_kill_wait(cg, KILL_WAIT_MS) == 0)
			al_run_cgroup_remove(cg);
		free(procs);
		free(cg);
	}
	if (base != NULL)
		closedir(base);
	free(want);
}

/* Kills what is left of a run whose records cannot be trusted: only the
 * cgroup its id names under our own base, or the idle-named one whose
 * supervisor holds the run's directory, is touched. */
static void end_unknown(al_drun *r)
{
	char *dir = NULL;
	if (r->d->cg_base != NULL)
		end_unknown_idle(r);
	if (r->d->cg_base == NULL ||
	    (dir = al_strdup_printf("%s/airlock-run-%s.%s", r->d->cg_base,
				    r->run_id, r->d->cg_tag)) == NULL)
		return;
	struct stat st;
	if (stat(dir, &st) == 0 && al_run_cgroup_kill_wait(dir, KILL_WAIT_MS) == 0)
		al_run_cgroup_remove(dir);
	free(dir);
}

/* final.json for a run whose records cannot be trusted. */
static void write_lost(al_drun *r)
{
	al_result *res = al_result_new();
	char *json = NULL;
	if (res != NULL) {
		snprintf(res->run_id, sizeof(res->run_id), "%s", r->run_id);
		res->finished_at_ms = al_now_ms();
		if (al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE, "lost") ==
		    0)
			json = al_result_to_json(res, 0);
	}
	if (json == NULL || al_drun_write_final(r, json) < 0)
		al_logf(AL_LOG_WARN, r->run_id, "cannot record it as lost");
	free(json);
	al_result_free(res);
}

int al_durable_runs_fd(const al_durable *d)
{
	return d->runs_fd;
}

int al_drun_dirfd(const al_drun *r)
{
	return r->dirfd;
}

int al_durable_open_run(al_durable *d, const char *run_id, al_drun **out)
{
	al_drun *r = drun_new(d, run_id);
	int rc;
	*out = NULL;
	if (r == NULL)
		return -ENOMEM;
	if ((rc = al_run_dir_open(d->runs_fd, run_id, false, &r->dirfd)) < 0 ||
	    (rc = al_drun_lock(r)) < 0) {
		al_drun_free(r);
		return rc;
	}
	r->ended = true;
	*out = r;
	return 0;
}

#define AUDIT_MARK "audit.mark"

char *al_durable_mark_read(al_durable *d)
{
	char *text = NULL;
	int dfd = open(d->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	if (al_record_file_read(dfd, AUDIT_MARK, 256, &text, NULL) < 0)
		text = NULL;
	close(dfd);
	return text;
}

int al_durable_mark_write(al_durable *d, const char *mark)
{
	int dfd = open(d->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int rc = al_record_file_write_how(dfd, AUDIT_MARK, mark, strlen(mark), 0600,
				    AL_RECORD_FILE_ATOMIC);
	close(dfd);
	return rc;
}

bool al_durable_run_held(al_durable *d, const char *run_id)
{
	return al_artifacts_live(d->state_dir, run_id);
}

int al_durable_recover(al_durable *d, const char *run_id, al_drun **out,
		       al_recovered *kind)
{
	al_drun *r = NULL;
	/* Opened as ended, until a live supervisor is found. */
	int rc = al_durable_open_run(d, run_id, &r);
	*out = NULL;
	if (rc < 0)
		return rc;
	bool has_final = al_record_file_exists(r->dirfd, AL_RF_FINAL);
	rc = al_recovery_read(r->dirfd, run_id, &r->rec);
	if (rc == -ENOMEM)
		goto fail;
	if (rc < 0) {
		/* Unknown or tampered: nothing in it is trusted.  It ends as
		 * lost (no tenant can be named to list or audit it). */
		if (!has_final) {
			end_unknown(r);
			write_lost(r);
		}
		*kind = AL_RECOVERED_TAMPERED;
		goto done;
	}
	if (has_final) {
		*kind = AL_RECOVERED_FINAL;
		goto done;
	}
	/* Its daemon may have died before it synced the record (the run
	 * was launched): synced now, as the run goes on. */
	(void)al_record_file_sync_named(r->dirfd, AL_RF_RECOVERY);
	bool live = find_live(r);
	if (live) {
		r->ended = false;
		watch_live(r);
	} else {
		/* A result synced in the reserve whose rename the machine
		 * lost (or its supervisor did not make). */
		(void)al_record_file_settle(r->dirfd, AL_RF_RESERVE,
					    AL_RF_RESULT, AL_RF_MAX_RECORD);
	}
	if (al_record_file_exists(r->dirfd, AL_RF_RESULT)) {
		/* Recorded, not yet acknowledged; the supervisor may still
		 * be on its way out. */
		for (int waited = 0; !r->ended && waited < EXIT_WAIT_MS;
		     waited += 50)
			al_drun_wait(r, 50);
		*kind = AL_RECOVERED_RESULT;
		goto done;
	}
	if (live && !r->ended) {
		uint64_t lease = 0;
		if (al_lease_read(r->dirfd, &r->rec, &lease) == 0 &&
		    lease > d->epoch) {
			/* A newer daemon holds it: this one is refused. */
			*kind = AL_RECOVERED_FOREIGN;
			goto done;
		}
		if ((rc = al_record_file_write_u64(r->dirfd, AL_RF_LEASE, d->epoch)) <
		    0)
			goto fail;
		/* The run's toolbelt credential is replaced: the old
		 * epoch's token is refused from now on. */
		if ((rc = al_toolbelt_rotate(r->dirfd)) < 0)
			al_logf(AL_LOG_WARN, r->rec.run_id,
				"cannot replace the toolbelt token: %s",
				strerror(-rc));
		*kind = AL_RECOVERED_LIVE;
		goto done;
	}
	/* Dead without a result: lost.  Whatever it left is ended. */
	r->ended = true;
	ensure_tree_gone(r);
	*kind = AL_RECOVERED_LOST;
done:
	al_drun_unlock(r);
	*out = r;
	return 0;
fail:
	al_drun_free(r);
	return rc;
}
