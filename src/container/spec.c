/* The OCI runtime configuration of one container: config.json and an
 * empty read-only root.  The filesystem view is the sandbox's own mount
 * plan (host /usr read-only, generated /etc, bounded /tmp, /code,
 * /workspace, masked /proc) translated into OCI mounts; no capabilities,
 * no_new_privs, the sandbox's seccomp policy, a non-root uid, a fresh
 * network namespace, the run's cgroup beneath ours. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container/container.h"
#include "core/util.h"
#include "child/shepherd.h"
#include "cgroup/cgroup.h"
#include "sandbox/mounts.h"
#include "sandbox/run.h"
#include "sandbox/seccomp_policy.h"

static json_t *opts_array(const char *base, const char *extra)
{
	json_t *a = json_array();
	char buf[256];
	snprintf(buf, sizeof(buf), "%s%s%s", base, extra && *extra ? "," : "",
		 extra ? extra : "");
	char *save = NULL;
	char *t = strtok_r(buf, ",", &save);
	while (t != NULL && a != NULL) {
		json_array_append_new(a, json_string(t));
		t = strtok_r(NULL, ",", &save);
	}
	return a;
}

static int add_mount(json_t *mounts, const char *dst, const char *type,
		     const char *src, json_t *opts)
{
	json_t *m = json_pack("{s:s, s:s, s:s, s:o}", "destination", dst,
			      "type", type, "source", src, "options", opts);
	return m ? json_array_append_new(mounts, m) : -1;
}

static bool under_dev(const char *p)
{
	return strncmp(p, "/dev/", 5) == 0;
}

/* A file the plan generates (/etc/passwd ...): written beneath
 * bundle/files and bound read-only. */
static int write_file(const char *bundle, const char *dst, const char *text,
		      char *path, size_t len)
{
	const char *base = strrchr(dst, '/');
	snprintf(path, len, "%s/files/%s", bundle, base ? base + 1 : dst);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		      0444);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int rc = w == (ssize_t)n ? 0 : -EIO;
	close(fd);
	return rc;
}

/* With an image, only what is the run's own is mounted: the image
 * brings its /usr, /etc and the rest. */
static bool run_own(const char *dst)
{
	static const char *const own[] = {"/tmp",  "/code",	  "/build",
					  "/inbox", "/inbox-acks", "/workspace",
					  "/dev",  "/proc"};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		size_t n = strlen(own[i]);
		if (strncmp(dst, own[i], n) == 0 &&
		    (dst[n] == '\0' || dst[n] == '/'))
			return true;
	}
	return false;
}

static int translate(const al_ct_spec_in *in, const al_sb_mount_plan *plan,
		     json_t *mounts, json_t *masked, json_t *ro)
{
	char path[PATH_MAX];
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", in->bundle_dir);
	for (size_t i = 0; i < plan->n; i++) {
		const al_sb_mount_op *op = &plan->ops[i];
		int rc = 0;
		if (in->image_rootfs != NULL && !run_own(op->dst))
			continue;
		/* the image's tree is shared and never changed: its mount
		 * points were made when it was stored */
		if (in->image_rootfs != NULL &&
		    (op->op == AL_MOP_MKDIR || op->op == AL_MOP_SYMLINK) &&
		    !under_dev(op->dst))
			continue;
		switch (op->op) {
		case AL_MOP_MKDIR:
			snprintf(path, sizeof(path), "%s%s", rootfs, op->dst);
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				rc = -errno;
			break;
		case AL_MOP_SYMLINK:
			/* /dev's links are the runtime's own */
			if (under_dev(op->dst))
				break;
			snprintf(path, sizeof(path), "%s%s", rootfs, op->dst);
			if (symlink(op->src, path) < 0 && errno != EEXIST)
				rc = -errno;
			break;
		case AL_MOP_BIND:
		case AL_MOP_VIEW: {
			if (op->dev) /* the runtime makes /dev's nodes */
				break;
			struct stat st;
			if (op->optional && stat(op->src, &st) < 0)
				break;
			rc = add_mount(mounts, op->dst, "bind", op->src,
				       opts_array(op->rw ? "rbind,rw"
							 : "rbind,ro",
						  "nosuid,nodev"));
			break;
		}
		case AL_MOP_TMPFS:
			if (strcmp(op->dst, "/dev") == 0)
				rc = add_mount(mounts, "/dev", "tmpfs", "tmpfs",
					       opts_array("nosuid,strictatime,"
							  "mode=755,size=65536k",
							  NULL));
			else if (strcmp(op->dst, "/inbox-acks") == 0)
				/* on the host, read back after the run */
				rc = add_mount(mounts, op->dst, "bind",
					       in->acks_dir,
					       opts_array("rbind,rw",
							  "nosuid,nodev,noexec"));
			else
				rc = add_mount(mounts, op->dst, "tmpfs",
					       "tmpfs",
					       opts_array("nosuid,nodev",
							  op->src));
			break;
		case AL_MOP_FILE:
			rc = write_file(in->bundle_dir, op->dst, op->src, path,
					sizeof(path));
			if (rc == 0)
				rc = add_mount(mounts, op->dst, "bind", path,
					       opts_array("bind,ro",
							  "nosuid,nodev,noexec"));
			break;
		case AL_MOP_PROC:
			rc = add_mount(mounts, "/proc", "proc", "proc",
				       opts_array("nosuid,nodev,noexec", NULL));
			break;
		case AL_MOP_MASK:
			rc = json_array_append_new(masked,
						   json_string(op->dst));
			break;
		case AL_MOP_RDONLY:
			rc = json_array_append_new(ro, json_string(op->dst));
			break;
		}
		if (rc < 0)
			return rc == -1 ? -ENOMEM : rc;
	}
	return 0;
}

static const char *rlimit_name(int r)
{
	switch (r) {
	case RLIMIT_CORE: return "RLIMIT_CORE";
	case RLIMIT_NOFILE: return "RLIMIT_NOFILE";
	case RLIMIT_FSIZE: return "RLIMIT_FSIZE";
	case RLIMIT_CPU: return "RLIMIT_CPU";
	case RLIMIT_STACK: return "RLIMIT_STACK";
	default: return NULL;
	}
}

/* The run's rlimits, within what this process may set: without
 * CAP_SYS_RESOURCE a hard limit cannot be raised. */
static json_t *rlimits(const al_limits *l)
{
	al_rlimit_spec rl[AL_CHILD_RLIMITS_MAX];
	size_t n = al_child_rlimits(l, rl);
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		struct rlimit cur;
		rlim_t hard = rl[i].value, soft = rl[i].value;
		/* a second of headroom: SIGXCPU names the cause first */
		if (rl[i].resource == RLIMIT_CPU)
			hard = soft + 1;
		if (getrlimit(rl[i].resource, &cur) == 0 &&
		    cur.rlim_max != RLIM_INFINITY) {
			if (hard > cur.rlim_max)
				hard = cur.rlim_max;
			if (soft > hard)
				soft = hard;
		}
		json_array_append_new(
			a, json_pack("{s:s, s:I, s:I}", "type",
				     rlimit_name(rl[i].resource), "hard",
				     (json_int_t)hard, "soft",
				     (json_int_t)soft));
	}
	return a;
}

/* The sandbox's policy (seccomp_policy.c) in the OCI form: its rows
 * that always apply, and the namespace flags of clone. */
static json_t *seccomp(bool errno_honoured)
{
	size_t n;
	const al_sb_rule_info *rules = al_sb_policy_rules(&n);
	json_t *calls = json_array();
	for (size_t i = 0; calls && i < n; i++) {
		if (strcmp(rules[i].when, "always") != 0)
			continue;
		int e = strcmp(rules[i].action, "ENOSYS") == 0	     ? ENOSYS
			: strcmp(rules[i].action, "EAFNOSUPPORT") == 0 ? EAFNOSUPPORT
								       : EPERM;
		if (e != EPERM && !errno_honoured)
			continue;
		json_array_append_new(
			calls, json_pack("{s:[s], s:s, s:i}", "names",
					 rules[i].syscall, "action",
					 "SCMP_ACT_ERRNO", "errnoRet", e));
	}
	static const unsigned long ns_flags[] = {
		0x00020000 /* NEWNS */,	  0x02000000 /* NEWCGROUP */,
		0x04000000 /* NEWUTS */,  0x08000000 /* NEWIPC */,
		0x10000000 /* NEWUSER */, 0x20000000 /* NEWPID */,
		0x40000000 /* NEWNET */};
	for (size_t i = 0; calls && i < sizeof(ns_flags) / sizeof(ns_flags[0]);
	     i++)
		json_array_append_new(
			calls,
			json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}",
				  "names", "clone", "action", "SCMP_ACT_ERRNO",
				  "errnoRet", EPERM, "args", "index", 0,
				  "value", (json_int_t)ns_flags[i], "valueTwo",
				  (json_int_t)ns_flags[i], "op",
				  "SCMP_CMP_MASKED_EQ"));
	/* The table's conditional rows (seccomp_policy.c), the same
	 * conditions in the OCI form. */
	json_t *cond[] = {
		/* only the default persona */
		json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:s}]}", "names",
			  "personality", "action", "SCMP_ACT_ERRNO", "errnoRet",
			  EPERM, "args", "index", 0, "value", (json_int_t)0,
			  "op", "SCMP_CMP_NE"),
		/* terminal injection */
		json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}",
			  "names", "ioctl", "action", "SCMP_ACT_ERRNO",
			  "errnoRet", EPERM, "args", "index", 1, "value",
			  (json_int_t)TIOCSTI, "valueTwo",
			  (json_int_t)0xffffffff, "op", "SCMP_CMP_MASKED_EQ"),
		json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:I, s:s}]}",
			  "names", "ioctl", "action", "SCMP_ACT_ERRNO",
			  "errnoRet", EPERM, "args", "index", 1, "value",
			  (json_int_t)TIOCLINUX, "valueTwo",
			  (json_int_t)0xffffffff, "op", "SCMP_CMP_MASKED_EQ"),
	};
	for (size_t i = 0; calls && i < sizeof(cond) / sizeof(cond[0]); i++)
		json_array_append_new(calls, cond[i]);
	if (calls != NULL && errno_honoured) {
		/* socket families: AF_UNIX, AF_INET, AF_INET6 and netlink's
		 * NETLINK_ROUTE only; socketpair: AF_UNIX only */
		for (int fam = 0; fam < AF_MAX; fam++) {
			if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 ||
			    fam == AF_NETLINK)
				continue;
			json_array_append_new(
				calls,
				json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:s}]}",
					  "names", "socket", "action",
					  "SCMP_ACT_ERRNO", "errnoRet",
					  EAFNOSUPPORT, "args", "index", 0,
					  "value", (json_int_t)fam, "op",
					  "SCMP_CMP_EQ"));
		}
		json_array_append_new(
			calls,
			json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:s}, "
				  "{s:i, s:I, s:s}]}",
				  "names", "socket", "action", "SCMP_ACT_ERRNO",
				  "errnoRet", EAFNOSUPPORT, "args", "index", 0,
				  "value", (json_int_t)AF_NETLINK, "op",
				  "SCMP_CMP_EQ", "index", 2, "value",
				  (json_int_t)NETLINK_ROUTE, "op", "SCMP_CMP_NE"));
		json_array_append_new(
			calls,
			json_pack("{s:[s], s:s, s:i, s:[{s:i, s:I, s:s}]}",
				  "names", "socketpair", "action",
				  "SCMP_ACT_ERRNO", "errnoRet", EAFNOSUPPORT,
				  "args", "index", 0, "value",
				  (json_int_t)AF_UNIX, "op", "SCMP_CMP_NE"));
	}
	return json_pack("{s:s, s:[s], s:o}", "defaultAction", "SCMP_ACT_ALLOW",
			 "architectures", "SCMP_ARCH_X86_64", "syscalls",
			 calls);
}

/* airlock-init first: the program is its child, not pid 1. */
static json_t *args(const al_ct_spec_in *in)
{
	json_t *a = json_pack("[s, s, s]", AL_CT_INIT_PATH,
			      in->report_dir ? "file:" AL_CT_REPORT_FILE : "fd",
			      "--");
	for (size_t i = 0; a && in->argv[i]; i++)
		json_array_append_new(a, json_string(in->argv[i]));
	return a;
}

static json_t *strv(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

int al_ct_spec_write(const al_ct_spec_in *in, al_error **err)
{
	const al_request *req = in->req;
	al_sb_mount_plan plan = {0};
	json_t *root = NULL;
	char path[PATH_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/rootfs", in->bundle_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/files", in->bundle_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		goto fail;
	}
	al_sb_mount_params mp = {
		.code_dir = in->rd->code_dir,
		.workspace_dir = in->rd->workspace,
		.workspace = req->grant.workspace,
		.ws_uid = in->uid,
		.ws_gid = (gid_t)in->uid,
		.network = req->grant.network,
		.tmp_bytes = in->tmp_bytes,
		.extra_roots = in->extra_roots,
		.live = true,
		.build_dir = in->has_build_dir ? in->rd->tmp : NULL,
		.build_rw = in->build,
		.inbox_dir = in->inbox_dir,
		.inbox_acks_bytes = 1,
	};
	rc = al_sb_mount_plan_build(&mp, &plan, err);
	if (rc < 0)
		return rc;
	json_t *mounts = json_array(), *masked = json_array(),
	       *ro = json_array();
	rc = mounts && masked && ro ? translate(in, &plan, mounts, masked, ro)
				    : -ENOMEM;
	if (rc == 0 && add_mount(mounts, AL_CT_INIT_PATH, "bind", in->init_path,
				 opts_array("bind,ro", "nosuid,nodev")) < 0)
		rc = -ENOMEM;
	if (rc == 0 && in->report_dir != NULL &&
	    add_mount(mounts, AL_CT_REPORT_DIR, "bind", in->report_dir,
		      opts_array("bind,rw", "nosuid,nodev,noexec")) < 0)
		rc = -ENOMEM;
	if (rc < 0) {
		json_decref(mounts);
		json_decref(masked);
		json_decref(ro);
		goto fail;
	}
	const al_limits *l = &req->limits;
	uint64_t mem = l->memory_bytes ? l->memory_bytes
				       : AL_SB_DEFAULT_MEMORY_BYTES;
	uint64_t pids = l->pids ? l->pids : AL_SB_DEFAULT_PIDS;
	json_t *caps = json_pack("{s:[], s:[], s:[], s:[], s:[]}", "bounding",
				 "effective", "inheritable", "permitted",
				 "ambient");
	json_t *process = json_pack(
		"{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:o, s:o, s:b}", "terminal",
		0, "user", "uid", (int)in->uid, "gid", (int)in->uid, "args",
		args(in), "env", strv(in->envp), "cwd", "/workspace",
		"capabilities", caps, "rlimits", rlimits(l),
		"noNewPrivileges", 1);
	json_t *ns = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s, s:s}]",
			       "type", "pid", "type", "ipc", "type", "uts",
			       "type", "mount", "type", "network", "path",
			       in->netns_path);
	json_t *resources = json_pack(
		"{s:[{s:b, s:s}], s:{s:I, s:I}, s:{s:I}}", "devices", "allow",
		0, "access", "rwm", "memory", "limit", (json_int_t)mem, "swap",
		(json_int_t)mem, "pids", "limit", (json_int_t)pids);
	if (!in->proc_paths) {
		json_array_clear(masked);
		json_array_clear(ro);
	}
	json_t *linux_ = json_pack(
		"{s:o, s:o, s:s, s:o, s:o}", "namespaces", ns, "resources",
		resources, "cgroupsPath", in->cgroups_path, "maskedPaths",
		masked, "readonlyPaths", ro);
	if (linux_ != NULL && in->oci_seccomp)
		json_object_set_new(linux_, "seccomp",
				    seccomp(in->seccomp_errno));
	root = json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o}",
			 "ociVersion", "1.0.2", "process", process, "root",
			 "path", in->image_rootfs ? in->image_rootfs : "rootfs",
			 "readonly", 1, "hostname", "airlock",
			 "mounts", mounts, "linux", linux_);
	if (root == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/config.json", in->bundle_dir);
	if (json_dump_file(root, path, JSON_COMPACT) < 0) {
		rc = -EIO;
		goto fail;
	}
	json_decref(root);
	al_sb_mount_plan_clear(&plan);
	return 0;
fail:
	json_decref(root);
	al_sb_mount_plan_clear(&plan);
	return al_error_set(err, AL_ERR_UNAVAILABLE, -rc, "container_setup_failed",
			    "cannot write the container's bundle: %s",
			    strerror(-rc));
}
