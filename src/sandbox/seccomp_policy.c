/* The sandbox's syscall policy as data, compiled once with libseccomp.
 *
 * Default action: allow (interpreters use hundreds of syscalls); the table
 * lists what is refused.  Namespaces, capabilities and Landlock already stop
 * most of these; the filter removes the kernel attack surface and makes the
 * refusal explicit.  Non-native architectures (i386, x32 entry points) kill
 * the process.  docs/sandbox.md mirrors this table. */
#include "sandbox/seccomp_policy.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "providers/cache_dir.h"
#include "sandbox/filter_cache.h"

enum cond {
	ALWAYS,	  /* every call */
	MASK_SET, /* (arg & val) != 0, one bit */
	EQ32,	  /* (arg & 0xffffffff) == val */
	NE,	  /* arg != val */
};

struct row {
	const char *sys;
	int err;
	enum cond cond;
	unsigned arg;
	uint64_t val;
	const char *when;
};

#define R(name, e) {name, e, ALWAYS, 0, 0, "always"}

static const struct row policy[] = {
	/* mounts and filesystem views */
	R("mount", EPERM), R("umount2", EPERM), R("umount", EPERM),
	R("pivot_root", EPERM), R("chroot", EPERM), R("move_mount", EPERM),
	R("open_tree", EPERM), R("fsopen", EPERM), R("fsconfig", EPERM),
	R("fsmount", EPERM), R("fspick", EPERM), R("mount_setattr", EPERM),
	/* namespaces: clone3's flags live in memory the filter cannot read,
	 * so clone3 says ENOSYS and glibc falls back to clone, whose flags
	 * are checked below */
	R("unshare", EPERM), R("setns", EPERM), R("clone3", ENOSYS),
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWNS, "flags & CLONE_NEWNS"},
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWCGROUP, "flags & CLONE_NEWCGROUP"},
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWUTS, "flags & CLONE_NEWUTS"},
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWIPC, "flags & CLONE_NEWIPC"},
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWUSER, "flags & CLONE_NEWUSER"},
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWPID, "flags & CLONE_NEWPID"},
	{"clone", EPERM, MASK_SET, 0, CLONE_NEWNET, "flags & CLONE_NEWNET"},
	/* keys */
	R("keyctl", EPERM), R("add_key", EPERM), R("request_key", EPERM),
	/* other processes' memory */
	R("ptrace", EPERM), R("process_vm_readv", EPERM),
	R("process_vm_writev", EPERM), R("pidfd_getfd", EPERM),
	R("kcmp", EPERM), R("process_madvise", EPERM),
	/* kernel attack surface */
	R("bpf", EPERM), R("perf_event_open", EPERM), R("userfaultfd", EPERM),
	R("io_uring_setup", EPERM), R("io_uring_enter", EPERM),
	R("io_uring_register", EPERM), R("fanotify_init", EPERM),
	R("lookup_dcookie", EPERM), R("syslog", EPERM), R("acct", EPERM),
	R("quotactl", EPERM), R("quotactl_fd", EPERM), R("vhangup", EPERM),
	R("iopl", EPERM),
	R("ioperm", EPERM), R("uselib", EPERM), R("ustat", EPERM),
	R("sysfs", EPERM), R("_sysctl", EPERM), R("nfsservctl", EPERM),
	/* x86 segment descriptors (old 16-bit code, a history of kernel
	 * bugs) and NUMA placement (a run's memory on the node it chooses,
	 * pages of its processes moved): ENOSYS, as on a kernel built
	 * without them, which is what their callers handle */
	R("modify_ldt", ENOSYS), R("set_mempolicy", ENOSYS),
	R("set_mempolicy_home_node", ENOSYS), R("get_mempolicy", ENOSYS),
	R("mbind", ENOSYS), R("migrate_pages", ENOSYS),
	R("move_pages", ENOSYS),
	/* kernel code and machine state */
	R("kexec_load", EPERM), R("kexec_file_load", EPERM),
	R("init_module", EPERM), R("finit_module", EPERM),
	R("delete_module", EPERM), R("create_module", EPERM),
	R("reboot", EPERM), R("swapon", EPERM), R("swapoff", EPERM),
	/* clocks */
	R("settimeofday", EPERM), R("clock_settime", EPERM),
	R("clock_adjtime", EPERM), R("adjtimex", EPERM), R("stime", EPERM),
	/* host names (the UTS namespace is private anyway) */
	R("sethostname", EPERM), R("setdomainname", EPERM),
	/* file handles bypass path checks */
	R("open_by_handle_at", EPERM), R("name_to_handle_at", EPERM),
	/* execution domain: only the default persona */
	{"personality", EPERM, NE, 0, 0, "persona != PER_LINUX"},
	/* terminal injection */
	{"ioctl", EPERM, EQ32, 1, TIOCSTI, "request == TIOCSTI"},
	{"ioctl", EPERM, EQ32, 1, TIOCLINUX, "request == TIOCLINUX"},
	/* netlink: only NETLINK_ROUTE (read own interfaces) */
	{"socket", EAFNOSUPPORT, NE, 2, NETLINK_ROUTE,
	 "family == AF_NETLINK && protocol != NETLINK_ROUTE"},
};

/* Socket families a program may create.  Everything else (AF_PACKET,
 * AF_VSOCK, AF_KEY, AF_ALG, AF_BLUETOOTH, ...) is EAFNOSUPPORT.  Inet
 * sockets are allowed in every network mode: the network namespace
 * decides what they can reach. */
static bool family_allowed(int fam)
{
	return fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 ||
	       fam == AF_NETLINK;
}

static const al_sb_rule_info family_rows[] = {
	{"socket", "EAFNOSUPPORT",
	 "family not AF_UNIX, AF_INET, AF_INET6, AF_NETLINK"},
	{"socketpair", "EAFNOSUPPORT", "family != AF_UNIX"},
};

static al_sb_rule_info info[sizeof(policy) / sizeof(policy[0]) + 2];

const al_sb_rule_info *al_sb_policy_rules(size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++) {
		info[k].syscall = policy[i].sys;
		info[k].action = policy[i].err == ENOSYS ? "ENOSYS"
				 : policy[i].err == EAFNOSUPPORT
					 ? "EAFNOSUPPORT"
					 : "EPERM";
		info[k].when = policy[i].when;
		k++;
	}
	info[k++] = family_rows[0];
	info[k++] = family_rows[1];
	*n = k;
	return info;
}

/* SCMP_FLTATR_CTL_OPTIMIZE's binary tree (libseccomp >= 2.5). */
#define FILTER_LAYOUT_TREE 2

void al_sb_policy_describe(FILE *m)
{
	/* the filter's layout is part of what it was compiled from */
	fprintf(m, "layout=%d\n", FILTER_LAYOUT_TREE);
	for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++)
		fprintf(m, "rule=%s %d %d %u %llu\n", policy[i].sys,
			policy[i].err, (int)policy[i].cond, policy[i].arg,
			(unsigned long long)policy[i].val);
	for (int fam = 0; fam < AF_MAX; fam++)
		fprintf(m, "family=%d %d\n", fam, (int)family_allowed(fam));
}

static int add_row(scmp_filter_ctx ctx, const struct row *r)
{
	int nr = seccomp_syscall_resolve_name(r->sys);
	if (nr == __NR_SCMP_ERROR)
		return -ENOENT;
	uint32_t act = SCMP_ACT_ERRNO((uint32_t)r->err);
	switch (r->cond) {
	case ALWAYS:
		return seccomp_rule_add(ctx, act, nr, 0);
	case MASK_SET:
		return seccomp_rule_add(
			ctx, act, nr, 1,
			SCMP_CMP(r->arg, SCMP_CMP_MASKED_EQ, r->val, r->val));
	case EQ32:
		return seccomp_rule_add(ctx, act, nr, 1,
					SCMP_CMP(r->arg, SCMP_CMP_MASKED_EQ,
						 0xffffffffu, r->val));
	case NE:
		if (strcmp(r->sys, "socket") == 0)
			return seccomp_rule_add(
				ctx, act, nr, 2,
				SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
				SCMP_CMP(r->arg, SCMP_CMP_NE, r->val));
		return seccomp_rule_add(ctx, act, nr, 1,
					SCMP_CMP(r->arg, SCMP_CMP_NE, r->val));
	}
	return -EINVAL;
}

/* libseccomp cannot test one argument twice in a rule, so "family not in
 * the allow-list" becomes one equality rule per refused family plus a
 * range rule for everything at or above AF_MAX. */
static int add_family_rules(scmp_filter_ctx ctx, int nr, bool pair)
{
	uint32_t act = SCMP_ACT_ERRNO(EAFNOSUPPORT);
	for (int fam = 0; fam < AF_MAX; fam++) {
		bool ok = pair ? fam == AF_UNIX : family_allowed(fam);
		if (ok)
			continue;
		int rc = seccomp_rule_add(ctx, act, nr, 1,
					  SCMP_A0(SCMP_CMP_EQ, (uint64_t)fam));
		if (rc < 0)
			return rc;
	}
	return seccomp_rule_add(ctx, act, nr, 1,
				SCMP_A0(SCMP_CMP_GE, (uint64_t)AF_MAX));
}

static int export_bpf(scmp_filter_ctx ctx, al_sb_filter *out)
{
	int fd = memfd_create("airlock-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		goto out;
	off_t size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS) {
		rc = -EPROTO;
		goto out;
	}
	out->insns = malloc((size_t)size);
	if (out->insns == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (pread(fd, out->insns, (size_t)size, 0) != (ssize_t)size) {
		free(out->insns);
		out->insns = NULL;
		rc = -EIO;
		goto out;
	}
	out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	rc = 0;
out:
	close(fd);
	return rc;
}

int al_sb_filter_compile_now(al_sb_filter *out, al_error **err)
{
	memset(out, 0, sizeof(*out));
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOMEM, "seccomp",
				    "seccomp_init failed");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
				  SCMP_ACT_KILL_PROCESS);
	/* no_new_privs is set by the child itself, right before loading */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	/* Rules in a binary tree of syscall numbers, not one list: the
	 * kernel walks the filter for every syscall number when it is
	 * loaded (its per-syscall cache of constant verdicts), and the
	 * program for every syscall not in that cache
	 * (docs/performance.md, "The filter as a tree"). */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE,
				      FILTER_LAYOUT_TREE);
	for (size_t i = 0; rc == 0 && i < sizeof(policy) / sizeof(policy[0]);
	     i++) {
		rc = add_row(ctx, &policy[i]);
		if (rc == -ENOENT)
			rc = 0; /* not a syscall on this architecture */
	}
	if (rc == 0)
		rc = add_family_rules(ctx, SCMP_SYS(socket), false);
	if (rc == 0)
		rc = add_family_rules(ctx, SCMP_SYS(socketpair), true);
	if (rc == 0)
		rc = export_bpf(ctx, out);
	seccomp_release(ctx);
	if (rc < 0)
		return al_error_set(err, AL_ERR_UNAVAILABLE, -rc, "seccomp",
				    "compiling the seccomp policy failed");
	return 0;
}

static int filter_copy(const al_sb_filter *src, al_sb_filter *out)
{
	size_t bytes = (size_t)src->len * sizeof(*src->insns);
	if (src->insns == NULL || bytes == 0)
		return -EINVAL;
	out->insns = malloc(bytes);
	if (out->insns == NULL)
		return -ENOMEM;
	memcpy(out->insns, src->insns, bytes);
	out->len = src->len;
	return 0;
}

/* The process's compiled filter: it cannot change while the process (its
 * code, libseccomp, the kernel) lives. */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static al_sb_filter memo;

int al_sb_filter_compile(al_sb_filter *out, al_error **err)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&memo_lock);
	int rc = 0;
	if (memo.insns == NULL) {
		char key[AL_SB_FILTER_KEY_LEN];
		char *dir = al_provider_cache_dir();
		bool keyed = dir != NULL && al_sb_filter_key(key) == 0;
		if (!keyed || al_sb_filter_cache_load(dir, key, &memo) < 0) {
			rc = al_sb_filter_compile_now(&memo, err);
			if (rc == 0 && keyed)
				al_sb_filter_cache_store(dir, key, &memo);
		}
		free(dir);
	}
	if (rc == 0 && (rc = filter_copy(&memo, out)) < 0)
		rc = al_error_set(err, AL_ERR_INTERNAL, -rc, NULL,
				  "copying the compiled filter failed");
	pthread_mutex_unlock(&memo_lock);
	return rc;
}

void al_sb_filter_reset(void)
{
	pthread_mutex_lock(&memo_lock);
	al_sb_filter_clear(&memo);
	pthread_mutex_unlock(&memo_lock);
}

void al_sb_filter_clear(al_sb_filter *f)
{
	free(f->insns);
	f->insns = NULL;
	f->len = 0;
}

int al_sb_filter_load(const al_sb_filter *f)
{
	struct sock_fprog prog = {.len = f->len, .filter = f->insns};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}
