/* Run directories made ahead (see run_spares.h). */
#include "server/run_spares.h"
#include "child/rundir.h"
#include "core/dir_spread.h"
#include "core/util.h"
#include "supervisor/inbox.h"
#include "supervisor/record_file.h"
#include "supervisor/run_records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A slot's spare, under its slot directory. */
#define SPARE_NAME "run"
/* After a failed attempt (a full disk, say) the maker waits this long. */
#define RETRY_MS 1000

typedef enum slot_state { SLOT_EMPTY, SLOT_BUSY, SLOT_READY } slot_state;

struct al_run_spares {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int spares_fd;
	int runs_fd;
	unsigned count;
	int *slot_fd;
	slot_state *state;
	bool stop;
	/* a rename across the two directories failed for good (another
	 * file system): spares are not used again */
	bool unusable;
	unsigned long long taken, missed;
};

/* The entries every run directory starts with, as al_drun_create makes
 * them; a failure leaves nothing behind. */
static int make_spare(int slot_fd)
{
	int rc = al_remove_tree_at(slot_fd, SPARE_NAME);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (mkdirat(slot_fd, SPARE_NAME, 0700) < 0)
		return -errno;
	int fd = openat(slot_fd, SPARE_NAME,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = fd < 0 ? -errno : al_inbox_prepare(fd);
	if (rc == 0)
		rc = al_record_file_reserve_make(fd, AL_RF_RESERVE,
						 AL_RF_RESERVE_BYTES);
	if (rc == 0) {
		int log = openat(fd, AL_RF_LOG,
				 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					 O_CLOEXEC,
				 0600);
		if (log < 0)
			rc = -errno;
		else
			close(log);
	}
	if (rc == 0)
		rc = al_record_file_blanks_make(fd);
	if (rc == 0 && mkdirat(fd, AL_RF_STORE_AHEAD, 0700) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		al_remove_tree_at(slot_fd, SPARE_NAME);
	return rc;
}

static int first_in(const al_run_spares *s, slot_state want)
{
	for (unsigned k = 0; k < s->count; k++)
		if (s->state[k] == want)
			return (int)k;
	return -1;
}

static void wait_ms(al_run_spares *s, int ms)
{
	struct timespec until;
	al_mono_deadline(&until, ms);
	pthread_cond_timedwait(&s->cv, &s->mu, &until);
}

static void *maker(void *arg)
{
	al_run_spares *s = arg;
	/* Only the cores' idle moments: a request never waits for a spare
	 * (it makes its own), so this work must not compete with one. */
	struct sched_param none = {0};
	(void)sched_setscheduler(0, SCHED_IDLE, &none);
	pthread_setname_np(pthread_self(), "airlock-spares");
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		int k = s->unusable ? -1 : first_in(s, SLOT_EMPTY);
		if (k < 0) {
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		s->state[k] = SLOT_BUSY;
		pthread_mutex_unlock(&s->mu);
		int rc = make_spare(s->slot_fd[k]);
		pthread_mutex_lock(&s->mu);
		s->state[k] = rc == 0 ? SLOT_READY : SLOT_EMPTY;
		if (rc < 0 && !s->stop)
			wait_ms(s, RETRY_MS);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void spares_free(al_run_spares *s)
{
	for (unsigned k = 0; s->slot_fd != NULL && k < s->count; k++)
		if (s->slot_fd[k] >= 0)
			close(s->slot_fd[k]);
	if (s->spares_fd >= 0)
		close(s->spares_fd);
	if (s->runs_fd >= 0)
		close(s->runs_fd);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->slot_fd);
	free(s->state);
	free(s);
}

static int open_dir_at(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(dirfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* What earlier daemons left (half-made spares included): every epoch's
 * directory whose lock we can take, its daemon being gone. */
static void remove_unlocked(int base)
{
	int dup_fd = fcntl(base, F_DUPFD_CLOEXEC, 3);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (dir == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		int fd = openat(base, de->d_name,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
			al_remove_tree_at(base, de->d_name);
		if (fd >= 0)
			close(fd);
	}
	closedir(dir);
}

int al_run_spares_start(int state_fd, int runs_fd, uint64_t epoch,
			unsigned count, al_run_spares **out)
{
	*out = NULL;
	if (count == 0)
		return 0;
	if (count > AL_RUN_SPARES_MAX)
		return -EINVAL;
	al_run_spares *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->spares_fd = s->runs_fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	s->count = count;
	s->slot_fd = malloc(count * sizeof(*s->slot_fd));
	s->state = calloc(count, sizeof(*s->state));
	int rc = s->slot_fd == NULL || s->state == NULL ? -ENOMEM : 0;
	for (unsigned k = 0; rc == 0 && k < count; k++)
		s->slot_fd[k] = -1;
	if (rc == 0 && (s->runs_fd = fcntl(runs_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		rc = -errno;
	int base = rc == 0 ? open_dir_at(state_fd, AL_SPARE_RUNS_DIR) : -1;
	if (rc == 0 && base < 0)
		rc = base;
	if (rc == 0)
		remove_unlocked(base);
	/* Our own, locked while we live: a daemon sharing the state
	 * directory never removes a spare we may be renaming. */
	char own[24];
	snprintf(own, sizeof(own), "%llu", (unsigned long long)epoch);
	if (rc == 0 && (s->spares_fd = open_dir_at(base, own)) < 0)
		rc = s->spares_fd;
	if (rc == 0 && flock(s->spares_fd, LOCK_EX | LOCK_NB) < 0)
		rc = -errno;
	if (base >= 0)
		close(base);
	for (unsigned k = 0; rc == 0 && k < count; k++) {
		char name[16];
		snprintf(name, sizeof(name), "%u", k);
		if ((s->slot_fd[k] = open_dir_at(s->spares_fd, name)) < 0)
			rc = s->slot_fd[k];
		else
			/* its spares land where allocation is cheap */
			al_dir_spread_children(s->slot_fd[k]);
	}
	if (rc == 0 && (rc = -pthread_create(&s->thread, NULL, maker, s)) < 0)
		s->thread = 0;
	if (rc < 0) {
		spares_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int al_run_spares_take(al_run_spares *s, const char *run_id)
{
	if (!al_run_id_valid(run_id))
		return -EINVAL;
	if (s == NULL)
		return -EAGAIN;
	pthread_mutex_lock(&s->mu);
	int k = s->unusable ? -1 : first_in(s, SLOT_READY);
	if (k < 0) {
		s->missed++;
		pthread_mutex_unlock(&s->mu);
		return -EAGAIN;
	}
	s->state[k] = SLOT_BUSY;
	pthread_mutex_unlock(&s->mu);

	int rc = renameat2(s->slot_fd[k], SPARE_NAME, s->runs_fd, run_id,
			   RENAME_NOREPLACE) == 0
			 ? 0
			 : -errno;

	pthread_mutex_lock(&s->mu);
	/* Taken: the slot is the maker's again.  Refused because the name
	 * is in use: the spare is still whole.  Anything else: the maker
	 * removes what is left and starts over. */
	s->state[k] = rc == -EEXIST ? SLOT_READY : SLOT_EMPTY;
	if (rc == 0)
		s->taken++;
	else if (rc != -EEXIST)
		s->missed++;
	if (rc == -EXDEV || rc == -EPERM)
		s->unusable = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return rc == 0 || rc == -EEXIST ? rc : -EAGAIN;
}

void al_run_spares_counts(al_run_spares *s, unsigned long long *taken,
			  unsigned long long *missed)
{
	*taken = *missed = 0;
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	*taken = s->taken;
	*missed = s->missed;
	pthread_mutex_unlock(&s->mu);
}

void al_run_spares_stop(al_run_spares *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	spares_free(s);
}
