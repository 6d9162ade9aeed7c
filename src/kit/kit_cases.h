/* Internal: every case function of the conformance kit (registered in
 * kit_cases.c, described in docs/conformance.md). */
#ifndef AL_KIT_CASES_H
#define AL_KIT_CASES_H

#include "kit/kit.h"

#define KIT_CASE(fn) void fn(kit_ctx *k, kit_case *c, const void *arg)

/* kit_cases_provider.c */
KIT_CASE(kit_case_probe_facts);
KIT_CASE(kit_case_ensure);
KIT_CASE(kit_case_health);
KIT_CASE(kit_case_release);
KIT_CASE(kit_case_disabled);
KIT_CASE(kit_case_unavailable);
KIT_CASE(kit_case_language_absent);
KIT_CASE(kit_case_language_unknown);
KIT_CASE(kit_case_language_runs);
KIT_CASE(kit_case_build_runs);
KIT_CASE(kit_case_build_failed);
KIT_CASE(kit_case_network_unoffered);
KIT_CASE(kit_case_workspace_modes);
KIT_CASE(kit_case_streaming);
KIT_CASE(kit_case_result_shape);
/* kit_cases_io.c */
KIT_CASE(kit_case_stdin_delivered);
KIT_CASE(kit_case_stdin_closed);
KIT_CASE(kit_case_empty_argument);
KIT_CASE(kit_case_empty_program);
KIT_CASE(kit_case_exit_status);
KIT_CASE(kit_case_binary_output);
KIT_CASE(kit_case_exit_signal);
KIT_CASE(kit_case_run_env);
KIT_CASE(kit_case_request_env);
KIT_CASE(kit_case_host_env);
KIT_CASE(kit_case_code_not_path);
/* kit_cases_time.c */
KIT_CASE(kit_case_leftover_killed);
KIT_CASE(kit_case_cancel);
KIT_CASE(kit_case_interrupt);
KIT_CASE(kit_case_interrupt_unknown);
KIT_CASE(kit_case_private_temp);
KIT_CASE(kit_case_one_handle_16);
/* the wall limit's enforcement, called by kit_case_limit */
void kit_case_limit_wall(kit_ctx *k, kit_case *c);
/* kit_cases_limits.c: arg points at the limit bit */
KIT_CASE(kit_case_limit);
/* kit_cases_quota.c: socket_bytes (called by kit_case_limit) and the
 * writable areas' bounds */
void kit_case_limit_socket(kit_ctx *k, kit_case *c);
KIT_CASE(kit_case_writable_areas);
/* kit_cases_isolation.c */
KIT_CASE(kit_case_process_contained);
KIT_CASE(kit_case_host_fs);
KIT_CASE(kit_case_privilege);
KIT_CASE(kit_case_syscalls);
KIT_CASE(kit_case_network);

#endif
