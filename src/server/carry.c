/* Carry-over of unacknowledged inbox events (server/carry.h). */
#include "server/carry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/record_file.h"
#include "supervisor/inbox.h"
#include "supervisor/run_records.h"

/* Opens the run's directory when it is this tenant's and finished. */
static int open_from(al_durable *d, const char *from, const char *tenant,
		     int *fd)
{
	al_recovery rec;
	memset(&rec, 0, sizeof(rec));
	*fd = -1;
	if (!al_run_id_valid(from))
		return -ENOENT;
	int rc = al_run_dir_open(al_durable_runs_fd(d), from, false, fd);
	if (rc < 0)
		return rc == -ENOMEM ? rc : -ENOENT;
	rc = al_recovery_read(*fd, from, &rec);
	if (rc == 0 && (rec.tenant == NULL || strcmp(rec.tenant, tenant) != 0))
		rc = -ENOENT;
	else if (rc < 0 && rc != -ENOMEM)
		rc = -ENOENT;
	al_recovery_clear(&rec);
	/* The inbox takes no event once the result is recorded: what is
	 * pending then stays so. */
	if (rc == 0 && !al_record_file_exists(*fd, AL_RF_RESULT))
		rc = -EBUSY;
	if (rc == 0 && al_record_file_exists(*fd, AL_RF_CARRIED))
		rc = -EALREADY;
	if (rc < 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

int al_carry_check(al_durable *d, const char *from, const char *tenant)
{
	int fd;
	int rc = open_from(d, from, tenant, &fd);
	if (fd >= 0)
		close(fd);
	return rc;
}

int al_carry_over(al_durable *d, const char *from, const char *tenant,
		  al_drun *to)
{
	char **ids = NULL, **events = NULL;
	size_t n = 0;
	int fd, lock = -1;
	int rc = open_from(d, from, tenant, &fd);
	if (rc < 0)
		return rc;
	if ((lock = al_record_file_lock_dir(fd)) < 0) {
		rc = lock;
		goto out;
	}
	/* The mark first: a crash part way leaves events undelivered,
	 * never delivered twice. */
	if ((rc = al_record_file_touch(fd, AL_RF_CARRIED)) != 0) {
		rc = rc == 1 ? -EALREADY : rc;
		goto out;
	}
	if ((rc = al_inbox_pending(fd, &ids, &events, &n)) < 0)
		goto out;
	size_t done = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		/* Straight into its inbox: the new run is not launched yet
		 * and its creator holds its lock. */
		int r = al_inbox_deliver(al_drun_dirfd(to), ids[i], events[i]);
		if (r < 0)
			rc = r;
		else if (r == 0)
			done++;
	}
	if (rc >= 0)
		rc = (int)done;
out:
	for (size_t i = 0; i < n; i++) {
		free(ids[i]);
		free(events[i]);
	}
	free(ids);
	free(events);
	if (lock >= 0)
		close(lock);
	close(fd);
	return rc;
}
