/* A durable run's inbox (see inbox.h). */
#include "supervisor/inbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "supervisor/record_file.h"
#include "supervisor/run_records.h"

int al_inbox_prepare(int dirfd)
{
	if (mkdirat(dirfd, AL_RF_INBOX, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* mkdir applies the umask: say it exactly. */
	int fd = openat(dirfd, AL_RF_INBOX,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fchmod(fd, 0755) == 0 ? 0 : -errno;
	close(fd);
	if (rc == 0 && mkdirat(dirfd, AL_RF_ACKS, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	return rc;
}

typedef struct delivered {
	unsigned seq;
	char id[AL_MAX_INBOX_ID_BYTES + 1];
} delivered;

/* "NNNNNN-<id>.json" → seq and id; false for anything else. */
static bool parse_name(const char *name, delivered *out)
{
	size_t n = strlen(name);
	if (n < 6 + 1 + 1 + 5 || strcmp(name + n - 5, ".json") != 0 ||
	    name[6] != '-')
		return false;
	unsigned seq = 0;
	for (int i = 0; i < 6; i++) {
		if (name[i] < '0' || name[i] > '9')
			return false;
		seq = seq * 10 + (unsigned)(name[i] - '0');
	}
	size_t idlen = n - 7 - 5;
	if (idlen > AL_MAX_INBOX_ID_BYTES)
		return false;
	memcpy(out->id, name + 7, idlen);
	out->id[idlen] = '\0';
	out->seq = seq;
	return al_inbox_id_valid(out->id);
}

static int by_seq(const void *a, const void *b)
{
	const delivered *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The delivered events, in order. */
static int list_delivered(int dirfd, delivered **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	int fd = openat(dirfd, AL_RF_INBOX,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -errno;
	}
	/* grown with what is there: most runs hold no event, and room for
	 * the most would be ~70 KiB touched per run */
	delivered *arr = NULL;
	size_t k = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		delivered e;
		if (!parse_name(de->d_name, &e) || k >= AL_MAX_INBOX_EVENTS)
			continue;
		if (k == cap) {
			size_t c = cap > 0 ? cap * 2 : 8;
			delivered *p = realloc(arr, c * sizeof(*arr));
			if (p == NULL) {
				rc = -ENOMEM;
				break;
			}
			arr = p;
			cap = c;
		}
		arr[k++] = e;
	}
	closedir(d);
	if (rc < 0) {
		free(arr);
		return rc;
	}
	if (k > 1)
		qsort(arr, k, sizeof(*arr), by_seq);
	*out = arr;
	*n = k;
	return 0;
}

int al_inbox_deliver(int dirfd, const char *id, const char *event_json)
{
	delivered *arr = NULL;
	size_t n = 0;
	char name[96];
	int rc;

	if (!al_inbox_id_valid(id))
		return -EINVAL;
	if (al_record_file_exists(dirfd, AL_RF_RESULT))
		return -EALREADY;
	if ((rc = list_delivered(dirfd, &arr, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (strcmp(arr[i].id, id) == 0) {
			free(arr);
			return 1;
		}
	unsigned seq = n > 0 ? arr[n - 1].seq + 1 : 1;
	free(arr);
	if (n >= AL_MAX_INBOX_EVENTS || seq > 999999)
		return -ENOSPC;
	snprintf(name, sizeof(name), "%06u-%s.json", seq, id);
	int ifd = openat(dirfd, AL_RF_INBOX,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ifd < 0)
		return -errno;
	/* Written whole under its final name by rename: the program never
	 * reads half an event. */
	rc = al_record_file_write(ifd, name, event_json, strlen(event_json), 0444);
	close(ifd);
	return rc;
}

int al_inbox_acked(int dirfd, char ***ids, size_t *n)
{
	delivered *arr = NULL;
	size_t k = 0, m = 0;
	*ids = NULL;
	*n = 0;
	int rc = list_delivered(dirfd, &arr, &k);
	if (rc < 0 || k == 0) {
		free(arr);
		return rc;
	}
	int afd = openat(dirfd, AL_RF_ACKS,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **out = calloc(k, sizeof(*out));
	if (afd < 0 || out == NULL) {
		rc = afd < 0 ? (errno == ENOENT ? 0 : -errno) : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		struct stat st;
		/* The marker's existence is the acknowledgement; it is
		 * never followed or read. */
		if (fstatat(afd, arr[i].id, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if ((out[m] = strdup(arr[i].id)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		m++;
	}
	if (m > 0) {
		*ids = out;
		*n = m;
		out = NULL;
	}
out:
	if (out != NULL) {
		for (size_t i = 0; i < m; i++)
			free(out[i]);
		free(out);
	}
	if (afd >= 0)
		close(afd);
	free(arr);
	return rc;
}

int al_inbox_pending(int dirfd, char ***ids, char ***events, size_t *n)
{
	delivered *arr = NULL;
	size_t k = 0, m = 0;
	char **out = NULL, **ev = NULL;
	*ids = NULL;
	if (events != NULL)
		*events = NULL;
	*n = 0;
	int rc = list_delivered(dirfd, &arr, &k);
	if (rc < 0 || k == 0) {
		free(arr);
		return rc;
	}
	int afd = openat(dirfd, AL_RF_ACKS,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int ifd = openat(dirfd, AL_RF_INBOX,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	out = calloc(k, sizeof(*out));
	ev = events != NULL ? calloc(k, sizeof(*ev)) : NULL;
	if (ifd < 0 || out == NULL || (events != NULL && ev == NULL)) {
		rc = ifd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		struct stat st;
		/* No acks directory: nothing was acknowledged. */
		if (afd >= 0 &&
		    fstatat(afd, arr[i].id, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if ((out[m] = strdup(arr[i].id)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		m++;
		if (ev == NULL)
			continue;
		char name[96];
		snprintf(name, sizeof(name), "%06u-%s.json", arr[i].seq,
			 arr[i].id);
		if ((rc = al_record_file_read(ifd, name, AL_MAX_INBOX_EVENT_BYTES +
						       AL_MAX_INBOX_ID_BYTES +
						       64,
					&ev[m - 1], NULL)) < 0)
			goto out;
	}
	if (m > 0) {
		*ids = out;
		*n = m;
		out = NULL;
		if (events != NULL) {
			*events = ev;
			ev = NULL;
		}
	}
out:
	for (size_t i = 0; out != NULL && i < m; i++)
		free(out[i]);
	free(out);
	for (size_t i = 0; ev != NULL && i < m; i++)
		free(ev[i]);
	free(ev);
	if (afd >= 0)
		close(afd);
	if (ifd >= 0)
		close(ifd);
	free(arr);
	return rc;
}

int al_inbox_result_pending(int dirfd, al_result *res)
{
	for (size_t i = 0; i < res->n_inbox_pending; i++)
		free(res->inbox_pending[i]);
	free(res->inbox_pending);
	res->inbox_pending = NULL;
	res->n_inbox_pending = 0;
	return al_inbox_pending(dirfd, &res->inbox_pending, NULL,
				&res->n_inbox_pending);
}
