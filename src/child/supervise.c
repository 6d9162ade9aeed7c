/* The supervision loop shared by process-running providers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "child/supervise.h"

/* How long to wait for the tree to report after KILL before the
 * shepherd/init itself is killed, and for pipes to close after that. */
#define KILL_REPORT_MS 2000u
#define DRAIN_AFTER_EXIT_MS 1000u

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

typedef struct capture {
	unsigned char *buf;
	size_t len;
	size_t alloc; /* bytes allocated at buf */
	uint64_t cap;
	uint64_t seen;
	bool truncated;
} capture;

static int capture_add(capture *c, const unsigned char *data, size_t n)
{
	c->seen += n;
	uint64_t room = c->cap > c->len ? c->cap - c->len : 0;
	size_t keep = n < room ? n : (size_t)room;
	if (keep < n)
		c->truncated = true;
	if (keep == 0)
		return 0;
	if (keep >= SIZE_MAX - c->len)
		return -ENOMEM; /* more than memory holds */
	size_t need = c->len + keep + 1;
	if (need > c->alloc) {
		/* Doubling, up to the cap: growing by each chunk copied the
		 * whole output again whenever realloc could not extend in
		 * place, quadratic in a large output. */
		size_t most = c->cap < SIZE_MAX - 1 ? (size_t)c->cap + 1 : SIZE_MAX;
		size_t want = need;
		if (c->alloc > need / 2 && c->alloc < SIZE_MAX / 2)
			want = c->alloc * 2;
		if (want > most)
			want = need > most ? need : most;
		/* want >= need > c->len: never 0 (the analyzer loses that
		 * across the branches above) */
		unsigned char *grown = realloc(c->buf, want); // NOLINT(clang-analyzer-optin.portability.UnixAPI)
		if (grown == NULL)
			return -ENOMEM;
		c->buf = grown;
		c->alloc = want;
	}
	memcpy(c->buf + c->len, data, keep);
	c->len += keep;
	c->buf[c->len] = '\0';
	return 0;
}

/* Reads what is there; returns 1 at EOF, 0 otherwise, <0 on error. */
static int drain(int fd, capture *c, int stream, const al_supervise_opts *o)
{
	unsigned char chunk[65536];
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n == 0)
			return 1;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : 1;
		if (o->on_output != NULL)
			o->on_output(o->on_output_ctx, stream, chunk, (size_t)n);
		if (capture_add(c, chunk, (size_t)n) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void set_nonblock(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* One supervision's state, from start to the result. */
typedef struct sup_state {
	al_child *child;
	const al_supervise_opts *opts;
	capture cap[2];
	int *pipes[2];
	size_t stdin_off;
	unsigned char report_buf[sizeof(al_exit_report)];
	size_t report_len;
	bool exited;
	bool reported; /* end_at_report: a valid report is in */
	bool stopping;
	al_end end;
	uint64_t start, deadline;
	uint64_t kill_at;    /* set once TERM went out */
	uint64_t force_at;   /* set once KILL went out */
	uint64_t give_up_at; /* set once the shepherd/init is gone */
	uint64_t later_at;   /* opts->later pending until then (0: none) */
	int cancel_fd;
} sup_state;

/* The descriptors one poll watches, and where each sits (-1: absent). */
typedef struct sup_poll {
	struct pollfd pfd[6];
	nfds_t np;
	int i_in, i_out[2], i_st, i_pid;
} sup_poll;

static void sup_mark_exited(sup_state *s)
{
	s->exited = true;
	s->give_up_at = (uint64_t)al_mono_ms() + DRAIN_AFTER_EXIT_MS;
}

/* Why the run must be stopped now, or AL_END_EXITED to let it go on. */
static al_end sup_stop_reason(const sup_state *s, uint64_t now)
{
	al_cancel_kind ck = al_cancel_state(s->opts->cancel);
	if (ck == AL_CANCEL_CANCELLED)
		return AL_END_CANCELLED;
	if (ck == AL_CANCEL_INTERRUPTED)
		return AL_END_INTERRUPTED;
	if (now >= s->deadline)
		return AL_END_TIMED_OUT;
	return AL_END_EXITED;
}

/* TERM when the run must stop, KILL after the grace, and the
 * shepherd/init itself when the tree did not report after that. */
static void sup_escalate(sup_state *s, uint64_t now)
{
	al_child *child = s->child;
	if (!s->stopping && !s->exited) {
		al_end why = sup_stop_reason(s, now);
		if (why != AL_END_EXITED) {
			s->end = why;
			s->stopping = true;
			close_fd(&child->stdin_fd);
			child->signal_tree(child->signal_ctx, SIGTERM);
			s->kill_at = now + s->opts->grace_ms;
		}
	}
	if (s->stopping && s->kill_at != 0 && now >= s->kill_at && !s->exited) {
		child->signal_tree(child->signal_ctx, SIGKILL);
		s->kill_at = 0;
		s->force_at = now + KILL_REPORT_MS;
	}
	if (s->force_at != 0 && now >= s->force_at && !s->exited) {
		/* The shepherd/init did not report in time: kill it; for a
		 * pid-namespace init this also kills the rest. */
		kill(child->pid, SIGKILL);
		s->force_at = 0;
	}
}

static int sup_poll_add(sup_poll *p, int fd, short events)
{
	p->pfd[p->np] = (struct pollfd){fd, events, 0};
	return (int)p->np++;
}

static void sup_poll_fill(const sup_state *s, sup_poll *p)
{
	const al_child *child = s->child;
	*p = (sup_poll){.i_in = -1, .i_out = {-1, -1}, .i_st = -1, .i_pid = -1};
	if (child->stdin_fd >= 0)
		p->i_in = sup_poll_add(p, child->stdin_fd, POLLOUT);
	for (int i = 0; i < 2; i++)
		if (*s->pipes[i] >= 0)
			p->i_out[i] = sup_poll_add(p, *s->pipes[i], POLLIN);
	if (child->status_fd >= 0)
		p->i_st = sup_poll_add(p, child->status_fd, POLLIN);
	if (!s->exited && !s->reported && child->pidfd >= 0)
		p->i_pid = sup_poll_add(p, child->pidfd, POLLIN);
	/* only wakes the loop: the state is re-read at the top */
	if (!s->stopping && s->cancel_fd >= 0)
		sup_poll_add(p, s->cancel_fd, POLLIN);
}

/* Until the next deadline of the state the run is in. */
static int sup_poll_timeout(const sup_state *s, uint64_t now)
{
	uint64_t wake = s->exited ? s->give_up_at : s->stopping ? 0 : s->deadline;
	if (s->kill_at != 0)
		wake = s->kill_at;
	if (s->force_at != 0)
		wake = s->force_at;
	int timeout = -1;
	if (wake != 0)
		timeout = wake > now ? (int)(wake - now) : 0;
	if (s->stopping && timeout < 0)
		timeout = 100;
	if (s->later_at != 0 && !s->exited) {
		int later = s->later_at > now ? (int)(s->later_at - now) : 0;
		if (timeout < 0 || later < timeout)
			timeout = later;
	}
	return timeout;
}

static void sup_write_stdin(sup_state *s, short revents)
{
	al_child *child = s->child;
	if (revents & (POLLERR | POLLHUP)) {
		close_fd(&child->stdin_fd);
		return;
	}
	const al_bytes *in = s->opts->stdin_data;
	ssize_t w = write(child->stdin_fd, in->data + s->stdin_off,
			  in->len - s->stdin_off);
	if (w > 0)
		s->stdin_off += (size_t)w;
	if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
	    s->stdin_off >= in->len)
		close_fd(&child->stdin_fd);
}

static bool report_valid(const sup_state *s)
{
	al_exit_report rep;
	if (s->report_len != sizeof(rep))
		return false;
	memcpy(&rep, s->report_buf, sizeof(rep));
	return rep.magic == AL_EXIT_REPORT_MAGIC;
}

static void sup_read_status(sup_state *s)
{
	ssize_t r = read(s->child->status_fd, s->report_buf + s->report_len,
			 sizeof(s->report_buf) - s->report_len);
	if (r > 0) {
		s->report_len += (size_t)r;
		if (s->opts->end_at_report && report_valid(s)) {
			close_fd(&s->child->status_fd);
			s->reported = true;
			if (!s->exited)
				sup_mark_exited(s);
		}
	} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
		/* Only the shepherd/init holds the write end: EOF means it is
		 * gone. */
		close_fd(&s->child->status_fd);
		if (!s->exited)
			sup_mark_exited(s);
	}
}

/* What one poll reported: 0, or a negative errno (err set). */
static int sup_handle_events(sup_state *s, const sup_poll *p, al_error **err)
{
	if (p->i_in >= 0 && p->pfd[p->i_in].revents)
		sup_write_stdin(s, p->pfd[p->i_in].revents);
	for (int i = 0; i < 2; i++) {
		if (p->i_out[i] < 0 || !p->pfd[p->i_out[i]].revents)
			continue;
		int d = drain(*s->pipes[i], &s->cap[i], i, s->opts);
		if (d < 0)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		if (d > 0)
			close_fd(s->pipes[i]);
	}
	if (p->i_st >= 0 && p->pfd[p->i_st].revents)
		sup_read_status(s);
	if (p->i_pid >= 0 && p->pfd[p->i_pid].revents)
		sup_mark_exited(s);
	return 0;
}

/* Polls until the tree is gone and its pipes are closed (or given up
 * on): 0, or a negative errno (err set). */
static int sup_loop(sup_state *s, al_error **err)
{
	const al_child *child = s->child;
	for (;;) {
		if (child->stdout_fd < 0 && child->stderr_fd < 0 &&
		    child->status_fd < 0 && s->exited)
			return 0;
		uint64_t now = (uint64_t)al_mono_ms();
		if (s->later_at != 0 && (s->exited || now >= s->later_at)) {
			if (!s->exited)
				s->opts->later(s->opts->later_ctx);
			s->later_at = 0;
		}
		sup_escalate(s, now);
		if (s->exited && s->give_up_at != 0 && now >= s->give_up_at)
			return 0;
		sup_poll p;
		sup_poll_fill(s, &p);
		int n = poll(p.pfd, p.np, sup_poll_timeout(s, now));
		if (n < 0 && errno != EINTR)
			return al_error_set(err, AL_ERR_INTERNAL, errno, NULL,
					    "poll failed");
		if (n <= 0)
			continue;
		int rc = sup_handle_events(s, &p, err);
		if (rc < 0)
			return rc;
	}
}

/* Whatever happened in the loop, nothing may outlive the run: the
 * shepherd/init is reaped, or, having reported, left to the caller. */
static void sup_reap(sup_state *s)
{
	al_child *child = s->child;
	if (!s->reported) {
		if (!s->exited)
			kill(child->pid, SIGKILL);
		waitpid(child->pid, NULL, __WALL);
		child->pid = -1;
		close_fd(&child->pidfd);
	}
	close_fd(&child->stdin_fd);
	close_fd(&child->stdout_fd);
	close_fd(&child->stderr_fd);
	close_fd(&child->status_fd);
}

/* The report, the end and the captured output into out; rc is the
 * loop's, turned into -ENOMEM when an empty output cannot be made. */
static int sup_fill_result(sup_state *s, al_supervise_result *out, int rc)
{
	out->end = s->end;
	out->init_exiting = s->reported;
	out->wall_ms = (uint64_t)al_mono_ms() - s->start;
	if (s->report_len == sizeof(al_exit_report)) {
		memcpy(&out->report, s->report_buf, sizeof(out->report));
		out->have_report = out->report.magic == AL_EXIT_REPORT_MAGIC;
	}
	if (!out->have_report && out->end == AL_END_EXITED)
		out->end = AL_END_LOST;
	for (int i = 0; i < 2; i++) {
		capture *c = &s->cap[i];
		if (c->buf == NULL && al_bytes_set(&out->output[i], "", 0) < 0)
			rc = rc < 0 ? rc : -ENOMEM;
		else if (c->buf != NULL) {
			out->output[i].data = c->buf;
			out->output[i].len = c->len;
		}
		out->truncated[i] = c->truncated;
		out->output_seen[i] = c->seen;
	}
	return rc;
}

int al_supervise(al_child *child, const al_supervise_opts *opts,
		 al_supervise_result *out, al_error **err)
{
	sup_state s = {
		.child = child,
		.opts = opts,
		.cap = {{.cap = opts->output_cap}, {.cap = opts->output_cap}},
		.pipes = {&child->stdout_fd, &child->stderr_fd},
		.end = AL_END_EXITED,
		.cancel_fd = al_cancel_fd(opts->cancel),
	};
	memset(out, 0, sizeof(*out));

	/* SIGPIPE would kill a CLI host when the program closes stdin early. */
	sigset_t pipe_set, old_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);

	if (opts->stdin_data == NULL || opts->stdin_data->len == 0)
		close_fd(&child->stdin_fd);
	set_nonblock(child->stdin_fd);
	set_nonblock(child->stdout_fd);
	set_nonblock(child->stderr_fd);
	set_nonblock(child->status_fd);

	s.start = (uint64_t)al_mono_ms();
	s.deadline = s.start + opts->wall_ms;
	if (opts->later != NULL)
		s.later_at = s.start + (opts->later_ms > 0 ? opts->later_ms : 1);
	int rc = sup_loop(&s, err);
	sup_reap(&s);
	pthread_sigmask(SIG_SETMASK, &old_set, NULL);
	return sup_fill_result(&s, out, rc);
}

void al_child_reap(int pidfd)
{
	if (pidfd < 0)
		return;
	siginfo_t info;
	while (waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED | __WALL) < 0 &&
	       errno == EINTR)
		;
	close(pidfd);
}

void al_supervise_result_clear(al_supervise_result *r)
{
	for (int s = 0; s < 2; s++)
		al_bytes_clear(&r->output[s]);
}

int al_supervise_to_result(al_supervise_result *r, al_result *res)
{
	int rc = 0;
	int st = r->report.wait_status;

	res->has_exit_code = false;
	res->has_signal = false;
	switch (r->end) {
	case AL_END_TIMED_OUT:
		rc = al_result_set_outcome(res, AL_OUTCOME_TIMED_OUT, NULL);
		break;
	case AL_END_CANCELLED:
		rc = al_result_set_outcome(res, AL_OUTCOME_CANCELLED, NULL);
		break;
	case AL_END_INTERRUPTED:
		rc = al_result_set_outcome(res, AL_OUTCOME_INTERRUPTED, NULL);
		res->has_signal = true;
		res->signal = r->have_report && WIFSIGNALED(st) ? WTERMSIG(st)
								 : SIGTERM;
		break;
	case AL_END_LOST:
		/* The shepherd/init itself was killed (e.g. by the OOM
		 * killer): the program did not end on its own. */
		rc = al_result_set_outcome(res, AL_OUTCOME_KILLED, "signal");
		res->has_signal = true;
		res->signal = SIGKILL;
		break;
	case AL_END_EXITED:
		if (WIFEXITED(st)) {
			res->has_exit_code = true;
			res->exit_code = WEXITSTATUS(st);
			rc = al_result_set_outcome(res,
						   res->exit_code == 0
							   ? AL_OUTCOME_COMPLETED
							   : AL_OUTCOME_FAILED,
						   NULL);
		} else {
			int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
			const char *why = sig == SIGXCPU   ? "cpu_limit"
					  : sig == SIGXFSZ ? "file_size_limit"
							   : "signal";
			rc = al_result_set_outcome(res, AL_OUTCOME_KILLED, why);
			res->has_signal = true;
			res->signal = sig;
		}
		break;
	}
	for (int s = 0; s < 2; s++) {
		al_bytes_clear(&res->output[s]);
		res->output[s] = r->output[s];
		r->output[s].data = NULL;
		r->output[s].len = 0;
		res->truncated[s] = r->truncated[s];
		res->output_seen[s] = r->output_seen[s];
	}
	res->usage.wall_ms = r->wall_ms;
	if (r->have_report) {
		res->usage.cpu_user_ms = r->report.cpu_user_us / 1000u;
		res->usage.cpu_sys_ms = r->report.cpu_sys_us / 1000u;
		res->usage.peak_memory_bytes = r->report.max_rss_bytes;
	}
	return rc;
}
