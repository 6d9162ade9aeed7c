/* The mechanisms airlock's sandbox provider applies per run, with none of
 * its bookkeeping (no request, no JSON, no pipes to a supervisor, no
 * files beyond the mount points): one function per layer, each level
 * adding one layer on top of the one before (bench/README.md, "The
 * floor").  The sequence of calls follows a `strace -f` of one provider
 * run; where this file does less, bench/README.md says what and why.
 *
 * Process shape, as in airlock: this process makes the cgroups and
 * clones the init (pid 1 of the new pid namespace); the init builds the
 * root and drops to the run's ids, forks the program and waits for it;
 * the program drops what is left and execs CMD. */
#include "floor_layers.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

/* airlock's clone flags: no user namespace at clone (the init is real
 * root while it mounts), the cgroup namespace comes after the move into
 * the run's cgroups. */
#define AL_CLONE_FLAGS                                                       \
	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID |          \
	 CLONE_NEWNET)

/* The run's ids outside its user namespace (nobody: any id without
 * files or processes of its own will do). */
#define RUN_ID 65534

/* airlock's default limits. */
#define MEM_LIMIT "536870912"
#define TCP_MEM_LIMIT "67108864"
#define PIDS_LIMIT "256"
#define TMP_OPTS "mode=1777,size=67108864,nr_inodes=16384"

/* What the system headers (Debian 12) may predate: the kernel's UAPI. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define LL_NET_TCP ((1ULL << 0) | (1ULL << 1))	/* bind, connect */
#define LL_SCOPED ((1ULL << 0) | (1ULL << 1)) /* abstract unix, signal */

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI >= 4 */
	uint64_t scoped;	     /* ABI >= 6 */
};

/* ---- what fl_prepare finds once ---------------------------------------- */

static char cg_v2_base[512], cg_mem_base[512], cg_pids_base[512];
static bool cg_ready;
static char cg_tag[32]; /* random part of the cgroup names */
static unsigned cg_seq;

/* The host's top-level symlinks into /usr (/bin -> usr/bin, ...). */
static char host_links[8][2][64];
static int n_host_links;

static int cap_last;
static int ll_abi;
static struct sock_filter *bpf;
static unsigned short bpf_len;

/* The step that failed last, for the message on stderr. */
static char failed_at[256];

static int step(long rc, const char *what)
{
	if (rc >= 0)
		return 0;
	int e = errno > 0 ? errno : EIO;
	size_t n = strnlen(what, sizeof(failed_at) - 1); /* cut if long */
	memcpy(failed_at, what, n);
	failed_at[n] = '\0';
	return -e;
}

/* A child's last words: what failed, then exit 126 (counted as failed). */
static _Noreturn void die(const char *layer, int rc)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "floor: %s: %s: %s\n", layer,
			 failed_at, strerror(-rc));
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		_exit(126);
	_exit(126);
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return step(-1, path);
	size_t len = strlen(s);
	int rc = write(fd, s, len) == (ssize_t)len ? 0 : step(-1, path);
	close(fd);
	return rc;
}

/* Reads and discards a small file: the cost of reading a figure. */
static int read_file(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return step(-1, path);
	ssize_t n = read(fd, buf, len - 1);
	int rc = n < 0 ? step(-1, path) : 0;
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return rc;
}

/* ---- layer: cgroups (in this process, around the clone) ---------------- */

/* Own cgroup of each hierarchy, from /proc/self/cgroup: the runs' cgroups
 * go beneath them and nowhere else. */
static int find_own_cgroups(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (f == NULL)
		return -errno;
	char line[1024];
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		char *ctl = strchr(line, ':');
		char *path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (path == NULL)
			continue;
		*path++ = '\0';
		*ctl++ = '\0';
		if (strcmp(path, "/") == 0)
			path = "";
		char *base = NULL;
		const char *root = NULL;
		if (strcmp(line, "0") == 0 && *ctl == '\0') {
			base = cg_v2_base;
			root = "/sys/fs/cgroup/unified";
		} else {
			for (char *save = NULL, *c = strtok_r(ctl, ",", &save);
			     c != NULL; c = strtok_r(NULL, ",", &save)) {
				if (strcmp(c, "memory") == 0) {
					base = cg_mem_base;
					root = "/sys/fs/cgroup/memory";
				} else if (strcmp(c, "pids") == 0) {
					base = cg_pids_base;
					root = "/sys/fs/cgroup/pids";
				}
			}
		}
		if (base != NULL)
			snprintf(base, sizeof(cg_v2_base), "%s%s", root, path);
	}
	fclose(f);
	if (!cg_v2_base[0] || !cg_mem_base[0] || !cg_pids_base[0])
		return -ENOENT;
	return 0;
}

struct run_cg {
	char v2[640], mem[640], pids[640];
	bool made_v2, made_mem, made_pids;
	int v2_fd, mem_tasks, pids_tasks;
};

static int cg_write(const char *dir, const char *file, const char *val)
{
	char p[768];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return write_file(p, val);
}

static void cg_close_fds(struct run_cg *cg)
{
	int *fds[] = {&cg->v2_fd, &cg->mem_tasks, &cg->pids_tasks};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* rmdir, retried briefly: a cgroup can stay busy for a moment after its
 * last task is reaped. */
static int cg_rmdir(const char *dir)
{
	for (int i = 0; i < 100; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "floor: rmdir %s: %s\n", dir, strerror(errno));
	return -errno;
}

/* Removes what cg_create made, whatever state it is in. */
static int cg_remove(struct run_cg *cg)
{
	cg_close_fds(cg);
	int rc = 0, r;
	if (cg->made_pids && (r = cg_rmdir(cg->pids)) < 0)
		rc = r;
	if (cg->made_mem && (r = cg_rmdir(cg->mem)) < 0)
		rc = r;
	if (cg->made_v2 && (r = cg_rmdir(cg->v2)) < 0)
		rc = r;
	cg->made_v2 = cg->made_mem = cg->made_pids = false;
	return rc;
}

/* The run's three cgroups with airlock's limits, and the descriptors the
 * clone and the init need to enter them. */
static int cg_create(struct run_cg *cg)
{
	if (!cg_ready)
		return -ENOENT;
	char name[64];
	snprintf(name, sizeof(name), "airlock-floor-%s-%u", cg_tag, cg_seq++);
	snprintf(cg->v2, sizeof(cg->v2), "%s/%s", cg_v2_base, name);
	snprintf(cg->mem, sizeof(cg->mem), "%s/%s", cg_mem_base, name);
	snprintf(cg->pids, sizeof(cg->pids), "%s/%s", cg_pids_base, name);
	if (mkdir(cg->v2, 0755) < 0)
		return step(-1, cg->v2);
	cg->made_v2 = true;
	cg->v2_fd = open(cg->v2, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	if (cg->v2_fd < 0)
		return step(-1, cg->v2);
	if (mkdir(cg->mem, 0755) < 0)
		return step(-1, cg->mem);
	cg->made_mem = true;
	if (mkdir(cg->pids, 0755) < 0)
		return step(-1, cg->pids);
	cg->made_pids = true;
	char memsw[768];
	snprintf(memsw, sizeof(memsw), "%s/memory.memsw.limit_in_bytes",
		 cg->mem);
	int rc = cg_write(cg->mem, "memory.limit_in_bytes", MEM_LIMIT);
	if (rc == 0 && access(memsw, F_OK) == 0)
		rc = write_file(memsw, MEM_LIMIT);
	if (rc == 0)
		rc = cg_write(cg->pids, "pids.max", PIDS_LIMIT);
	if (rc == 0)
		rc = cg_write(cg->mem, "memory.kmem.tcp.limit_in_bytes",
			      TCP_MEM_LIMIT);
	if (rc < 0)
		return rc;
	char p[768];
	snprintf(p, sizeof(p), "%s/tasks", cg->mem);
	if ((cg->mem_tasks = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return step(-1, p);
	snprintf(p, sizeof(p), "%s/tasks", cg->pids);
	if ((cg->pids_tasks = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return step(-1, p);
	return 0;
}

/* In the init: into the v1 cgroups ("0" is the writer itself); the v2
 * one it entered at the clone. */
static int cg_join(const struct run_cg *cg)
{
	if (write(cg->mem_tasks, "0", 1) != 1)
		return step(-1, "memory tasks");
	if (write(cg->pids_tasks, "0", 1) != 1)
		return step(-1, "pids tasks");
	return 0;
}

/* The figures airlock reads after a run. */
static int cg_read_stats(const struct run_cg *cg, bool verbose)
{
	static const char *const files[] = {"cpu.stat",
					    "memory.max_usage_in_bytes",
					    "memory.oom_control", "pids.events"};
	const char *const dirs[] = {cg->v2, cg->mem, cg->mem, cg->pids};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char p[768], buf[512];
		snprintf(p, sizeof(p), "%s/%s", dirs[i], files[i]);
		int rc = read_file(p, buf, sizeof(buf));
		if (rc < 0)
			return rc;
		if (verbose) {
			for (char *c = buf; *c; c++)
				if (*c == '\n')
					*c = ' ';
			printf("parent read %s: %s\n", p, buf);
		}
	}
	return 0;
}

/* ---- layer: mounts (in the init, real root in its mount namespace) ----- */

/* A read-only bind of a host path (seen under /.oldroot) at the same
 * place in the new root; a file needs a file to bind on. */
static int bind_host(const char *path, bool dir, unsigned long ro_flags)
{
	char src[256];
	snprintf(src, sizeof(src), "/.oldroot%s", path);
	if (dir) {
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return step(-1, path);
	} else {
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
		if (fd < 0)
			return step(-1, path);
		close(fd);
	}
	if (mount(src, path, NULL, MS_BIND, NULL) < 0)
		return step(-1, path);
	return step(mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | ro_flags,
			  NULL),
		    path);
}

static int mount_tmpfs(const char *path, mode_t mode, unsigned long flags,
		       const char *opts)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return step(-1, path);
	return step(mount("tmpfs", path, "tmpfs", flags, opts), path);
}

/* /dev: a small tmpfs with binds of the five harmless device nodes. */
static int build_dev(void)
{
	int rc = mount_tmpfs("/dev", 0755, MS_NOSUID | MS_NODEV,
			     "mode=0755,size=64k");
	static const char *const nodes[] = {"/dev/null", "/dev/zero",
					    "/dev/full", "/dev/random",
					    "/dev/urandom"};
	for (size_t i = 0; rc == 0 && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		rc = bind_host(nodes[i], false, MS_NOSUID | MS_NOEXEC);
	static const char *const links[][2] = {
		{"/proc/self/fd", "/dev/fd"},
		{"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"},
		{"/proc/self/fd/2", "/dev/stderr"}};
	for (size_t i = 0; rc == 0 && i < sizeof(links) / sizeof(links[0]); i++)
		rc = step(symlink(links[i][0], links[i][1]), links[i][1]);
	if (rc == 0)
		rc = mount_tmpfs("/dev/shm", 0755, MS_NOSUID | MS_NODEV,
				 TMP_OPTS);
	return rc;
}

/* /proc of the new pid namespace with the host-revealing parts masked:
 * files under /dev/null, directories under an empty read-only tmpfs,
 * the writable trees read-only.  What this kernel lacks is skipped. */
static int build_proc(void)
{
	if (mkdir("/proc", 0555) < 0)
		return step(-1, "/proc");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return step(-1, "mount /proc");
	static const char *const masked[] = {
		"/proc/kcore",	      "/proc/sysrq-trigger", "/proc/kmsg",
		"/proc/timer_list",   "/proc/sched_debug",   "/proc/keys",
		"/proc/key-users",    "/proc/latency_stats", "/proc/timer_stats",
		"/proc/kallsyms",     "/proc/modules",	     "/proc/vmallocinfo",
		"/proc/slabinfo",     "/proc/pagetypeinfo",  "/proc/config.gz",
		"/proc/acpi",	      "/proc/scsi",	     "/proc/locks"};
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		struct stat st;
		if (lstat(masked[i], &st) < 0)
			continue;
		int rc = S_ISDIR(st.st_mode)
				 ? step(mount("tmpfs", masked[i], "tmpfs",
					      MS_RDONLY | MS_NOSUID | MS_NODEV |
						      MS_NOEXEC,
					      "size=0,mode=0555"),
					masked[i])
				 : step(mount("/dev/null", masked[i], NULL,
					      MS_BIND, NULL),
					masked[i]);
		if (rc < 0)
			return rc;
	}
	static const char *const ro[] = {"/proc/sys", "/proc/irq",
					 "/proc/bus", "/proc/fs",
					 "/proc/sysvipc", "/proc/driver"};
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		struct stat st;
		if (lstat(ro[i], &st) < 0)
			continue;
		if (mount(ro[i], ro[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
		    mount(NULL, ro[i], NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID |
				  MS_NODEV | MS_NOEXEC,
			  NULL) < 0)
			return step(-1, ro[i]);
	}
	return 0;
}

/* The whole view: a tmpfs root, the host's /usr and two /etc entries
 * read-only, /tmp, the code directory as a read-only overlay, /dev,
 * /proc; then the host's root detached and the root made read-only. */
static int build_root(void)
{
	const unsigned long ro = MS_RDONLY | MS_NOSUID | MS_NODEV;
	int rc = step(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "/");
	if (rc == 0)
		rc = step(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
				"mode=0755,size=1m"),
			  "root tmpfs");
	if (rc == 0)
		rc = step(chdir("/tmp"), "chdir root");
	if (rc == 0)
		rc = step(mkdir(".oldroot", 0700), ".oldroot");
	if (rc == 0)
		rc = step(syscall(SYS_pivot_root, ".", ".oldroot"),
			  "pivot_root");
	if (rc == 0)
		rc = step(chdir("/"), "chdir /");
	if (rc == 0)
		rc = bind_host("/usr", true, ro);
	for (int i = 0; rc == 0 && i < n_host_links; i++)
		rc = step(symlink(host_links[i][1], host_links[i][0]),
			  host_links[i][0]);
	if (rc == 0)
		rc = step(mkdir("/etc", 0755), "/etc");
	if (rc == 0)
		rc = bind_host("/etc/ld.so.cache", false, ro);
	if (rc == 0)
		rc = bind_host("/etc/alternatives", true, ro);
	if (rc == 0)
		rc = mount_tmpfs("/tmp", 0755, MS_NOSUID | MS_NODEV, TMP_OPTS);
	/* The code directory: airlock overlays the run's host directory with
	 * an empty one; here both layers are empty directories of the new
	 * root (later hidden under /dev's tmpfs, as airlock's empty one). */
	if (rc == 0)
		rc = step(mkdir("/code", 0755), "/code");
	if (rc == 0)
		rc = step(mkdir("/dev", 0555), "/dev");
	if (rc == 0)
		rc = step(mkdir("/dev/.view-empty", 0555), "/dev/.view-empty");
	if (rc == 0)
		rc = step(mkdir("/dev/.view-code", 0555), "/dev/.view-code");
	if (rc == 0)
		rc = step(mount("overlay", "/code", "overlay", ro,
				"lowerdir=/dev/.view-code:/dev/.view-empty"),
			  "/code overlay");
	if (rc == 0)
		rc = step(mkdir("/workspace", 0755), "/workspace");
	if (rc == 0)
		rc = build_dev();
	if (rc == 0)
		rc = build_proc();
	if (rc == 0)
		rc = step(umount2("/.oldroot", MNT_DETACH), "umount /.oldroot");
	if (rc == 0)
		rc = step(rmdir("/.oldroot"), "rmdir /.oldroot");
	if (rc == 0)
		rc = step(mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | ro, NULL),
			  "remount / ro");
	if (rc == 0)
		rc = step(sethostname("airlock", 7), "sethostname");
	return rc;
}

/* ---- layer: credentials (init, then program) --------------------------- */

/* In the init: the run's unprivileged ids, then a user namespace in
 * which they are root, mapped by the init itself (one id, own id: no
 * privilege needed).  Dumpable while writing the maps, since changing
 * ids made /proc/self root's. */
static int become_run_user(void)
{
	int rc = step(setgroups(0, NULL), "setgroups");
	if (rc == 0)
		rc = step(setresgid(RUN_ID, RUN_ID, RUN_ID), "setresgid");
	if (rc == 0)
		rc = step(setresuid(RUN_ID, RUN_ID, RUN_ID), "setresuid");
	if (rc == 0)
		rc = step(prctl(PR_SET_DUMPABLE, 1), "dumpable");
	if (rc == 0)
		rc = step(unshare(CLONE_NEWUSER), "unshare user");
	if (rc == 0)
		rc = write_file("/proc/self/setgroups", "deny");
	char map[32];
	snprintf(map, sizeof(map), "0 %d 1\n", RUN_ID);
	if (rc == 0)
		rc = write_file("/proc/self/uid_map", map);
	if (rc == 0)
		rc = write_file("/proc/self/gid_map", map);
	/* a change of ids cleared the parent-death signal */
	if (rc == 0)
		rc = step(prctl(PR_SET_PDEATHSIG, SIGKILL), "pdeathsig");
	if (rc == 0)
		rc = step(prctl(PR_SET_DUMPABLE, 0), "undumpable");
	return rc;
}

/* Every capability gone: bounding set, ambient set, then the process's
 * own sets (in that order: dropping the bounding set needs CAP_SETPCAP). */
static int drop_caps(void)
{
	for (int c = 0; c <= cap_last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			return step(-1, "capbset drop");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return step(-1, "ambient clear");
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	return step(syscall(SYS_capset, &h, d), "capset");
}

/* In the program: no privilege by exec, root of the namespace means
 * nothing (locked), then no capabilities. */
static int drop_program_privs(void)
{
	int rc = step(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
	if (rc == 0)
		rc = step(prctl(PR_SET_SECUREBITS,
				SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
					SECBIT_NO_SETUID_FIXUP |
					SECBIT_NO_SETUID_FIXUP_LOCKED |
					SECBIT_KEEP_CAPS_LOCKED |
					SECBIT_NO_CAP_AMBIENT_RAISE |
					SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
				0, 0, 0),
			  "securebits");
	return rc == 0 ? drop_caps() : rc;
}

/* ---- layer: Landlock and seccomp (program, right before exec) ---------- */

static int ll_allow(int ruleset, const char *path, uint64_t access,
		    uint64_t handled)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : step(-1, path);
	struct landlock_path_beneath_attr pb = {
		.allowed_access = access & handled,
		.parent_fd = fd,
	};
	int rc = step(syscall(SYS_landlock_add_rule, ruleset,
			      LANDLOCK_RULE_PATH_BENEATH, &pb, 0),
		      path);
	close(fd);
	return rc;
}

/* airlock's ruleset: read and execute everywhere, write in /tmp and
 * /dev/shm, the five device nodes read/write; TCP and the scopes handled
 * with no rule (no network). */
static int apply_landlock(void)
{
	if (ll_abi < 1)
		return step(-1, "landlock unavailable");
	uint64_t handled = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
	if (ll_abi >= 2)
		handled |= LANDLOCK_ACCESS_FS_REFER;
	if (ll_abi >= 3)
		handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (ll_abi >= 5)
		handled |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	struct ll_ruleset_attr attr = {.handled_access_fs = handled};
	size_t size = sizeof(uint64_t);
	if (ll_abi >= 4) {
		size = 2 * sizeof(uint64_t);
		attr.handled_access_net = LL_NET_TCP;
	}
	if (ll_abi >= 6) {
		size = sizeof(attr);
		attr.scoped = LL_SCOPED;
	}
	const uint64_t ro = LANDLOCK_ACCESS_FS_EXECUTE |
			    LANDLOCK_ACCESS_FS_READ_FILE |
			    LANDLOCK_ACCESS_FS_READ_DIR;
	const uint64_t rw =
		ro | LANDLOCK_ACCESS_FS_WRITE_FILE |
		LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
		LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
		LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER |
		LANDLOCK_ACCESS_FS_TRUNCATE;
	const uint64_t dev =
		LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
		LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return step(-1, "landlock ruleset");
	int rc = ll_allow(rs, "/", ro, handled);
	if (rc == 0)
		rc = ll_allow(rs, "/tmp", rw, handled);
	if (rc == 0)
		rc = ll_allow(rs, "/dev/shm", rw, handled);
	static const char *const nodes[] = {"/dev/null", "/dev/zero",
					    "/dev/full", "/dev/random",
					    "/dev/urandom"};
	for (size_t i = 0; rc == 0 && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		rc = ll_allow(rs, nodes[i], dev, handled);
	if (rc == 0)
		rc = step(syscall(SYS_landlock_restrict_self, rs, 0),
			  "landlock restrict");
	close(rs);
	return rc;
}

/* Loading the program compiled in fl_prepare: what airlock does per run
 * (it compiles once per process and caches the result). */
static int load_seccomp(void)
{
	struct sock_fprog prog = {.len = bpf_len, .filter = bpf};
	if (bpf == NULL)
		return step(-1, "no seccomp program");
	return step(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog),
		    "seccomp");
}

/* A deny-list of airlock's shape: allow by default, refuse a list of
 * syscalls (mounts, namespaces, keys, other processes' memory, kernel
 * attack surface), namespace flags of clone, and socket families;
 * non-native architectures kill.  Its length is near airlock's (219
 * instructions in the strace of one run); fl_prepare prints it. */
static const char *const denied[] = {
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare",
	"setns", "keyctl", "add_key", "request_key", "ptrace",
	"process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"process_madvise", "bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"fanotify_init", "lookup_dcookie", "syslog", "acct", "quotactl",
	"quotactl_fd", "vhangup", "iopl", "ioperm", "uselib", "ustat", "sysfs",
	"_sysctl", "nfsservctl", "modify_ldt", "set_mempolicy",
	"set_mempolicy_home_node", "get_mempolicy", "mbind", "migrate_pages",
	"move_pages", "kexec_load", "kexec_file_load", "init_module",
	"finit_module", "delete_module", "create_module", "reboot", "swapon",
	"swapoff", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "sethostname", "setdomainname", "open_by_handle_at",
	"name_to_handle_at"};

static int export_bpf(scmp_filter_ctx ctx)
{
	int fd = memfd_create("floor-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = seccomp_export_bpf(ctx, fd);
	off_t size = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
	if (rc == 0 && (size <= 0 || size % (off_t)sizeof(*bpf) != 0))
		rc = -EPROTO;
	if (rc == 0 && (bpf = malloc((size_t)size)) == NULL)
		rc = -ENOMEM;
	if (rc == 0 && pread(fd, bpf, (size_t)size, 0) != (ssize_t)size)
		rc = -EIO;
	if (rc == 0)
		bpf_len = (unsigned short)(size / (off_t)sizeof(*bpf));
	close(fd);
	return rc;
}

static int build_seccomp(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL)
		return -ENOMEM;
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
				  SCMP_ACT_KILL_PROCESS);
	if (rc == 0) /* the program sets no_new_privs itself */
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc == 0) /* laid out as airlock's: a binary tree */
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	for (size_t i = 0; rc == 0 && i < sizeof(denied) / sizeof(denied[0]);
	     i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
				      SCMP_SYS(clone3), 0);
	static const uint64_t ns_flags[] = {
		CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
		CLONE_NEWUSER, CLONE_NEWPID,	CLONE_NEWNET};
	for (size_t i = 0; rc == 0 && i < sizeof(ns_flags) / sizeof(ns_flags[0]);
	     i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				      SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i],
					      ns_flags[i]));
	/* argument rules: the default persona only, no terminal injection,
	 * netlink for routes only */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				      SCMP_SYS(personality), 1,
				      SCMP_A0(SCMP_CMP_NE, 0));
	static const uint64_t tty_ioctls[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; rc == 0 && i < 2; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl),
				      1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu,
					      tty_ioctls[i]));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
				      SCMP_SYS(socket), 2,
				      SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
				      SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
	/* socket families: every family but unix, inet, inet6 and netlink
	 * (socketpair: unix only), one equality rule each */
	for (int fam = 0; rc == 0 && fam < AF_MAX; fam++) {
		bool unix_only = fam == AF_UNIX;
		bool sock_ok = unix_only || fam == AF_INET || fam == AF_INET6 ||
			       fam == AF_NETLINK;
		if (!sock_ok)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
					      SCMP_SYS(socket), 1,
					      SCMP_A0(SCMP_CMP_EQ, (uint64_t)fam));
		if (rc == 0 && !unix_only)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
					      SCMP_SYS(socketpair), 1,
					      SCMP_A0(SCMP_CMP_EQ, (uint64_t)fam));
	}
	if (rc == 0)
		rc = export_bpf(ctx);
	seccomp_release(ctx);
	return rc;
}

/* ---- the run ----------------------------------------------------------- */

static long clone_plain(uint64_t flags, int cgroup_fd)
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = flags;
	ca.exit_signal = SIGCHLD;
	if (cgroup_fd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_fd;
	}
	return syscall(SYS_clone3, &ca, sizeof(ca));
}

static int wait_ok(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

static _Noreturn void program_main(enum fl_level level, char *const argv[])
{
	int rc = 0;
	if (level >= FL_CREDS && (rc = drop_program_privs()) < 0)
		die("+creds (program)", rc);
	if (level >= FL_LSM && (rc = apply_landlock()) < 0)
		die("+lsm", rc);
	if (level >= FL_LSM && (rc = load_seccomp()) < 0)
		die("+lsm", rc);
	execv(argv[0], argv);
	_exit(127);
}

struct program_args {
	enum fl_level level;
	char *const *argv;
};

static int program_entry(void *arg)
{
	const struct program_args *a = arg;
	program_main(a->level, a->argv);
}

/* As airlock's init starts its program: vfork-style, on a stack of its
 * own, in the init's memory until the execve (no copy of the page
 * tables, no teardown of that copy).  -1 with errno on failure. */
static long spawn_program(enum fl_level level, char *const argv[])
{
	enum { STACK_BYTES = 256 * 1024 };
	char *stack = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	struct program_args a = {level, argv};
	long pid = clone(program_entry, stack + STACK_BYTES,
			 CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	int e = errno;
	munmap(stack, STACK_BYTES);
	errno = e;
	return pid;
}

static _Noreturn void init_main(enum fl_level level, const struct run_cg *cg,
				int netns_fd, char *const argv[])
{
	int rc = step(prctl(PR_SET_PDEATHSIG, SIGKILL), "pdeathsig");
	if (rc == 0 && netns_fd >= 0)
		rc = step(setns(netns_fd, CLONE_NEWNET), "setns net");
	if (rc == 0 && level >= FL_CGROUPS && (rc = cg_join(cg)) < 0)
		die("+cgroups", rc);
	if (rc == 0)
		rc = step(unshare(CLONE_NEWCGROUP), "unshare cgroup");
	if (rc < 0)
		die("al-ns", rc);
	if (level >= FL_MOUNTS && (rc = build_root()) < 0)
		die("+mounts", rc);
	if (level >= FL_CREDS && (rc = become_run_user()) < 0)
		die("+creds", rc);
	long pid = spawn_program(level, argv);
	if (pid < 0)
		die("al-ns", step(-1, "fork"));
	if (level >= FL_CREDS && (rc = drop_caps()) < 0)
		die("+creds (init)", rc); /* pid 1 exiting kills the program */
	_exit(wait_ok((pid_t)pid) == 0 ? 0 : 1);
}

static void *netns_thread(void *arg)
{
	(void)arg;
	int fd = unshare(CLONE_NEWNET) < 0
			 ? -errno
			 : open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		fd = -errno;
	return (void *)(intptr_t)fd;
}

int fl_netns_make(void)
{
	pthread_t t;
	void *out = NULL;
	int rc = pthread_create(&t, NULL, netns_thread, NULL);
	if (rc != 0)
		return -rc;
	pthread_join(t, &out);
	return (int)(intptr_t)out;
}

int fl_run(enum fl_level level, char *const argv[], bool verbose)
{
	return fl_run_joining(level, -1, argv, verbose);
}

int fl_run_joining(enum fl_level level, int netns_fd, char *const argv[],
		   bool verbose)
{
	struct run_cg cg;
	memset(&cg, 0, sizeof(cg));
	cg.v2_fd = cg.mem_tasks = cg.pids_tasks = -1;
	int rc = 0;
	if (level >= FL_CGROUPS && (rc = cg_create(&cg)) < 0) {
		fprintf(stderr, "floor: +cgroups: %s: %s\n", failed_at,
			strerror(-rc));
		cg_remove(&cg);
		return rc;
	}
	uint64_t flags = AL_CLONE_FLAGS;
	if (netns_fd >= 0)
		flags &= ~(uint64_t)CLONE_NEWNET;
	long pid = clone_plain(flags, cg.v2_fd);
	if (pid == 0)
		init_main(level, &cg, netns_fd, argv);
	if (pid < 0) {
		rc = -errno;
		fprintf(stderr, "floor: al-ns: clone3: %s\n", strerror(errno));
	} else {
		rc = wait_ok((pid_t)pid);
	}
	if (level >= FL_CGROUPS) {
		cg_close_fds(&cg);
		int r = pid > 0 ? cg_read_stats(&cg, verbose) : 0;
		if (r < 0)
			fprintf(stderr, "floor: +cgroups: %s: %s\n", failed_at,
				strerror(-r));
		int r2 = cg_remove(&cg);
		if (rc == 0)
			rc = r < 0 ? r : r2;
	}
	return rc;
}

/* ---- once per process -------------------------------------------------- */

/* The host's top-level symlinks into /usr, recreated in every root. */
static void find_host_links(void)
{
	static const char *const tops[] = {"/bin",   "/sbin",  "/lib",
					   "/lib32", "/lib64", "/libx32"};
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++) {
		char target[64];
		ssize_t n = readlink(tops[i], target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		snprintf(host_links[n_host_links][0], sizeof(host_links[0][0]),
			 "%s", tops[i]);
		snprintf(host_links[n_host_links][1], sizeof(host_links[0][1]),
			 "%s", target);
		n_host_links++;
	}
}

int fl_prepare(void)
{
	int rc = 0, r;
	find_host_links();
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f == NULL || fscanf(f, "%d", &cap_last) != 1)
		cap_last = CAP_LAST_CAP;
	if (f != NULL)
		fclose(f);
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);
	ll_abi = abi < 0 ? 0 : (int)abi;
	if ((r = build_seccomp()) < 0) {
		fprintf(stderr, "floor: seccomp program: %s\n", strerror(-r));
		rc = r;
	}
	unsigned char rnd[4];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		rc = -errno;
		fprintf(stderr, "floor: getrandom: %s\n", strerror(errno));
	} else if ((r = find_own_cgroups()) < 0) {
		fprintf(stderr, "floor: own cgroups (v2, memory, pids): %s\n",
			strerror(-r));
		rc = r;
	} else {
		snprintf(cg_tag, sizeof(cg_tag), "%d-%02x%02x%02x%02x",
			 (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3]);
		cg_ready = true;
	}
	fprintf(stderr,
		"floor: seccomp program %u instructions, landlock ABI %d, "
		"cgroups beneath %s, %s, %s\n",
		bpf_len, ll_abi, cg_v2_base, cg_mem_base, cg_pids_base);
	return rc;
}

void fl_release(void)
{
	free(bpf);
	bpf = NULL;
	bpf_len = 0;
}
