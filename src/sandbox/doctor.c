/* `airlock doctor`: what the sandbox needs, mechanism by mechanism, what
 * this host lacks and how an operator fixes it.  Every line is observed
 * now (the same trials as the probe), never assumed. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/context.h"
#include "sandbox/probe.h"
#include "sandbox/sandbox.h"
#include "sandbox/userns.h"

struct check {
	const char *mechanism;
	bool ok;
	bool required; /* false: limits are refused, nothing else breaks */
	const char *fix;
};

static bool read_int(const char *path, long *v)
{
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	bool ok = fscanf(f, "%ld", v) == 1;
	fclose(f);
	return ok;
}

static const char *userns_fix(void)
{
	long v;
	if (read_int("/proc/sys/kernel/unprivileged_userns_clone", &v) && v == 0)
		return "user namespaces are disabled: sysctl -w "
		       "kernel.unprivileged_userns_clone=1";
	if (read_int("/proc/sys/user/max_user_namespaces", &v) && v == 0)
		return "user namespaces are capped at 0: sysctl -w "
		       "user.max_user_namespaces=15000";
	if (read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		     &v) &&
	    v == 1)
		return "AppArmor restricts unprivileged user namespaces: sysctl "
		       "-w kernel.apparmor_restrict_unprivileged_userns=0, or "
		       "give the airlock binary an AppArmor profile with "
		       "'userns,'";
	return "the kernel refused a user namespace (CONFIG_USER_NS, a "
	       "seccomp policy of the container airlock runs in?)";
}

/* How each limit binds in a run here (the facts' limits are the same
 * bits, al_sb_probe_limits). */
struct limit_line {
	unsigned bit;
	bool enforced;
	const char *how;
	uint64_t default_bound; /* what a run naming none gets; 0: none */
};

static const char *cg_how(al_sb_cgver v, const char *v2, const char *v1)
{
	return v == AL_CG_V2 ? v2 : v == AL_CG_V1 ? v1 : "not enforced";
}

/* Every request limit (AL_LIMIT__ALL): whether the facts list it, how it
 * binds and what a run naming none gets. */
static size_t limit_lines(const al_sb_context *ctx, struct limit_line *l,
			  size_t cap)
{
	unsigned bits = al_sb_probe_limits(ctx);
	al_sb_cgver mem = ctx->cg.ver[AL_CG_MEMORY];
	al_sb_cgver pids = ctx->cg.ver[AL_CG_PIDS];
	size_t n = 0;
	for (unsigned bit = 1; (bit & AL_LIMIT__ALL) && n < cap; bit <<= 1) {
		struct limit_line *x = &l[n++];
		*x = (struct limit_line){.bit = bit,
					 .enforced = (bits & bit) != 0,
					 .how = "see docs/sandbox.md, Limits"};
		switch (bit) {
		case AL_LIMIT_WALL_MS:
			x->how = "deadline, then the run's pid namespace is "
				 "killed";
			break;
		case AL_LIMIT_CPU_MS:
			x->how = "RLIMIT_CPU";
			break;
		case AL_LIMIT_MEMORY_BYTES:
			x->how = cg_how(mem, "cgroup v2 memory.max",
					"cgroup v1 memory.limit_in_bytes");
			x->default_bound = mem != AL_CG_NONE
						   ? AL_SB_DEFAULT_MEMORY_BYTES
						   : 0;
			break;
		case AL_LIMIT_PIDS:
			x->how = cg_how(pids, "cgroup v2 pids.max",
					"cgroup v1 pids.max");
			x->default_bound = pids != AL_CG_NONE
						   ? AL_SB_DEFAULT_PIDS
						   : 0;
			break;
		case AL_LIMIT_OUTPUT_BYTES:
			x->how = "the parent keeps at most that much per stream";
			break;
		case AL_LIMIT_FILE_BYTES:
			x->how = "RLIMIT_FSIZE";
			break;
		case AL_LIMIT_WORKSPACE_BYTES:
			x->how = "/workspace is a tmpfs of that size";
			x->default_bound = ctx->cfg.workspace_bytes;
			break;
		case AL_LIMIT_SOCKET_BYTES:
			x->how = "cgroup v1 memory.kmem.tcp.limit_in_bytes";
			x->default_bound = ctx->cg.v1_socket
						   ? ctx->cfg.socket_bytes
						   : 0;
			break;
		case AL_LIMIT_OPEN_FILES:
			x->how = "RLIMIT_NOFILE";
			break;
		case AL_LIMIT_STACK_BYTES:
			x->how = "RLIMIT_STACK";
			break;
		default:
			break;
		}
		if (!x->enforced)
			x->how = "not enforced";
	}
	return n;
}

int al_sandbox_doctor(FILE *out, bool json)
{
	al_sb_context ctx;
	al_error *err = NULL;
	if (al_sb_context_init(&ctx, NULL, AL_SB_CTX_OBSERVE_NOW, &err) < 0) {
		fprintf(out, "sandbox: cannot initialise: %s\n",
			al_error_get_message(err));
		al_error_free(err);
		return 1;
	}
	const al_sb_mechanisms m = ctx.obs.mech;
	bool kill_ok = ctx.cg.v2_kill;
	bool pool_ok = !ctx.privileged || al_sb_uid_pool_check() == 0;
	/* The mechanisms each work alone; a real run shows they work
	 * together, with the cgroups and limits a run gets. */
	bool prereq = m.user_namespaces && m.namespaces && m.no_new_privs &&
		      m.caps_dropped && m.seccomp && pool_ok;
	int ran = prereq ? al_sb_probe_try_language(&ctx, "sh") : 0;
	struct check checks[] = {
		{"user_namespaces", m.user_namespaces, true, userns_fix()},
		{"namespaces", m.namespaces, true,
		 "pid/mount/net/ipc/uts/cgroup namespaces could not be "
		 "created: enable CONFIG_*_NS, or run airlock outside a "
		 "container that forbids unshare"},
		{"no_new_privs", m.no_new_privs, true,
		 "prctl(PR_SET_NO_NEW_PRIVS) failed: kernel older than 3.5?"},
		{"capabilities", m.caps_dropped, true,
		 "the capability bounding set could not be emptied"},
		{"seccomp", m.seccomp, true,
		 "seccomp filters are unavailable: enable CONFIG_SECCOMP_FILTER"},
		{"uid_pool", pool_ok, true,
		 "the per-run uid pool's lock file " AL_SB_UID_LOCK_FILE
		 " cannot be used: its directory must be root's and writable "
		 "by root alone"},
		{"run", ran == 1, true,
		 !prereq ? "not tried: a required mechanism above is missing"
		 : ran < 0
			 ? "no usable sh toolchain (/bin/sh) was found"
			 : "an empty sh program did not complete in a real "
			   "sandbox: run 'airlock run -p sandbox -l sh -e true' "
			   "to see the stage that failed"},
		{"landlock", m.landlock, false,
		 "Landlock is off: add 'landlock' to the lsm= boot parameter "
		 "(e.g. lsm=landlock,lockdown,yama,apparmor,bpf) and reboot; "
		 "the other layers still hold without it"},
		{"cgroup_memory", ctx.cg.ver[AL_CG_MEMORY] != AL_CG_NONE, false,
		 "no writable memory cgroup beneath ours: delegate one (systemd: "
		 "Delegate=yes, or run under 'systemd-run --user -p "
		 "Delegate=yes'); until then memory_bytes is refused as "
		 "unenforceable and runs have no memory bound"},
		{"cgroup_pids", ctx.cg.ver[AL_CG_PIDS] != AL_CG_NONE, false,
		 "no writable pids cgroup beneath ours: delegate one; until "
		 "then pids is refused as unenforceable and runs have no "
		 "process-count bound"},
		{"cgroup_kill", kill_ok, false,
		 "no cgroup v2 with cgroup.kill (kernel >= 5.14): runs are "
		 "stopped through their pid namespace only"},
	};
	size_t n = sizeof(checks) / sizeof(checks[0]);
	struct limit_line lims[32];
	size_t n_lim = limit_lines(&ctx, lims, sizeof(lims) / sizeof(lims[0]));
	int rc = 0;
	for (size_t i = 0; i < n; i++)
		if (checks[i].required && !checks[i].ok)
			rc = 1;
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(
				arr, json_pack("{s:s, s:b, s:b, s:s?}", "mechanism",
					       checks[i].mechanism, "ok",
					       checks[i].ok, "required",
					       checks[i].required, "fix",
					       checks[i].ok ? NULL : checks[i].fix));
		json_t *lim = json_object();
		for (size_t i = 0; lim && i < n_lim; i++) {
			json_t *e = json_pack("{s:b, s:s}", "enforced",
					      lims[i].enforced, "how",
					      lims[i].how);
			if (e && lims[i].default_bound > 0)
				json_object_set_new(
					e, "default",
					json_integer((json_int_t)lims[i]
							     .default_bound));
			json_object_set_new(lim, al_limit_name(lims[i].bit), e);
		}
		json_t *o = json_pack("{s:s, s:b, s:s, s:o, s:o}", "provider",
				      "sandbox", "ok", rc == 0, "uid_mode",
				      ctx.privileged ? "per_run_pool"
						     : "own_uid",
				      "checks", arr, "limits", lim);
		char *s = json_dumps(o, JSON_INDENT(2));
		if (s)
			fprintf(out, "%s\n", s);
		free(s);
		json_decref(o);
	} else {
		fprintf(out, "sandbox (%s):\n",
			ctx.privileged ? "root: per-run uids" : "unprivileged");
		for (size_t i = 0; i < n; i++) {
			fprintf(out, "  %-16s %s\n", checks[i].mechanism,
				checks[i].ok ? "ok"
				: checks[i].required ? "MISSING (required)"
						     : "missing (optional)");
			if (!checks[i].ok)
				fprintf(out, "      fix: %s\n", checks[i].fix);
		}
		fprintf(out, "limits:\n");
		char missing[256] = "";
		for (size_t i = 0; i < n_lim; i++) {
			const char *name = al_limit_name(lims[i].bit);
			fprintf(out, "  %-16s %s", name, lims[i].how);
			if (lims[i].default_bound > 0)
				fprintf(out, " (default %" PRIu64 ")",
					lims[i].default_bound);
			fputc('\n', out);
			if (!lims[i].enforced) {
				size_t ml = strlen(missing);
				snprintf(missing + ml, sizeof(missing) - ml,
					 "%s%s", ml ? ", " : "", name);
			}
		}
		if (rc != 0)
			fprintf(out, "the sandbox cannot run here\n");
		else if (missing[0] != '\0')
			fprintf(out,
				"the sandbox runs here, but %s %s not enforced: "
				"a request naming %s is refused "
				"(unenforceable_limit) and runs have no such "
				"bound\n",
				missing, strchr(missing, ',') ? "are" : "is",
				strchr(missing, ',') ? "them" : "it");
		else
			fprintf(out, "everything the sandbox needs works and "
				     "every limit binds\n");
	}
	al_sb_context_clear(&ctx);
	return rc;
}
