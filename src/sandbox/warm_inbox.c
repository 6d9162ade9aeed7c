/* The inbox of a warm pool member: its own directories, and the
 * forwarder between them and the run's (see warm_inbox.h). */
#include "sandbox/warm_inbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/util.h"

/* An event file is {"id": ..., "event": ...}: the event's bytes and a
 * little more; anything larger is not the daemon's and is not copied. */
#define EVENT_FILE_MAX (2u * AL_MAX_INBOX_EVENT_BYTES)
/* The thread looks at the run's inbox every TICK_MS (one fstat while
 * nothing changes) and at the member's acks every ACK_TICKS ticks (they
 * are read when the run ends; live, they only serve a recovery).  A
 * poll, not inotify: closing an inotify descriptor waits for an SRCU
 * grace period, which every pooled run would pay. */
#define TICK_MS AL_SB_INBOX_TICK_MS
#define ACK_TICKS 10
/* A directory changed this recently may change again within the same
 * timestamp tick: looked at again until it is older. */
#define RECENT_NS (100 * 1000000LL)

static int mkdir_exact(const char *root, const char *name, mode_t mode,
		       uid_t uid, char **out)
{
	char *path = al_strdup_printf("%s/%s", root, name);
	if (path == NULL)
		return -ENOMEM;
	int rc = 0;
	if (mkdir(path, mode) < 0)
		rc = -errno;
	/* mkdir applies the umask: say the mode exactly, as a cold run's */
	int fd = rc == 0 ? open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					      O_CLOEXEC)
			 : -1;
	if (rc == 0 && fd < 0)
		rc = -errno;
	if (rc == 0 && fchmod(fd, mode) < 0)
		rc = -errno;
	if (rc == 0 && uid != (uid_t)-1 && fchown(fd, uid, (gid_t)uid) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		free(path);
		return rc;
	}
	*out = path;
	return 0;
}

int al_sb_inbox_dir_create(const char *root, char **inbox)
{
	*inbox = NULL;
	return mkdir_exact(root, "inbox", 0755, (uid_t)-1, inbox);
}

/* ---- the forwarder ------------------------------------------------- */

typedef char inbox_id[AL_MAX_INBOX_ID_BYTES + 1];

struct al_sb_inbox_fwd {
	int src_fd, dst_fd;	/* the run's inbox, the member's (-1: none) */
	int macks_fd, hacks_fd; /* the member's acks (the program's), the run's */
	DIR *src_dir;		/* listing of src_fd (a dup) */
	struct timespec src_seen, acks_seen; /* their ctimes when looked at */
	int stop_fd;
	pthread_t thread;
	bool started;
	int begin_rc; /* the thread's start, when it failed */
	/* Forwarded events, AL_MAX_INBOX_EVENTS at most.  Both arrays
	 * grow with the events a run is sent: most runs get none, and
	 * zeroing room for the most would touch ~330 KiB per run. */
	struct fwd_event *events;
	size_t n, cap;
	char (*names)[NAME_MAX + 1]; /* a sweep's new events */
	size_t names_cap;
};

struct fwd_event {
	unsigned seq;
	bool acked;
	inbox_id id;
};

/* Room for need elements of size in *arr (of *cap): doubled from 8 and
 * bounded by AL_MAX_INBOX_EVENTS, which callers never ask beyond. */
static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap > 0 ? *cap : 8;
	while (c < need)
		c *= 2;
	if (c > AL_MAX_INBOX_EVENTS)
		c = AL_MAX_INBOX_EVENTS;
	void *p = realloc(*arr, c * size);
	if (p == NULL)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

/* The sequence number of an event's name (event_name checked it). */
static unsigned event_seq(const char *name)
{
	unsigned seq = 0;
	for (int i = 0; i < 6; i++)
		seq = seq * 10 + (unsigned)(name[i] - '0');
	return seq;
}

/* "NNNNNN-<id>.json" with a valid id (as the daemon names events): the
 * id into id; false for anything else (its temps among them). */
static bool event_name(const char *name, inbox_id id)
{
	size_t n = strlen(name);
	if (n < 6 + 1 + 1 + 5 || n > 6 + 1 + AL_MAX_INBOX_ID_BYTES + 5 ||
	    strcmp(name + n - 5, ".json") != 0 || name[6] != '-')
		return false;
	for (int i = 0; i < 6; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	memcpy(id, name + 7, n - 12);
	id[n - 12] = '\0';
	return al_inbox_id_valid(id);
}

static int read_event(int fd, const struct stat *st, char **out)
{
	size_t len = (size_t)st->st_size, got = 0;
	char *buf = malloc(len + 1);
	if (buf == NULL)
		return -ENOMEM;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return r < 0 ? -errno : -EIO;
		}
		got += (size_t)r;
	}
	*out = buf;
	return 0;
}

/* One event into the member's inbox, whole: written under a temp name
 * like the daemon's (a dot name, which no reader of events takes), then
 * renamed; 0444, the source's owner and times. */
static int copy_event(al_sb_inbox_fwd *f, const char *name)
{
	char tmp[NAME_MAX + 1], *data = NULL;
	struct stat st;
	int rc = 0, out = -1;
	int in = openat(f->src_fd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > EVENT_FILE_MAX)
		rc = -EINVAL;
	if (rc == 0)
		rc = read_event(in, &st, &data);
	close(in);
	if (rc == 0 && snprintf(tmp, sizeof(tmp), ".%s.%d.%d.tmp", name,
				(int)getpid(), (int)gettid()) >= (int)sizeof(tmp))
		rc = -ENAMETOOLONG;
	if (rc < 0)
		goto out;
	unlinkat(f->dst_fd, tmp, 0); /* ours, from a failed attempt */
	out = openat(f->dst_fd, tmp,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	rc = al_write_all(out, data, (size_t)st.st_size);
	if (rc == 0 && fchmod(out, 0444) < 0)
		rc = -errno;
	if (rc == 0 && geteuid() == 0 && fchown(out, st.st_uid, st.st_gid) < 0)
		rc = -errno;
	struct timespec times[2] = {st.st_atim, st.st_mtim};
	if (rc == 0 && futimens(out, times) < 0)
		rc = -errno;
	close(out);
	if (rc == 0 && renameat(f->dst_fd, tmp, f->dst_fd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(f->dst_fd, tmp, 0);
out:
	free(data);
	return rc;
}

/* A directory listed while an event is renamed into it may return a
 * later event and not that one: what was taken is remembered by number,
 * not by the newest number seen. */
static bool taken(const al_sb_inbox_fwd *f, unsigned seq)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->events[i].seq == seq)
			return true;
	return false;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The run's events not yet in the member's inbox, copied in delivery
 * order (the names sort by their sequence number). */
static int sweep_events(al_sb_inbox_fwd *f)
{
	size_t k = 0;
	int rc = 0;
	struct dirent *de;
	rewinddir(f->src_dir);
	while (f->n + k < AL_MAX_INBOX_EVENTS &&
	       (de = readdir(f->src_dir)) != NULL) {
		inbox_id id;
		struct stat st;
		if (!event_name(de->d_name, id))
			continue;
		/* taken before: copied into the member's inbox, or (events
		 * bound directly) noted by an earlier sweep */
		if (f->dst_fd >= 0 ? fstatat(f->dst_fd, de->d_name, &st,
					     AT_SYMLINK_NOFOLLOW) == 0
				   : taken(f, event_seq(de->d_name)))
			continue;
		rc = grow((void **)&f->names, &f->names_cap, k + 1,
			  sizeof(f->names[0]));
		if (rc < 0)
			return rc;
		snprintf(f->names[k++], sizeof(f->names[0]), "%s", de->d_name);
	}
	if (k > 0) {
		rc = grow((void **)&f->events, &f->cap, f->n + k,
			  sizeof(f->events[0]));
		if (rc < 0)
			return rc;
	}
	if (k > 1)
		qsort(f->names, k, sizeof(f->names[0]), by_name);
	for (size_t i = 0; i < k; i++) {
		int r = f->dst_fd >= 0 ? copy_event(f, f->names[i]) : 0;
		if (r < 0) {
			rc = r;
			break; /* the next sweep tries it again, in order */
		}
		struct fwd_event *e = &f->events[f->n++];
		e->seq = event_seq(f->names[i]);
		e->acked = false;
		event_name(f->names[i], e->id);
	}
	return rc;
}

/* A marker named after a forwarded event's id, of whatever type (its
 * existence is the acknowledgement, as the supervisor reads RUN/acks),
 * becomes an empty file in the run's acks.  The program's directory is
 * never listed: a lookup per event, whatever it holds. */
static int sweep_acks(al_sb_inbox_fwd *f)
{
	int rc = 0;
	for (size_t i = 0; i < f->n; i++) {
		struct stat st;
		struct fwd_event *e = &f->events[i];
		if (e->acked ||
		    fstatat(f->macks_fd, e->id, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		int fd = openat(f->hacks_fd, e->id,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC,
				0600);
		if (fd >= 0 || errno == EEXIST)
			e->acked = true;
		else
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

/* true when the directory may hold something new since *seen: its
 * ctime moved, or is too recent to tell (coarse timestamps). */
static bool changed(int fd, struct timespec *seen)
{
	struct stat st;
	struct timespec now;
	if (fstat(fd, &st) < 0)
		return true;
	bool moved = st.st_ctim.tv_sec != seen->tv_sec ||
		     st.st_ctim.tv_nsec != seen->tv_nsec;
	*seen = st.st_ctim;
	if (moved || clock_gettime(CLOCK_REALTIME, &now) < 0)
		return true;
	long long age = (long long)(now.tv_sec - st.st_ctim.tv_sec) *
				1000000000LL +
			(now.tv_nsec - st.st_ctim.tv_nsec);
	return age < RECENT_NS;
}

static void *fwd_main(void *arg)
{
	al_sb_inbox_fwd *f = arg;
	struct pollfd p = {f->stop_fd, POLLIN, 0};
	/* it begins a tick into the run: what came meanwhile, at once */
	if (changed(f->src_fd, &f->src_seen))
		sweep_events(f);
	for (unsigned tick = 1;; tick++) {
		int r = poll(&p, 1, TICK_MS);
		if (r > 0 || (r < 0 && errno != EINTR))
			break; /* stopped */
		if (changed(f->src_fd, &f->src_seen))
			sweep_events(f);
		if (tick % ACK_TICKS == 0 && changed(f->macks_fd, &f->acks_seen))
			sweep_acks(f);
	}
	return NULL;
}

static void fwd_free(al_sb_inbox_fwd *f)
{
	int *fds[] = {&f->src_fd, &f->dst_fd, &f->macks_fd, &f->hacks_fd,
		      &f->stop_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	if (f->src_dir != NULL)
		closedir(f->src_dir);
	free(f->events);
	free(f->names);
	free(f);
}

static int open_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

int al_sb_inbox_fwd_start(const char *host_inbox, const char *host_acks,
			  const char *m_inbox, int m_acks_fd,
			  al_sb_inbox_fwd **out)
{
	*out = NULL;
	al_sb_inbox_fwd *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->stop_fd = -1;
	f->src_fd = open_dir(host_inbox);
	f->hacks_fd = open_dir(host_acks);
	f->dst_fd = m_inbox != NULL ? open_dir(m_inbox) : -1;
	f->macks_fd = fcntl(m_acks_fd, F_DUPFD_CLOEXEC, 3);
	if (f->macks_fd < 0)
		f->macks_fd = -errno;
	int rc = f->src_fd < 0	  ? f->src_fd
		 : f->hacks_fd < 0 ? f->hacks_fd
		 : m_inbox != NULL && f->dst_fd < 0 ? f->dst_fd
				   : f->macks_fd;
	if (rc > 0)
		rc = 0;
	if (rc == 0) {
		int d = dup(f->src_fd);
		f->src_dir = d >= 0 ? fdopendir(d) : NULL;
		if (f->src_dir == NULL) {
			rc = -errno;
			if (d >= 0)
				close(d);
		}
	}
	/* events already delivered are there before the program starts */
	if (rc == 0) {
		changed(f->src_fd, &f->src_seen);
		rc = sweep_events(f);
	}
	if (rc == 0 && (f->stop_fd = eventfd(0, EFD_CLOEXEC)) < 0)
		rc = -errno;
	if (rc < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	fwd_free(f);
	return rc;
}

void al_sb_inbox_fwd_begin(void *arg)
{
	al_sb_inbox_fwd *f = arg;
	if (f == NULL || f->started || f->begin_rc < 0)
		return;
	f->begin_rc = -pthread_create(&f->thread, NULL, fwd_main, f);
	f->started = f->begin_rc == 0;
}

int al_sb_inbox_fwd_stop(al_sb_inbox_fwd *f)
{
	if (f == NULL)
		return 0;
	if (f->started) {
		uint64_t one = 1;
		ssize_t w = write(f->stop_fd, &one, sizeof(one));
		(void)w; /* an eventfd of ours: it cannot be full */
		pthread_join(f->thread, NULL);
	}
	/* The program is over.  Events delivered since the last sweep are
	 * taken too: a marker made ahead for one counts, as cold. */
	sweep_events(f);
	int rc = sweep_acks(f);
	if (f->begin_rc < 0)
		rc = f->begin_rc;
	fwd_free(f);
	return rc;
}
