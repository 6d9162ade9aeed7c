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
	unsigned char *grown = realloc(c->buf, c->len + keep + 1);
	if (grown == NULL)
		return -ENOMEM;
	c->buf = grown;
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

int al_supervise(al_child *child, const al_supervise_opts *opts,
		 al_supervise_result *out, al_error **err)
{
	capture cap[2] = {{.cap = opts->output_cap}, {.cap = opts->output_cap}};
	int *pipes[2] = {&child->stdout_fd, &child->stderr_fd};
	size_t stdin_off = 0;
	unsigned char report_buf[sizeof(al_exit_report)];
	size_t report_len = 0;
	bool exited = false;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->end = AL_END_EXITED;

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

	const uint64_t start = (uint64_t)al_mono_ms();
	const uint64_t deadline = start + opts->wall_ms;
	uint64_t kill_at = 0;	     /* set once TERM went out */
	uint64_t force_at = 0;	     /* set once KILL went out */
	uint64_t give_up_at = 0;     /* set once the shepherd/init is gone */
	bool stopping = false;
	int cancel_fd = al_cancel_fd(opts->cancel);

	for (;;) {
		if (child->stdout_fd < 0 && child->stderr_fd < 0 &&
		    child->status_fd < 0 && exited)
			break;
		uint64_t now = (uint64_t)al_mono_ms();

		if (!stopping && !exited) {
			al_cancel_kind ck = al_cancel_state(opts->cancel);
			al_end why = AL_END_EXITED;
			if (ck == AL_CANCEL_CANCELLED)
				why = AL_END_CANCELLED;
			else if (ck == AL_CANCEL_INTERRUPTED)
				why = AL_END_INTERRUPTED;
			else if (now >= deadline)
				why = AL_END_TIMED_OUT;
			if (why != AL_END_EXITED) {
				out->end = why;
				stopping = true;
				close_fd(&child->stdin_fd);
				child->signal_tree(child->signal_ctx, SIGTERM);
				kill_at = now + opts->grace_ms;
			}
		}
		if (stopping && kill_at != 0 && now >= kill_at && !exited) {
			child->signal_tree(child->signal_ctx, SIGKILL);
			kill_at = 0;
			force_at = now + KILL_REPORT_MS;
		}
		if (force_at != 0 && now >= force_at && !exited) {
			/* The shepherd/init did not report in time: kill it;
			 * for a pid-namespace init this also kills the rest. */
			kill(child->pid, SIGKILL);
			force_at = 0;
		}
		if (exited && give_up_at != 0 && now >= give_up_at)
			break;

		struct pollfd pfd[6];
		int np = 0, i_in = -1, i_out[2] = {-1, -1}, i_st = -1;
		int i_pid = -1, i_cancel = -1;
		if (child->stdin_fd >= 0) {
			i_in = np;
			pfd[np++] = (struct pollfd){child->stdin_fd, POLLOUT, 0};
		}
		for (int s = 0; s < 2; s++) {
			if (*pipes[s] >= 0) {
				i_out[s] = np;
				pfd[np++] = (struct pollfd){*pipes[s], POLLIN, 0};
			}
		}
		if (child->status_fd >= 0) {
			i_st = np;
			pfd[np++] = (struct pollfd){child->status_fd, POLLIN, 0};
		}
		if (!exited && child->pidfd >= 0) {
			i_pid = np;
			pfd[np++] = (struct pollfd){child->pidfd, POLLIN, 0};
		}
		if (!stopping && cancel_fd >= 0) {
			i_cancel = np;
			pfd[np++] = (struct pollfd){cancel_fd, POLLIN, 0};
		}

		uint64_t wake = exited ? give_up_at : stopping ? 0 : deadline;
		if (kill_at != 0)
			wake = kill_at;
		if (force_at != 0)
			wake = force_at;
		int timeout = -1;
		if (wake != 0)
			timeout = wake > now ? (int)(wake - now) : 0;
		if (stopping && timeout < 0)
			timeout = 100;

		int n = poll(pfd, (nfds_t)np, timeout);
		if (n < 0 && errno != EINTR) {
			rc = al_error_set(err, AL_ERR_INTERNAL, errno, NULL,
					  "poll failed");
			break;
		}
		if (n <= 0)
			continue;
		(void)i_cancel; /* the state is re-read at the top */

		if (i_in >= 0 && pfd[i_in].revents) {
			if (pfd[i_in].revents & (POLLERR | POLLHUP)) {
				close_fd(&child->stdin_fd);
			} else {
				const al_bytes *in = opts->stdin_data;
				ssize_t w = write(child->stdin_fd,
						  in->data + stdin_off,
						  in->len - stdin_off);
				if (w > 0)
					stdin_off += (size_t)w;
				if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
				    stdin_off >= in->len)
					close_fd(&child->stdin_fd);
			}
		}
		for (int s = 0; s < 2; s++) {
			if (i_out[s] >= 0 && pfd[i_out[s]].revents) {
				int d = drain(*pipes[s], &cap[s], s, opts);
				if (d < 0) {
					rc = al_error_set(err, AL_ERR_INTERNAL,
							  ENOMEM, NULL,
							  "out of memory");
					goto out;
				}
				if (d > 0)
					close_fd(pipes[s]);
			}
		}
		if (i_st >= 0 && pfd[i_st].revents) {
			ssize_t r = read(child->status_fd, report_buf + report_len,
					 sizeof(report_buf) - report_len);
			if (r > 0)
				report_len += (size_t)r;
			else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				/* Only the shepherd/init holds the write end:
				 * EOF means it is gone. */
				close_fd(&child->status_fd);
				if (!exited) {
					exited = true;
					give_up_at = (uint64_t)al_mono_ms() + DRAIN_AFTER_EXIT_MS;
				}
			}
		}
		if (i_pid >= 0 && pfd[i_pid].revents) {
			exited = true;
			give_up_at = (uint64_t)al_mono_ms() + DRAIN_AFTER_EXIT_MS;
		}
	}
out:
	/* Whatever happened above, nothing may outlive the run. */
	if (!exited)
		kill(child->pid, SIGKILL);
	waitpid(child->pid, NULL, __WALL);
	child->pid = -1;
	close_fd(&child->stdin_fd);
	close_fd(&child->stdout_fd);
	close_fd(&child->stderr_fd);
	close_fd(&child->status_fd);
	close_fd(&child->pidfd);
	pthread_sigmask(SIG_SETMASK, &old_set, NULL);

	out->wall_ms = (uint64_t)al_mono_ms() - start;
	if (report_len == sizeof(al_exit_report)) {
		memcpy(&out->report, report_buf, sizeof(out->report));
		out->have_report = out->report.magic == AL_EXIT_REPORT_MAGIC;
	}
	if (!out->have_report && out->end == AL_END_EXITED)
		out->end = AL_END_LOST;
	for (int s = 0; s < 2; s++) {
		if (cap[s].buf == NULL && al_bytes_set(&out->output[s], "", 0) < 0)
			rc = rc < 0 ? rc : -ENOMEM;
		else if (cap[s].buf != NULL) {
			out->output[s].data = cap[s].buf;
			out->output[s].len = cap[s].len;
		}
		out->truncated[s] = cap[s].truncated;
		out->output_seen[s] = cap[s].seen;
	}
	return rc;
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
