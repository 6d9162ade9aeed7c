/* The sandbox's filesystem view: plan in the parent, apply in the child.
 * See mounts.h and the mount table in docs/sandbox.md. */
#include "sandbox/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/util.h"
#include "tool/proto.h"

#define OLDROOT "/.oldroot"

/* ---- plan (parent) --------------------------------------------------- */

static int add(al_sb_mount_plan *p, al_sb_mop op, const char *src,
	       const char *dst, bool rw, bool dev, bool optional)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		al_sb_mount_op *ops = realloc(p->ops, cap * sizeof(*ops));
		if (ops == NULL)
			return -ENOMEM;
		p->ops = ops;
		p->cap = cap;
	}
	al_sb_mount_op *o = &p->ops[p->n];
	*o = (al_sb_mount_op){.op = op, .rw = rw, .dev = dev,
			      .optional = optional};
	o->src = src ? strdup(src) : NULL;
	o->dst = strdup(dst);
	if ((src && o->src == NULL) || o->dst == NULL) {
		free(o->src);
		free(o->dst);
		return -ENOMEM;
	}
	p->n++;
	return 0;
}

static const char *const system_dirs[] = {"/usr",  "/bin",   "/sbin",
					  "/lib",  "/lib32", "/lib64",
					  "/libx32"};

const char *const *al_sb_system_dirs(size_t *n)
{
	*n = sizeof(system_dirs) / sizeof(system_dirs[0]);
	return system_dirs;
}

#define N_SYSTEM_DIRS (sizeof(system_dirs) / sizeof(system_dirs[0]))

/* What each system directory is on the host: absent (or neither), a
 * directory, or a symlink (merged /usr) and its target. */
typedef struct system_dir_kind {
	enum { SYS_ABSENT, SYS_DIR, SYS_LINK } kind;
	char target[PATH_MAX];
} system_dir_kind;

/* The last layout read, and the identity of / it was read under: the
 * entries of / change only with its mtime and ctime, so a run re-reads
 * the seven entries (seven lstat and up to five readlink calls) only
 * when / says it changed. */
static pthread_mutex_t layout_mu = PTHREAD_MUTEX_INITIALIZER;
static bool layout_valid;
static struct stat layout_root;
static system_dir_kind layout[N_SYSTEM_DIRS];

static bool same_root(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void read_system_dir(const char *dir, system_dir_kind *k)
{
	struct stat st;
	k->kind = SYS_ABSENT;
	if (lstat(dir, &st) < 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(dir, k->target, sizeof(k->target) - 1);
		if (n <= 0)
			return;
		k->target[n] = '\0';
		k->kind = SYS_LINK;
	} else if (S_ISDIR(st.st_mode)) {
		k->kind = SYS_DIR;
	}
}

/* A directory is bound as is; a symlink (merged /usr) is recreated. */
static int add_system_dirs(al_sb_mount_plan *p)
{
	struct stat root;
	bool known = stat("/", &root) == 0;
	pthread_mutex_lock(&layout_mu);
	if (!known || !layout_valid || !same_root(&root, &layout_root)) {
		for (size_t i = 0; i < N_SYSTEM_DIRS; i++)
			read_system_dir(system_dirs[i], &layout[i]);
		layout_valid = known;
		layout_root = root;
	}
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < N_SYSTEM_DIRS; i++) {
		const char *dir = system_dirs[i];
		if (layout[i].kind == SYS_LINK)
			rc = add(p, AL_MOP_SYMLINK, layout[i].target, dir, false,
				 false, false);
		else if (layout[i].kind == SYS_DIR)
			rc = add(p, AL_MOP_BIND, dir, dir, false, false, false);
	}
	pthread_mutex_unlock(&layout_mu);
	return rc;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Where the sandbox mounts its own things after the toolchain's roots: a
 * root beneath one of these would be hidden inside. */
static const char *const replaced_dirs[] = {
	"/tmp", "/code", "/build", "/inbox", "/inbox-acks", "/workspace",
	"/dev", "/proc", "/toolbelt", "/toolbelt-bin"};

const char *al_sb_path_hidden(const char *path)
{
	for (size_t i = 0; i < sizeof(replaced_dirs) / sizeof(replaced_dirs[0]);
	     i++)
		if (under(path, replaced_dirs[i]))
			return replaced_dirs[i];
	return NULL;
}

/* The toolchain's own roots, unless a system dir already covers them. */
static int add_extra_root(al_sb_mount_plan *p, const char *root)
{
	if (root[0] != '/' || strstr(root, "/../") || strcmp(root, "/") == 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]);
	     i++) {
		struct stat st;
		if (under(root, system_dirs[i]) &&
		    lstat(system_dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
			return 0;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->ops[i].op == AL_MOP_BIND && under(root, p->ops[i].dst))
			return 0;
	return add(p, AL_MOP_BIND, root, root, false, false, true);
}

static const char passwd[] =
	"root:x:0:0:airlock sandbox:/workspace:/bin/sh\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group[] = "root:x:0:\nnogroup:x:65534:\n";
static const char hosts[] = "127.0.0.1\tlocalhost airlock\n"
			    "::1\tlocalhost ip6-localhost ip6-loopback\n";
static const char nsswitch[] = "passwd: files\ngroup: files\n"
			       "hosts: files dns\nservices: files\n"
			       "protocols: files\n";

static int add_etc(al_sb_mount_plan *p, al_network net)
{
	int rc = add(p, AL_MOP_MKDIR, NULL, "/etc", false, false, false);
	if (rc == 0)
		rc = add(p, AL_MOP_FILE, passwd, "/etc/passwd", false, false,
			 false);
	if (rc == 0)
		rc = add(p, AL_MOP_FILE, group, "/etc/group", false, false,
			 false);
	if (rc == 0)
		rc = add(p, AL_MOP_FILE, hosts, "/etc/hosts", false, false,
			 false);
	if (rc == 0)
		rc = add(p, AL_MOP_FILE, nsswitch, "/etc/nsswitch.conf", false,
			 false, false);
	/* Only non-secret system data: the loader cache and the
	 * alternatives symlinks (Debian's /usr/bin/awk etc. go through it). */
	if (rc == 0)
		rc = add(p, AL_MOP_BIND, "/etc/ld.so.cache", "/etc/ld.so.cache",
			 false, false, true);
	if (rc == 0)
		rc = add(p, AL_MOP_BIND, "/etc/alternatives",
			 "/etc/alternatives", false, false, true);
	if (rc == 0 && net == AL_NETWORK_HOST) {
		static const char *const netfiles[] = {
			"/etc/resolv.conf", "/etc/ssl", "/etc/ca-certificates",
			"/etc/pki", "/etc/services", "/etc/protocols",
			"/etc/gai.conf"};
		for (size_t i = 0;
		     rc == 0 && i < sizeof(netfiles) / sizeof(netfiles[0]); i++)
			rc = add(p, AL_MOP_BIND, netfiles[i], netfiles[i], false,
				 false, true);
	}
	return rc;
}

void al_sb_tmpfs_opts(char *buf, size_t len, const char *mode, uint64_t bytes)
{
	uint64_t inodes = bytes / 4096;
	if (inodes < 1024)
		inodes = 1024;
	snprintf(buf, len, "mode=%s,size=%" PRIu64 ",nr_inodes=%" PRIu64, mode,
		 bytes, inodes);
}

void al_sb_acks_tmpfs_opts(char *buf, size_t len, uint64_t bytes, uid_t uid,
			   gid_t gid)
{
	snprintf(buf, len,
		 "mode=0700,size=%" PRIu64 ",nr_inodes=%u,uid=%u,gid=%u",
		 bytes > 0 ? bytes : 65536, AL_MAX_INBOX_EVENTS + 1u,
		 (unsigned)uid, (unsigned)gid);
}

static int add_dev(al_sb_mount_plan *p, uint64_t shm_bytes)
{
	int rc = add(p, AL_MOP_TMPFS, "mode=0755,size=64k", "/dev", false,
		     false, false);
	static const char *const nodes[] = {"/dev/null", "/dev/zero",
					    "/dev/full", "/dev/random",
					    "/dev/urandom"};
	for (size_t i = 0; rc == 0 && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		rc = add(p, AL_MOP_BIND, nodes[i], nodes[i], true, true, false);
	static const char *const links[][2] = {
		{"/proc/self/fd", "/dev/fd"},
		{"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"},
		{"/proc/self/fd/2", "/dev/stderr"},
	};
	for (size_t i = 0; rc == 0 && i < sizeof(links) / sizeof(links[0]); i++)
		rc = add(p, AL_MOP_SYMLINK, links[i][0], links[i][1], false,
			 false, false);
	char opts[96];
	al_sb_tmpfs_opts(opts, sizeof(opts), "1777", shm_bytes);
	if (rc == 0)
		rc = add(p, AL_MOP_TMPFS, opts, "/dev/shm", true, false, false);
	return rc;
}

static int add_proc(al_sb_mount_plan *p)
{
	int rc = add(p, AL_MOP_PROC, NULL, "/proc", false, false, false);
	static const char *const masked[] = {
		"/proc/kcore",	     "/proc/sysrq-trigger", "/proc/kmsg",
		"/proc/timer_list",  "/proc/sched_debug",   "/proc/keys",
		"/proc/key-users",   "/proc/latency_stats", "/proc/timer_stats",
		"/proc/kallsyms",    "/proc/modules",	    "/proc/vmallocinfo",
		"/proc/slabinfo",    "/proc/pagetypeinfo",  "/proc/config.gz",
		"/proc/acpi",	     "/proc/scsi",
		/* host-wide: every process's file locks, other runs' uid
		 * pool locks among them */
		"/proc/locks"};
	for (size_t i = 0; rc == 0 && i < sizeof(masked) / sizeof(masked[0]);
	     i++)
		rc = add(p, AL_MOP_MASK, NULL, masked[i], false, false, true);
	static const char *const ro[] = {"/proc/sys", "/proc/irq", "/proc/bus",
					 "/proc/fs", "/proc/sysvipc",
					 "/proc/driver"};
	for (size_t i = 0; rc == 0 && i < sizeof(ro) / sizeof(ro[0]); i++)
		rc = add(p, AL_MOP_RDONLY, NULL, ro[i], false, false, true);
	return rc;
}

int al_sb_mount_plan_build(const al_sb_mount_params *prm,
			   al_sb_mount_plan *p, al_error **err)
{
	memset(p, 0, sizeof(*p));
	int rc = 0;
	rc = add_system_dirs(p);
	for (size_t i = 0; rc == 0 && prm->extra_roots && prm->extra_roots[i];
	     i++)
		rc = add_extra_root(p, prm->extra_roots[i]);
	if (rc == 0)
		rc = add_etc(p, prm->network);
	char opts[128];
	al_sb_tmpfs_opts(opts, sizeof(opts), "1777", prm->tmp_bytes);
	if (rc == 0)
		rc = add(p, AL_MOP_TMPFS, opts, "/tmp", true, false, false);
	/* what the host wrote before the start: views (no host path in
	 * the run's mount table) */
	al_sb_mop ro_src = prm->live ? AL_MOP_BIND : AL_MOP_VIEW;
	if (rc == 0)
		rc = add(p, ro_src, prm->code_dir, "/code", false, false,
			 false);
	if (rc == 0 && prm->build_dir)
		rc = add(p, prm->build_rw ? AL_MOP_BIND : AL_MOP_VIEW,
			 prm->build_dir, "/build", prm->build_rw, false,
			 false);
	/* the socket and token live (a new token replaces the file on
	 * adoption): a bind of the directory, which shows the rename */
	if (rc == 0 && prm->tool_dir && prm->tool_bin_dir) {
		rc = add(p, AL_MOP_BIND, prm->tool_dir, AL_TOOL_SANDBOX_DIR,
			 false, false, false);
		if (rc == 0)
			rc = add(p, AL_MOP_BIND, prm->tool_bin_dir,
				 AL_TOOL_SANDBOX_BIN, false, false, false);
	}
	if (rc == 0 && prm->inbox_dir) {
		rc = add(p, AL_MOP_BIND, prm->inbox_dir, "/inbox", false, false,
			 false);
		/* the program's markers: never on the host, so a run cannot
		 * fill the host's disk or inodes through them */
		al_sb_acks_tmpfs_opts(opts, sizeof(opts), prm->inbox_acks_bytes,
				      prm->ws_uid, prm->ws_gid);
		if (rc == 0)
			rc = add(p, AL_MOP_TMPFS, opts, "/inbox-acks", true,
				 false, false);
	}
	if (rc == 0) {
		if (prm->workspace == AL_WORKSPACE_NONE ||
		    prm->workspace_dir == NULL)
			rc = add(p, AL_MOP_MKDIR, NULL, "/workspace", false,
				 false, false);
		else if (prm->workspace_bytes > 0) {
			/* bounded: a fresh tmpfs, nothing of the host's */
			al_sb_tmpfs_opts(opts, sizeof(opts), "0755",
					 prm->workspace_bytes);
			size_t n = strlen(opts);
			snprintf(opts + n, sizeof(opts) - n, ",uid=%u,gid=%u",
				 (unsigned)prm->ws_uid, (unsigned)prm->ws_gid);
			rc = add(p, AL_MOP_TMPFS, opts, "/workspace", true,
				 false, false);
		} else
			rc = add(p,
				 prm->workspace == AL_WORKSPACE_RW
					 ? AL_MOP_BIND
					 : ro_src,
				 prm->workspace_dir, "/workspace",
				 prm->workspace == AL_WORKSPACE_RW, false,
				 false);
	}
	if (rc == 0)
		rc = add_dev(p, prm->tmp_bytes);
	if (rc == 0)
		rc = add_proc(p);
	if (rc < 0) {
		al_sb_mount_plan_clear(p);
		return al_error_set(err, AL_ERR_INTERNAL, -rc, "mount_plan",
				    "building the sandbox mount plan failed");
	}
	return 0;
}

void al_sb_mount_plan_clear(al_sb_mount_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->ops[i].src);
		free(p->ops[i].dst);
	}
	free(p->ops);
	memset(p, 0, sizeof(*p));
}

/* ---- apply (child; no allocation) ------------------------------------ */

/* The last directory the plan's steps made or found (a step's parent is
 * mostly the one before's: /dev, /etc), so its components are not made
 * again, each an EEXIST.  A mount on one of its ancestors hides it:
 * dir_memo_mounted forgets it then. */
struct dir_memo {
	char path[PATH_MAX];
	size_t len; /* 0: nothing known */
};

/* Whether dir is the known directory or one of its ancestors. */
static bool dir_memo_has(const struct dir_memo *m, const char *dir, size_t n)
{
	return m->len > 0 && n <= m->len && memcmp(m->path, dir, n) == 0 &&
	       (m->path[n] == '\0' || m->path[n] == '/');
}

static void dir_memo_mounted(struct dir_memo *m, const char *dst)
{
	size_t n = strlen(dst);
	if (m->len > n && memcmp(m->path, dst, n) == 0 &&
	    (m->path[n] == '/' || n == 1))
		m->len = 0;
}

static int mkdir_p(struct dir_memo *m, const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	if (dir_memo_has(m, path, n))
		return 0;
	memcpy(buf, path, n + 1);
	/* the known ancestor's components exist: start below it */
	size_t i = m->len > 0 && m->len < n && buf[m->len] == '/' &&
			   memcmp(buf, m->path, m->len) == 0
		   ? m->len + 1
		   : 1;
	for (; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		buf[i] = c;
	}
	memcpy(m->path, buf, n + 1);
	m->len = n;
	return 0;
}

static int parent_dir(struct dir_memo *m, const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	char *slash = strrchr(buf, '/');
	if (slash == NULL || slash == buf)
		return 0;
	*slash = '\0';
	return mkdir_p(m, buf, 0755);
}

static int make_mountpoint(struct dir_memo *m, const char *dst, bool dir)
{
	if (dir)
		return mkdir_p(m, dst, 0755);
	int rc = parent_dir(m, dst);
	if (rc < 0)
		return rc;
	/* an empty regular file in one call (no open and close) */
	if (mknod(dst, S_IFREG | 0444, 0) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Remounts a bind with our flags; inside a user namespace the flags the
 * source mount already has (noexec, ...) are locked and must be kept. */
static int restrict_bind(const char *dst, bool rw, bool dev, bool noexec)
{
	unsigned long fl = MS_REMOUNT | MS_BIND | MS_NOSUID;
	if (!rw)
		fl |= MS_RDONLY;
	if (!dev)
		fl |= MS_NODEV;
	if (noexec)
		fl |= MS_NOEXEC;
	if (mount(NULL, dst, NULL, fl, NULL) == 0)
		return 0;
	if (errno != EPERM)
		return -errno;
	struct statvfs sv;
	if (statvfs(dst, &sv) < 0)
		return -errno;
	if (sv.f_flag & ST_NOEXEC)
		fl |= MS_NOEXEC;
	if (sv.f_flag & ST_NODEV)
		fl |= MS_NODEV;
	if (sv.f_flag & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		fl |= MS_RELATIME;
	if (sv.f_flag & ST_RDONLY)
		fl |= MS_RDONLY;
	return mount(NULL, dst, NULL, fl, NULL) == 0 ? 0 : -errno;
}

/* o->src as the new root sees it, and its stat: 0, 1 when it is missing
 * and optional (nothing to mount), or -errno. */
static int old_src(const al_sb_mount_op *o, char src[PATH_MAX],
		   struct stat *st)
{
	if (snprintf(src, PATH_MAX, OLDROOT "%s", o->src) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (stat(src, st) < 0)
		return o->optional ? 1 : -errno;
	return 0;
}

static int do_bind(struct dir_memo *m, const al_sb_mount_op *o)
{
	char src[PATH_MAX];
	struct stat st;
	int rc = old_src(o, src, &st);
	if (rc != 0)
		return rc > 0 ? 0 : rc;
	rc = make_mountpoint(m, o->dst, S_ISDIR(st.st_mode));
	if (rc < 0)
		return rc;
	if (mount(src, o->dst, NULL, MS_BIND, NULL) < 0) {
		/* a user namespace refuses to split off locked submounts */
		if (errno != EINVAL ||
		    mount(src, o->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
	}
	return restrict_bind(o->dst, o->rw, o->dev, o->dev);
}

/* Overlay needs a second lower layer without an upper one: an empty dir
 * of the new root beneath where /dev is mounted later, which hides it (a
 * removed dir would end the views' listings; a mount of its own would
 * cost an RCU grace period to detach).  The host dir is the first layer,
 * named "." from inside it, so the options name no host path. */
#define VIEW_EMPTY "/dev/.view-empty"
static int do_view(struct dir_memo *m, const al_sb_mount_op *o)
{
	char src[PATH_MAX];
	struct stat st;
	int rc = old_src(o, src, &st);
	if (rc != 0)
		return rc > 0 ? 0 : rc;
	if (!S_ISDIR(st.st_mode))
		return do_bind(m, o);
	rc = mkdir_p(m, o->dst, 0755);
	if (rc < 0)
		return rc;
	rc = mkdir_p(m, VIEW_EMPTY, 0555);
	if (rc < 0)
		return rc;
	if (chdir(src) < 0)
		return -errno;
	int r = mount("overlay", o->dst, "overlay",
		      MS_RDONLY | MS_NOSUID | MS_NODEV, "lowerdir=.:" VIEW_EMPTY);
	if (chdir("/") < 0)
		return -errno;
	/* no overlay here (kernel, policy): the bind still isolates */
	return r == 0 ? 0 : do_bind(m, o);
}

static int write_file(struct dir_memo *m, const char *dst,
		      const char *content)
{
	int rc = parent_dir(m, dst);
	if (rc < 0)
		return rc;
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	size_t len = strlen(content);
	ssize_t w = write(fd, content, len);
	rc = w == (ssize_t)len ? 0 : -EIO;
	close(fd);
	return rc;
}

static int do_mask(const al_sb_mount_op *o)
{
	struct stat st;
	if (lstat(o->dst, &st) < 0)
		return 0;
	if (S_ISDIR(st.st_mode))
		return mount("tmpfs", o->dst, "tmpfs",
			     MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     "size=0,mode=0555") == 0
			       ? 0
			       : -errno;
	if (mount("/dev/null", o->dst, NULL, MS_BIND, NULL) < 0)
		return -errno;
	return 0;
}

static int do_rdonly(const al_sb_mount_op *o)
{
	struct stat st;
	if (lstat(o->dst, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if (mount(o->dst, o->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	return restrict_bind(o->dst, false, false, true);
}

static int apply_op(struct dir_memo *m, const al_sb_mount_op *o)
{
	switch (o->op) {
	case AL_MOP_MKDIR:
		return mkdir_p(m, o->dst, 0755);
	case AL_MOP_SYMLINK: {
		int rc = parent_dir(m, o->dst);
		if (rc == 0 && symlink(o->src, o->dst) < 0)
			rc = -errno;
		return rc;
	}
	case AL_MOP_BIND:
		return do_bind(m, o);
	case AL_MOP_TMPFS: {
		int rc = mkdir_p(m, o->dst, 0755);
		if (rc == 0 && mount("tmpfs", o->dst, "tmpfs",
				     MS_NOSUID | MS_NODEV, o->src) < 0)
			rc = -errno;
		return rc;
	}
	case AL_MOP_FILE:
		return write_file(m, o->dst, o->src);
	case AL_MOP_PROC: {
		int rc = mkdir_p(m, o->dst, 0555);
		if (rc == 0 && mount("proc", o->dst, "proc",
				     MS_NOSUID | MS_NODEV | MS_NOEXEC,
				     NULL) < 0)
			rc = -errno;
		return rc;
	}
	case AL_MOP_MASK:
		return do_mask(o);
	case AL_MOP_RDONLY:
		return do_rdonly(o);
	case AL_MOP_VIEW:
		return do_view(m, o);
	}
	return -EINVAL;
}

int al_sb_mounts_apply(const al_sb_mount_plan *plan, const char *staging,
		       int *failed_op)
{
	*failed_op = -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	if (mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=0755,size=1m") < 0)
		return -errno;
	if (chdir(staging) < 0 || mkdir(OLDROOT + 1, 0700) < 0)
		return -errno;
	if (syscall(SYS_pivot_root, ".", OLDROOT + 1) < 0 || chdir("/") < 0)
		return -errno;
	struct dir_memo made = {.len = 0};
	for (size_t i = 0; i < plan->n; i++) {
		const al_sb_mount_op *o = &plan->ops[i];
		int rc = apply_op(&made, o);
		if (rc < 0) {
			*failed_op = (int)i;
			return rc;
		}
		if (o->op != AL_MOP_MKDIR && o->op != AL_MOP_SYMLINK &&
		    o->op != AL_MOP_FILE)
			dir_memo_mounted(&made, o->dst);
	}
	*failed_op = -2;
	if (umount2(OLDROOT, MNT_DETACH) < 0 || rmdir(OLDROOT) < 0)
		return -errno;
	/* The root itself: read-only from here on. */
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY |
				       MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		return -errno;
	*failed_op = -1;
	return 0;
}

/* ---- the bounded workspace (child; no allocation) --------------------- */

/* Creates the parents of path (below /workspace) owned by uid/gid. */
static int ws_parents(char *path, uid_t uid, gid_t gid)
{
	for (char *p = path + strlen("/workspace/"); *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = 0;
		if (mkdir(path, 0755) == 0) {
			if (chown(path, uid, gid) < 0)
				rc = -errno;
		} else if (errno != EEXIST) {
			rc = -errno;
		}
		*p = '/';
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int ws_write(const al_bundle_item *f, uid_t uid, gid_t gid)
{
	char path[PATH_MAX];
	size_t n = strlen(f->path);
	if (n + sizeof("/workspace/") > sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, "/workspace/", sizeof("/workspace/") - 1);
	memcpy(path + sizeof("/workspace/") - 1, f->path, n + 1);
	int rc = ws_parents(path, uid, gid);
	if (rc < 0)
		return rc;
	/* Nothing but this init has touched the fresh tmpfs yet; O_EXCL and
	 * O_NOFOLLOW all the same. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      (mode_t)(f->mode & 0777));
	if (fd < 0)
		return -errno;
	rc = al_write_all(fd, f->data, f->len);
	/* the exact mode asked for, whatever the umask */
	if (rc == 0 && (fchown(fd, uid, gid) < 0 ||
			fchmod(fd, (mode_t)(f->mode & 0777)) < 0))
		rc = -errno;
	close(fd);
	return rc;
}

int al_sb_workspace_fill(const al_bundle_item *items, size_t n, uid_t uid,
			 gid_t gid, bool ro)
{
	for (size_t i = 0; i < n; i++) {
		if (items[i].kind != AL_BUNDLE_INPUT)
			continue;
		int rc = ws_write(&items[i], uid, gid);
		if (rc < 0)
			return rc;
	}
	if (ro && mount(NULL, "/workspace", NULL,
			MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
			NULL) < 0)
		return -errno;
	return 0;
}
