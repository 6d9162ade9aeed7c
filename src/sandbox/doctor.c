/* `airlock doctor`: what the sandbox needs, mechanism by mechanism, what
 * this host lacks and how an operator fixes it.  Every line is observed
 * now (the same trials as the probe), never assumed. */
#include <errno.h>
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
		{"uid_pool", !ctx.privileged || al_sb_uid_pool_check() == 0,
		 true,
		 "the per-run uid pool's lock file " AL_SB_UID_LOCK_FILE
		 " cannot be used: its directory must be root's and writable "
		 "by root alone"},
		{"landlock", m.landlock, false,
		 "Landlock is off: add 'landlock' to the lsm= boot parameter "
		 "(e.g. lsm=landlock,lockdown,yama,apparmor,bpf) and reboot; "
		 "the other layers still hold without it"},
		{"cgroup_memory", ctx.cg.ver[AL_CG_MEMORY] != AL_CG_NONE, false,
		 "no writable memory cgroup beneath ours: delegate one (systemd: "
		 "Delegate=yes, or run under 'systemd-run --user -p "
		 "Delegate=yes'); until then memory_bytes is refused as "
		 "unenforceable"},
		{"cgroup_pids", ctx.cg.ver[AL_CG_PIDS] != AL_CG_NONE, false,
		 "no writable pids cgroup beneath ours: delegate one; until "
		 "then pids is refused as unenforceable"},
		{"cgroup_kill", kill_ok, false,
		 "no cgroup v2 with cgroup.kill (kernel >= 5.14): runs are "
		 "stopped through their pid namespace only"},
	};
	size_t n = sizeof(checks) / sizeof(checks[0]);
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
		json_t *o = json_pack("{s:s, s:b, s:o}", "provider", "sandbox",
				      "ok", rc == 0, "checks", arr);
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
		fprintf(out, "%s\n", rc == 0 ? "everything the sandbox needs works"
					     : "the sandbox cannot run here");
	}
	al_sb_context_clear(&ctx);
	return rc;
}
