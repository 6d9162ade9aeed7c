/* The durable run's records (run_records), the daemon-to-supervisor control
 * record (control) and a supervisor's identity (identity): each written
 * and read back, and each tampered or mistaken form refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup/cgfs.h"
#include "core/util.h"
#include "supervisor/control.h"
#include "supervisor/identity.h"
#include "supervisor/record_file.h"
#include "supervisor/run_records.h"

typedef struct fixture {
	char dir[64];
	int runs_fd;
	int run_fd;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/al-records-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(al_runs_dir_open(f->dir, &f->runs_fd), 0);
	assert_int_equal(al_run_dir_open(f->runs_fd, "run-1", true, &f->run_fd), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];
	close(f->run_fd);
	close(f->runs_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void write_file(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void fill_recovery(al_recovery *r, const char *nonce)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->run_id, sizeof(r->run_id), "run-1");
	memcpy(r->nonce, nonce, AL_NONCE_HEX + 1);
	r->tenant = strdup("acme");
	r->provider = strdup("sandbox");
	r->epoch = 7;
	r->created_ms = 1000;
	r->deadline_ms = 2000;
	r->request = strdup("{\"language\":\"sh\"}");
}

static void test_run_ids(void **state)
{
	(void)state;
	assert_true(al_run_id_valid("a"));
	assert_true(al_run_id_valid("A-b_9"));
	assert_false(al_run_id_valid(""));
	assert_false(al_run_id_valid("../x"));
	assert_false(al_run_id_valid("a b"));
	char long_id[41];
	memset(long_id, 'a', 40);
	long_id[40] = '\0';
	assert_false(al_run_id_valid(long_id));
	long_id[39] = '\0';
	assert_true(al_run_id_valid(long_id));
}

static void test_run_dir_taken(void **state)
{
	fixture *f = *state;
	int fd = -1;
	assert_int_equal(al_run_dir_open(f->runs_fd, "run-1", true, &fd), -EEXIST);
	assert_int_equal(al_run_dir_open(f->runs_fd, "run-1", false, &fd), 0);
	close(fd);
	assert_int_equal(al_run_dir_open(f->runs_fd, "absent", false, &fd), -ENOENT);
}

static void test_recovery_round_trip(void **state)
{
	fixture *f = *state;
	char nonce[AL_NONCE_HEX + 1];
	al_recovery w, r;
	assert_int_equal(al_nonce_new(nonce), 0);
	fill_recovery(&w, nonce);
	assert_int_equal(al_recovery_write(f->run_fd, &w), 0);
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), 0);
	assert_string_equal(r.run_id, "run-1");
	assert_string_equal(r.nonce, nonce);
	assert_string_equal(r.tenant, "acme");
	assert_null(r.principal);
	assert_string_equal(r.provider, "sandbox");
	assert_int_equal(r.epoch, 7);
	assert_int_equal(r.created_ms, 1000);
	assert_int_equal(r.deadline_ms, 2000);
	assert_string_equal(r.request, "{\"language\":\"sh\"}");
	al_recovery_clear(&r);

	/* Finished: the request goes, the rest stays. */
	assert_int_equal(al_recovery_drop_request(f->run_fd, &w), 0);
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), 0);
	assert_null(r.request);
	assert_string_equal(r.tenant, "acme");
	al_recovery_clear(&r);
	al_recovery_clear(&w);
}

static void test_recovery_refused(void **state)
{
	fixture *f = *state;
	char nonce[AL_NONCE_HEX + 1];
	al_recovery w, r;
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), -ENOENT);
	assert_int_equal(al_nonce_new(nonce), 0);
	fill_recovery(&w, nonce);
	assert_int_equal(al_recovery_write(f->run_fd, &w), 0);
	/* Another run's record is tampered, not this run's. */
	assert_int_equal(al_recovery_read(f->run_fd, "run-2", &r), -EBADMSG);
	al_recovery_clear(&w);
	write_file(f->run_fd, AL_RF_RECOVERY, "{\"version\": 2, \"run_id\": 3}");
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), -EBADMSG);
	write_file(f->run_fd, AL_RF_RECOVERY, "not json");
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), -EBADMSG);
}

/* A later run of a supervisor that serves several: its cgroup is named
 * by the supervisor's first nonce (sup_nonce), never by the run's. */
static void test_recovery_sup_nonce(void **state)
{
	fixture *f = *state;
	const char *mnt = al_cgfs_unified_mount();
	char nonce[AL_NONCE_HEX + 1], sup[AL_NONCE_HEX + 1];
	al_recovery w, r;
	if (mnt == NULL)
		skip();
	assert_int_equal(al_nonce_new(nonce), 0);
	assert_int_equal(al_nonce_new(sup), 0);
	fill_recovery(&w, nonce);
	memcpy(w.sup_nonce, sup, sizeof(w.sup_nonce));
	w.cgroup = al_strdup_printf("%s/airlock-run-sup-%s.0123abcd", mnt, sup);
	assert_int_equal(al_recovery_write(f->run_fd, &w), 0);
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), 0);
	assert_string_equal(r.nonce, nonce);
	assert_string_equal(r.sup_nonce, sup);
	assert_string_equal(r.cgroup, w.cgroup);
	al_recovery_clear(&r);
	/* Named by the run's own nonce while sup_nonce is there: tampered. */
	free(w.cgroup);
	w.cgroup = al_strdup_printf("%s/airlock-run-sup-%s.0123abcd", mnt, nonce);
	assert_int_equal(al_recovery_write(f->run_fd, &w), 0);
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), -EBADMSG);
	/* sup_nonce equal to the run's nonce: tampered. */
	memcpy(w.sup_nonce, nonce, sizeof(w.sup_nonce));
	assert_int_equal(al_recovery_write(f->run_fd, &w), 0);
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), -EBADMSG);
	/* Without it, as for a first run, the run's nonce names it. */
	w.sup_nonce[0] = '\0';
	assert_int_equal(al_recovery_write(f->run_fd, &w), 0);
	assert_int_equal(al_recovery_read(f->run_fd, "run-1", &r), 0);
	assert_string_equal(r.sup_nonce, "");
	al_recovery_clear(&r);
	al_recovery_clear(&w);
}

/* The result's reserve made ahead by the daemon: the supervisor opens
 * it as made (its entry is durable), commits into it, and a reader
 * settles a committed record whose rename was lost — never a torn or
 * unfinished one. */
static void test_reserve_made_ahead(void **state)
{
	fixture *f = *state;
	const char *rec = "{\"outcome\": \"completed\"}";
	al_record_file_reserve r;

	assert_int_equal(al_record_file_reserve_make(f->run_fd, AL_RF_RESERVE,
						     4096), 0);
	assert_int_equal(al_record_file_reserve_make(f->run_fd, AL_RF_RESERVE,
						     4096), -EEXIST);
	/* Allocated, never written: zeros are not a record. */
	assert_int_equal(al_record_file_settle(f->run_fd, AL_RF_RESERVE,
					       AL_RF_RESULT, 65536), 0);
	assert_int_equal(al_record_file_reserve_open(f->run_fd, AL_RF_RESERVE,
						     4096, &r), 0);
	assert_true(r.entry_durable);
	assert_int_equal(al_record_file_reserve_commit(f->run_fd, &r,
						       AL_RF_RESULT, rec,
						       strlen(rec)), 0);
	assert_true(al_record_file_exists(f->run_fd, AL_RF_RESULT));
	assert_false(al_record_file_exists(f->run_fd, AL_RF_RESERVE));
	/* Nothing to settle once named. */
	assert_int_equal(al_record_file_settle(f->run_fd, AL_RF_RESERVE,
					       AL_RF_RESULT, 65536), 0);

	/* A commit whose rename was lost: the record is found. */
	assert_int_equal(unlinkat(f->run_fd, AL_RF_RESULT, 0), 0);
	write_file(f->run_fd, AL_RF_RESERVE, rec);
	assert_int_equal(al_record_file_settle(f->run_fd, AL_RF_RESERVE,
					       AL_RF_RESULT, 65536), 1);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(al_record_file_read(f->run_fd, AL_RF_RESULT, 65536,
					     &text, &len), 0);
	assert_string_equal(text, rec);
	free(text);

	/* Torn or cut short: left alone. */
	assert_int_equal(unlinkat(f->run_fd, AL_RF_RESULT, 0), 0);
	write_file(f->run_fd, AL_RF_RESERVE, "{\"outcome\": \"compl");
	assert_int_equal(al_record_file_settle(f->run_fd, AL_RF_RESERVE,
					       AL_RF_RESULT, 65536), 0);
	int fd = openat(f->run_fd, AL_RF_RESERVE, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	const char torn[] = "{\"outcome\"\0\0\0\0: \"completed\"}";
	assert_int_equal(write(fd, torn, sizeof(torn) - 1),
			 (ssize_t)(sizeof(torn) - 1));
	close(fd);
	assert_int_equal(al_record_file_settle(f->run_fd, AL_RF_RESERVE,
					       AL_RF_RESULT, 65536), 0);
	assert_false(al_record_file_exists(f->run_fd, AL_RF_RESULT));

	/* A reserve of another size is not taken as made ahead. */
	assert_int_equal(unlinkat(f->run_fd, AL_RF_RESERVE, 0), 0);
	assert_int_equal(al_record_file_reserve_make(f->run_fd, AL_RF_RESERVE,
						     1024), 0);
	assert_int_equal(al_record_file_reserve_open(f->run_fd, AL_RF_RESERVE,
						     4096, &r), 0);
	assert_false(r.entry_durable);
	al_record_file_reserve_drop(f->run_fd, &r);
}

static ino_t inode_of(int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return st.st_ino;
}

/* Writes take the blanks made ahead (their inodes become the records'),
 * then create their temps as before once none is left. */
static void test_blanks_made_ahead(void **state)
{
	fixture *f = *state;
	ino_t blank[AL_RECORD_FILE_BLANKS];
	char name[32];

	assert_int_equal(al_record_file_blanks_make(f->run_fd), 0);
	assert_int_equal(al_record_file_blanks_make(f->run_fd), -EEXIST);
	for (unsigned i = 0; i < AL_RECORD_FILE_BLANKS; i++) {
		snprintf(name, sizeof(name), ".blank.%u", i);
		blank[i] = inode_of(f->run_fd, name);
		assert_true(blank[i] != 0);
		/* empty, with its first blocks allocated (ext4 and tmpfs
		 * both allocate ahead) */
		struct stat bst;
		assert_int_equal(fstatat(f->run_fd, name, &bst, 0), 0);
		assert_int_equal(bst.st_size, 0);
		assert_true(bst.st_blocks * 512 >= AL_RECORD_FILE_BLANK_BYTES);
	}
	for (unsigned i = 0; i < AL_RECORD_FILE_BLANKS + 1; i++) {
		snprintf(name, sizeof(name), "rec%u.json", i);
		assert_int_equal(al_record_file_write(f->run_fd, name, "{}", 2,
						      0640),
				 0);
		ino_t got = inode_of(f->run_fd, name);
		bool was_blank = false;
		for (unsigned j = 0; j < AL_RECORD_FILE_BLANKS; j++)
			was_blank = was_blank || got == blank[j];
		assert_true(was_blank == (i < AL_RECORD_FILE_BLANKS));
		struct stat st;
		assert_int_equal(fstatat(f->run_fd, name, &st, 0), 0);
		assert_int_equal(st.st_mode & 07777, 0640);
		assert_int_equal(st.st_size, 2);
	}
	/* A rewrite replaces the record whole. */
	assert_int_equal(al_record_file_write(f->run_fd, "rec0.json", "{\"a\":1}",
					      7, 0600),
			 0);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(al_record_file_read(f->run_fd, "rec0.json", 64, &text,
					     &len),
			 0);
	assert_string_equal(text, "{\"a\":1}");
	free(text);

	/* Those left are removed; a directory under a blank's name is not
	 * written through, and stays where it was. */
	assert_int_equal(al_record_file_blanks_make(f->run_fd), 0);
	assert_true(inode_of(f->run_fd, ".blank.1") != 0);
	al_record_file_blanks_drop(f->run_fd);
	assert_int_equal(inode_of(f->run_fd, ".blank.1"), 0);
	assert_int_equal(mkdirat(f->run_fd, ".blank.0", 0700), 0);
	assert_int_equal(al_record_file_write(f->run_fd, "rec9.json", "{}", 2,
					      0600),
			 0);
	struct stat st;
	assert_int_equal(fstatat(f->run_fd, ".blank.0", &st, 0), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(unlinkat(f->run_fd, ".blank.0", AT_REMOVEDIR), 0);

	/* A blank that is a link to another file is neither emptied nor
	 * written through. */
	write_file(f->run_fd, "other.json", "{\"keep\": 1}");
	assert_int_equal(linkat(f->run_fd, "other.json", f->run_fd, ".blank.0",
				0),
			 0);
	assert_int_equal(al_record_file_write(f->run_fd, "rec10.json", "{}", 2,
					      0600),
			 0);
	assert_true(inode_of(f->run_fd, "rec10.json") !=
		    inode_of(f->run_fd, "other.json"));
	assert_int_equal(al_record_file_read(f->run_fd, "other.json", 64, &text,
					     &len),
			 0);
	assert_string_equal(text, "{\"keep\": 1}");
	free(text);
	assert_int_equal(inode_of(f->run_fd, ".blank.0"),
			 inode_of(f->run_fd, "other.json"));
	assert_int_equal(unlinkat(f->run_fd, ".blank.0", 0), 0);

	/* A blank that is not empty is not written through (a write never
	 * truncates one), and keeps what it holds. */
	write_file(f->run_fd, ".blank.0", "{\"was\": 1}");
	ino_t full = inode_of(f->run_fd, ".blank.0");
	assert_int_equal(al_record_file_write(f->run_fd, "rec11.json", "{}", 2,
					      0600),
			 0);
	assert_true(inode_of(f->run_fd, "rec11.json") != full);
	assert_int_equal(inode_of(f->run_fd, ".blank.0"), full);
	assert_int_equal(al_record_file_read(f->run_fd, ".blank.0", 64, &text,
					     &len),
			 0);
	assert_string_equal(text, "{\"was\": 1}");
	free(text);
}

static void test_lease(void **state)
{
	fixture *f = *state;
	al_recovery r = {.epoch = 4};
	uint64_t lease = 0;
	assert_int_equal(al_lease_read(f->run_fd, &r, &lease), 0);
	assert_int_equal(lease, 4);
	write_file(f->run_fd, AL_RF_LEASE, "9\n");
	assert_int_equal(al_lease_read(f->run_fd, &r, &lease), 0);
	assert_int_equal(lease, 9);
}

static void test_epoch_increases(void **state)
{
	fixture *f = *state;
	uint64_t a = 0, b = 0;
	assert_int_equal(al_epoch_next(f->dir, &a), 0);
	assert_int_equal(al_epoch_next(f->dir, &b), 0);
	assert_true(b == a + 1);
}

static void test_control_round_trip(void **state)
{
	fixture *f = *state;
	uint64_t epoch = 0;
	al_control_action action = 0;
	assert_int_equal(al_control_read(f->run_fd, &epoch, &action), -ENOENT);
	assert_int_equal(al_control_write(f->run_fd, 12, AL_CONTROL_STOP), 0);
	assert_int_equal(al_control_read(f->run_fd, &epoch, &action), 0);
	assert_int_equal(epoch, 12);
	assert_int_equal(action, AL_CONTROL_STOP);
	assert_int_equal(al_control_write(f->run_fd, 13, AL_CONTROL_INTERRUPT), 0);
	assert_int_equal(al_control_read(f->run_fd, &epoch, &action), 0);
	assert_int_equal(epoch, 13);
	assert_int_equal(action, AL_CONTROL_INTERRUPT);
}

static void test_control_malformed(void **state)
{
	fixture *f = *state;
	uint64_t epoch = 5;
	al_control_action action = AL_CONTROL_STOP;
	static const char *const bad[] = {
		"{\"epoch\": 1, \"action\": \"reboot\"}",
		"{\"epoch\": -1, \"action\": \"stop\"}",
		"{\"epoch\": \"1\", \"action\": \"stop\"}",
		"{\"action\": \"stop\"}",
		"[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(f->run_fd, AL_RF_CONTROL, bad[i]);
		assert_int_equal(al_control_read(f->run_fd, &epoch, &action),
				 -EBADMSG);
	}
	assert_int_equal(epoch, 5);
	assert_int_equal(action, AL_CONTROL_STOP);
}

static void test_nonces(void **state)
{
	(void)state;
	char a[AL_NONCE_HEX + 1], b[AL_NONCE_HEX + 1];
	assert_int_equal(al_nonce_new(a), 0);
	assert_int_equal(al_nonce_new(b), 0);
	assert_true(al_nonce_valid(a));
	assert_string_not_equal(a, b);
	assert_false(al_nonce_valid("abc"));
	a[0] = 'G';
	assert_false(al_nonce_valid(a));
}

/* A stand-in supervisor: a shell whose argv carries "supervise --nonce
 * HEX", blocked reading a pipe until the test closes it. */
static pid_t start_fake(const char *nonce, int *wfd)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[0], 0);
		execl("/bin/sh", "sh", "-c", "read x", "supervise", "--nonce",
		      nonce, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*wfd = p[1];
	/* Wait for the exec: the argv is the child's own once it shows. */
	for (int i = 0; i < 5000 && !al_proc_has_nonce(pid, nonce); i++)
		usleep(1000);
	return pid;
}

static void test_identity(void **state)
{
	(void)state;
	char nonce[AL_NONCE_HEX + 1], other[AL_NONCE_HEX + 1];
	al_identity id = {0}, found = {0};
	char st = 0;
	int wfd, status;
	assert_int_equal(al_nonce_new(nonce), 0);
	assert_int_equal(al_nonce_new(other), 0);

	/* This process is no supervisor. */
	assert_int_equal(al_proc_stat(getpid(), &id.starttime, &st), 0);
	assert_false(al_proc_has_nonce(getpid(), nonce));

	pid_t pid = start_fake(nonce, &wfd);
	assert_true(al_proc_has_nonce(pid, nonce));
	assert_false(al_proc_has_nonce(pid, other));
	id.pid = pid;
	assert_int_equal(al_proc_stat(pid, &id.starttime, &st), 0);
	assert_int_equal(al_identity_verify(&id, nonce), 0);
	assert_int_equal(al_identity_verify(&id, other), -ESRCH);
	assert_int_equal(al_identity_scan(nonce, &found), 0);
	assert_int_equal(found.pid, pid);
	assert_int_equal(found.starttime, id.starttime);

	/* A recycled pid has another start time: never signalled.  Without
	 * pidfds (valgrind does not know pidfd_open) nothing is signalled at
	 * all, and the signal call says so. */
	al_identity stale = {.pid = pid, .starttime = id.starttime + 1};
	assert_int_equal(al_identity_verify(&stale, nonce), -ESRCH);
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	bool pidfds = fd >= 0;
	if (pidfds)
		close(fd);
	assert_int_equal(al_identity_signal(&stale, nonce, SIGKILL),
			 pidfds ? -ESRCH : -ENOSYS);
	if (pidfds)
		assert_int_equal(al_identity_signal(&id, nonce, SIGKILL), 0);
	else
		assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(wfd);
	assert_int_equal(al_identity_verify(&id, nonce), -ESRCH);
	assert_int_equal(al_identity_scan(nonce, &found), -ESRCH);
}

static void test_identity_record(void **state)
{
	fixture *f = *state;
	al_identity w = {.pid = 1234, .starttime = 98765}, r = {0};
	assert_int_equal(al_identity_read(f->run_fd, &r), -ENOENT);
	assert_int_equal(al_identity_write(f->run_fd, &w), 0);
	assert_int_equal(al_identity_read(f->run_fd, &r), 0);
	assert_int_equal(r.pid, 1234);
	assert_int_equal(r.starttime, 98765);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_ids),
		cmocka_unit_test_setup_teardown(test_run_dir_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery_sup_nonce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reserve_made_ahead, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_blanks_made_ahead, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_epoch_increases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_malformed, setup, teardown),
		cmocka_unit_test(test_nonces),
		cmocka_unit_test(test_identity),
		cmocka_unit_test_setup_teardown(test_identity_record, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
