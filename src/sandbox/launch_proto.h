/* Internal: what a sandbox's processes tell their parent on the fail pipe
 * while a run starts (src/sandbox/launch.c), and the header a warm
 * member's program reads before its exec (src/sandbox/member_go.c).
 * Plain C with no dependency: airlock-sandbox-init (src/sbinit) is built
 * with another C library and includes it too. */
#ifndef AL_SANDBOX_LAUNCH_PROTO_H
#define AL_SANDBOX_LAUNCH_PROTO_H

#include <stdint.h>

/* The step a report is about (al_sb_stage_name names them). */
enum al_sb_stage {
	ST_SYNC = 1,
	ST_CGROUP,
	ST_CGROUPNS,
	ST_MOUNTS,
	ST_WORKSPACE,
	ST_VERIFY,
	ST_NET,
	ST_UTS,
	ST_USERNS,
	ST_FORK,
	ST_STDIO,
	ST_SETSID,
	ST_RLIMIT,
	ST_CHDIR,
	ST_NNP,
	ST_CAPS,
	ST_LANDLOCK,
	ST_SECCOMP,
	ST_EXEC,
	ST_GO,	  /* a member's header could not be read or applied */
	ST_READY, /* not a failure: op says which (below) */
	ST_INIT_EXEC, /* the init could not execute airlock-init */
	ST__N
};

/* The op of an ST_READY report.  READY_GO and READY_MAP_ME go from a
 * program held in its init's memory to that init (run_init_vm);
 * READY_MEMBER from a warm member's program, waiting for its header, to
 * the parent. */
enum al_sb_ready { READY_GO = 0, READY_MAP_ME = 1, READY_MEMBER = 2 };

struct al_sb_fail_msg {
	int32_t stage;
	int32_t err;
	int32_t op;
};

/* The header a waiting member reads from fd 0: 10 decimal digits (the
 * length of the rest), then NUL-terminated fields: stdin mode ("1": keep
 * the pipe, else /dev/null), the number of rlimits, each as resource and
 * value (RLIMIT_CPU: soft = value, hard = value + 1, as a cold run), argc,
 * the argv, the environment. */
#define AL_SB_GO_LEN_DIGITS 10
#define AL_SB_GO_BUF (256u * 1024u)
#define AL_SB_GO_PTRS 4096u

/* The environment variable that makes airlock-sandbox-init a member's
 * waiter (its value: the fail pipe's descriptor) instead of pid 1. */
#define AL_SB_GO_ENV "AL_SANDBOX_GO"

#endif
