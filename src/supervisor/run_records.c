/* A durable run's directory and records (see run_records.h). */
#include "supervisor/run_records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "airlock/json.h"
#include "child/rundir.h"
#include "core/dir_spread.h"
#include "core/util.h"
#include "supervisor/record_file.h"
#include "cgroup/cgroup.h"

bool al_run_id_valid(const char *s)
{
	return al_token_valid(s, 39);
}

void al_recovery_clear(al_recovery *r)
{
	free(r->tenant);
	free(r->principal);
	free(r->provider);
	free(r->cgroup);
	free(r->request);
	free(r->config);
	free(r->module);
	free(r->facts);
	memset(r, 0, sizeof(*r));
}

static json_t *str_or_null(const char *s)
{
	json_t *j = s != NULL ? json_string(s) : NULL;
	return j != NULL ? j : json_null();
}

static int recovery_write_how(int dirfd, const al_recovery *r,
			      al_record_file_how how)
{
	json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:o, s:s, s:o, s:I, s:I, s:I, "
			      "s:o, s:o, s:o}",
			      "version", 2, "run_id", r->run_id, "nonce",
			      r->nonce, "tenant", r->tenant, "principal",
			      str_or_null(r->principal), "provider",
			      r->provider, "cgroup", str_or_null(r->cgroup),
			      "epoch", (json_int_t)r->epoch, "created_ms",
			      (json_int_t)r->created_ms, "deadline_ms",
			      (json_int_t)r->deadline_ms, "request",
			      str_or_null(r->request), "config",
			      str_or_null(r->config), "facts",
			      str_or_null(r->facts));
	/* Only a provider module's run names one: the record of any other
	 * run stays as it was. */
	if (o != NULL && r->module != NULL &&
	    json_object_set_new(o, "module", json_string(r->module)) < 0) {
		json_decref(o);
		o = NULL;
	}
	/* Likewise only a run of a supervisor serving several. */
	if (o != NULL && r->sup_nonce[0] != '\0' &&
	    json_object_set_new(o, "sup_nonce", json_string(r->sup_nonce)) <
		    0) {
		json_decref(o);
		o = NULL;
	}
	if (o == NULL)
		return -ENOMEM;
	if (r->build_cache_bytes > 0 || r->parallel > 1) {
		json_t *b = json_pack("{s:I, s:b, s:I}", "cache_bytes",
				      (json_int_t)r->build_cache_bytes, "shared",
				      r->build_cache_shared, "parallel",
				      (json_int_t)r->parallel);
		if (b == NULL || json_object_set_new(o, "build", b) < 0) {
			json_decref(o);
			return -ENOMEM;
		}
	}
	int rc = al_record_file_write_json_how(dirfd, AL_RF_RECOVERY, o, 0600, how);
	json_decref(o);
	return rc;
}

int al_recovery_write(int dirfd, const al_recovery *r)
{
	return recovery_write_how(dirfd, r, AL_RECORD_FILE_DURABLE);
}

int al_recovery_write_unsynced(int dirfd, const al_recovery *r)
{
	return recovery_write_how(dirfd, r, AL_RECORD_FILE_ATOMIC);
}

int al_recovery_drop_request(int dirfd, al_recovery *r)
{
	if (r->request == NULL)
		return 0;
	free(r->request);
	r->request = NULL;
	return recovery_write_how(dirfd, r, AL_RECORD_FILE_ATOMIC);
}

int al_lease_read(int dirfd, const al_recovery *r, uint64_t *lease)
{
	int rc = al_record_file_read_u64(dirfd, AL_RF_LEASE, lease);
	if (rc == -ENOENT) {
		*lease = r->epoch;
		rc = 0;
	}
	return rc;
}

/* A printable, bounded string field; NULL allowed when nullable. */
static int take_str(json_t *o, const char *key, bool nullable, size_t max,
		    char **out)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return nullable ? 0 : -EBADMSG;
	if (!json_is_string(v))
		return -EBADMSG;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n == 0 || n > max || strlen(s) != n)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return -EBADMSG;
	return (*out = strdup(s)) != NULL ? 0 : -ENOMEM;
}

/* A text carried whole (JSON, not shown): bounded, without NUL. */
static int take_text(json_t *o, const char *key, size_t max, char **out)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EBADMSG;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n > max || strlen(s) != n)
		return -EBADMSG;
	return (*out = strdup(s)) != NULL ? 0 : -ENOMEM;
}

static int take_int(json_t *o, const char *key, int64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EBADMSG;
	*out = json_integer_value(v);
	return 0;
}

int al_recovery_read(int dirfd, const char *run_id, al_recovery *r)
{
	json_t *o = NULL;
	char *id = NULL, *nonce = NULL, *sup_nonce = NULL;
	int64_t epoch = 0, version = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = al_record_file_read_json(dirfd, AL_RF_RECOVERY, AL_RF_MAX_RUNREC,
				     &o)) < 0)
		return rc == -ENOENT || rc == -ENOMEM ? rc : -EBADMSG;
	if ((rc = take_int(o, "version", &version)) < 0 || version != 2 ||
	    (rc = take_str(o, "run_id", false, 39, &id)) < 0 ||
	    (rc = take_str(o, "nonce", false, AL_NONCE_HEX, &nonce)) < 0 ||
	    (rc = take_str(o, "tenant", false, 256, &r->tenant)) < 0 ||
	    (rc = take_str(o, "principal", true, 256, &r->principal)) < 0 ||
	    (rc = take_str(o, "provider", false, 64, &r->provider)) < 0 ||
	    (rc = take_str(o, "cgroup", true, 4096, &r->cgroup)) < 0 ||
	    (rc = take_int(o, "epoch", &epoch)) < 0 ||
	    (rc = take_int(o, "created_ms", &r->created_ms)) < 0 ||
	    (rc = take_int(o, "deadline_ms", &r->deadline_ms)) < 0 ||
	    (rc = take_text(o, "request", 2u * AL_MAX_REQUEST_BYTES,
			    &r->request)) < 0 ||
	    (rc = take_text(o, "config", 4u * AL_RF_MAX_SMALL, &r->config)) <
		    0 ||
	    (rc = take_text(o, "facts", 4u * AL_RF_MAX_SMALL, &r->facts)) < 0 ||
	    (json_object_get(o, "module") != NULL &&
	     (rc = take_str(o, "module", false, 4095, &r->module)) < 0) ||
	    (json_object_get(o, "sup_nonce") != NULL &&
	     (rc = take_str(o, "sup_nonce", false, AL_NONCE_HEX, &sup_nonce)) <
		     0)) {
		rc = rc == -ENOMEM ? rc : -EBADMSG;
		goto out;
	}
	/* The cgroup is the run id's, or the idle supervisor's it was
	 * handed to: named by the run's nonce, or by sup_nonce for a
	 * supervisor's later run (never both: sup_nonce differs). */
	if (version != 2 || strcmp(id, run_id) != 0 || !al_nonce_valid(nonce) ||
	    (sup_nonce != NULL &&
	     (!al_nonce_valid(sup_nonce) || strcmp(sup_nonce, nonce) == 0)) ||
	    (r->cgroup != NULL &&
	     !al_run_cgroup_valid(r->cgroup, run_id,
				  sup_nonce != NULL ? sup_nonce : nonce))) {
		rc = -EBADMSG;
		goto out;
	}
	snprintf(r->run_id, sizeof(r->run_id), "%s", id);
	memcpy(r->nonce, nonce, AL_NONCE_HEX + 1);
	if (sup_nonce != NULL)
		memcpy(r->sup_nonce, sup_nonce, AL_NONCE_HEX + 1);
	r->epoch = (uint64_t)epoch;
	r->parallel = 1;
	json_t *b = json_object_get(o, "build");
	if (json_is_object(b)) {
		int64_t bytes = 0, par = 1;
		json_t *sh = json_object_get(b, "shared");
		if (take_int(b, "cache_bytes", &bytes) < 0 ||
		    take_int(b, "parallel", &par) < 0 || par < 1 || par > 64 ||
		    !json_is_boolean(sh)) {
			rc = -EBADMSG;
			goto out;
		}
		r->build_cache_bytes = (uint64_t)bytes;
		r->build_cache_shared = json_is_true(sh);
		r->parallel = (unsigned)par;
	}
out:
	if (rc < 0)
		al_recovery_clear(r);
	free(id);
	free(nonce);
	free(sup_nonce);
	json_decref(o);
	return rc;
}

int al_identity_write(int dirfd, const al_identity *id)
{
	json_t *o = json_pack("{s:i, s:I}", "pid", (int)id->pid, "starttime",
			      (json_int_t)id->starttime);
	if (o == NULL)
		return -ENOMEM;
	/* Only read while the supervisor may be alive: a machine crash ends
	 * it, and a stale record never verifies (start time, nonce). */
	int rc = al_record_file_write_json_how(dirfd, AL_RF_IDENTITY, o, 0600,
					 AL_RECORD_FILE_ATOMIC);
	json_decref(o);
	return rc;
}

int al_identity_read(int dirfd, al_identity *id)
{
	json_t *o = NULL;
	int64_t pid = 0, st = 0;
	int rc = al_record_file_read_json(dirfd, AL_RF_IDENTITY, 4096, &o);
	if (rc < 0)
		return rc == -ENOENT ? rc : -EBADMSG;
	if (take_int(o, "pid", &pid) < 0 || take_int(o, "starttime", &st) < 0 ||
	    pid <= 0 || pid > 0x7fffffff)
		rc = -EBADMSG;
	json_decref(o);
	if (rc == 0) {
		id->pid = (pid_t)pid;
		id->starttime = (uint64_t)st;
	}
	return rc;
}

int al_runs_dir_open(const char *state_dir, int *fd)
{
	char *path = al_strdup_printf("%s/" AL_RUNS_DIR, state_dir);
	*fd = -1;
	if (path == NULL)
		return -ENOMEM;
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		free(path);
		return -e;
	}
	int d = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc = d < 0 ? -errno : 0;
	free(path);
	struct stat st;
	if (rc == 0 && (fstat(d, &st) < 0 || st.st_uid != geteuid() ||
			(st.st_mode & 0077) != 0)) {
		/* Someone else could plant or swap run directories. */
		close(d);
		return -EPERM;
	}
	/* A run made on admission lands where its inodes are cheap. */
	if (rc == 0)
		al_dir_spread_children(d);
	*fd = d;
	return rc;
}

int al_run_dir_open(int runs_fd, const char *run_id, bool create, int *fd)
{
	*fd = -1;
	if (!al_run_id_valid(run_id))
		return -EINVAL;
	if (create && mkdirat(runs_fd, run_id, 0700) < 0)
		return -errno;
	int d = openat(runs_fd, run_id,
		       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return -errno;
	*fd = d;
	return 0;
}

int al_epoch_next(const char *state_dir, uint64_t *out)
{
	int dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int lock = al_record_file_lock(dfd, "epoch.lock");
	if (lock < 0) {
		close(dfd);
		return lock;
	}
	uint64_t epoch = 0;
	int rc = al_record_file_read_u64(dfd, "epoch", &epoch);
	if (rc == -ENOENT)
		rc = 0;
	if (rc == 0) {
		epoch++;
		rc = al_record_file_write_u64(dfd, "epoch", epoch);
	}
	close(lock);
	close(dfd);
	if (rc == 0)
		*out = epoch;
	return rc;
}

const char *al_run_work_tmpfs(const char *provider, const char *module)
{
	if (provider == NULL || module != NULL ||
	    strcmp(provider, "sandbox") != 0)
		return NULL;
	return al_rundir_tmpfs_base();
}
