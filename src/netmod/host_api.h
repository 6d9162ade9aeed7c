/* What the network modules (libairlock-net.so, libairlock-remote.so) may
 * call in the airlock binary that loads them: the functions this table
 * names, handed to the module by al_net_module_bind right after dlopen,
 * and nothing else.  The binary exports no symbols for them (it is not
 * linked -rdynamic), and a module's link (-z defs) refuses any other
 * reference; scripts/lint.sh checks both.
 *
 * The modules do not link airlock code of their own: that would be a
 * second copy of the state the binary holds (log settings, cgroup
 * discovery, the sqlite it links statically).  A handle one side made (a
 * sqlite3 connection, an al_error) is used only through the binary's
 * functions here.  jansson is the one library shared by symbol: the
 * binary exports its static copy and the modules' json_* references bind
 * to it, because a json_t crosses this table (al_sandbox_idle_targets)
 * and two copies hash object keys with different seeds.
 *
 * A module calls these by their usual names: src/netmod/host_api.c
 * defines each name in the module as a call through the table.  A new
 * call from a module to the binary is one more line below. */
#ifndef AL_NETMOD_HOST_API_H
#define AL_NETMOD_HOST_API_H

#include <stdint.h>
#include <sqlite3.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/host.h>
#include <airlock/json.h>
#include <airlock/provider.h>
#include "cgroup/cgroup.h"
#include "child/artifacts.h"
#include "child/rundir.h"
#include "child/shepherd.h"
#include "core/dir_spread.h"
#include "core/log.h"
#include "core/run_registry.h"
#include "core/util.h"
#include "host/admission.h"
#include "host/config.h"
#include "host/db.h"
#include "host/forwarded_env.h"
#include "host/secrets.h"
#include "host/state_dir.h"
#include "json/base64.h"
#include "lang/languages.h"
#include "sandbox/sandbox.h"
#include "supervisor/control.h"
#include "supervisor/fault.h"
#include "supervisor/identity.h"
#include "supervisor/inbox.h"
#include "supervisor/outlog.h"
#include "supervisor/record_file.h"
#include "supervisor/retention.h"
#include "supervisor/run_records.h"
#include "supervisor/toolbelt.h"

/* Bumped whenever an entry is added, removed or changes type. */
#define AL_NET_HOST_API_VERSION 4

/* FN(return type, name, (parameters), (arguments)); PROC for those
 * returning void; VA for the printf-like ones (the module formats, the
 * binary gets "%s"). */
#define AL_NET_HOST_API(FN, PROC, VA) \
	FN(int64_t, al_admission_admitted_ms, (const al_admission *a), (a)) \
	PROC(void, al_admission_build, (const al_admission *a, uint64_t *cache_bytes, bool *shared, unsigned *parallel, uint64_t *budget_ms), (a, cache_bytes, shared, parallel, budget_ms)) \
	FN(const al_facts *, al_admission_facts, (const al_admission *a), (a)) \
	PROC(void, al_admission_free, (al_admission *adm), (adm)) \
	FN(uint64_t, al_admission_grace_ms, (const al_admission *a), (a)) \
	FN(const char * const *, al_admission_host_env, (const al_admission *a, size_t *n), (a, n)) \
	FN(int, al_admission_operations, (const al_admission *a, char **out), (a, out)) \
	FN(const char *, al_admission_principal, (const al_admission *a), (a)) \
	FN(const char *, al_admission_provider, (const al_admission *a), (a)) \
	FN(const char *, al_admission_provider_config, (const al_admission *a), (a)) \
	FN(const char *, al_admission_provider_module, (const al_admission *a), (a)) \
	FN(const al_request *, al_admission_request, (const al_admission *a), (a)) \
	FN(const char *, al_admission_request_json, (const al_admission *a), (a)) \
	FN(const char *, al_admission_run_id, (const al_admission *a), (a)) \
	FN(const char *, al_admission_tenant, (const al_admission *a), (a)) \
	FN(bool, al_artifact_id_valid, (const char *id), (id)) \
	FN(int, al_artifact_open, (const char *state_dir, const char *run_id, const char *artifact), (state_dir, run_id, artifact)) \
	FN(bool, al_artifacts_live, (const char *state_dir, const char *run_id), (state_dir, run_id)) \
	FN(int, al_audit_verify, (const char *state_dir, size_t *records, al_error **err), (state_dir, records, err)) \
	FN(int, al_base64_decode, (const char *text, size_t text_len, unsigned char **out, size_t *out_len), (text, text_len, out, out_len)) \
	FN(char *, al_base64_encode, (const void *data, size_t len), (data, len)) \
	PROC(void, al_bytes_clear, (al_bytes *b), (b)) \
	FN(int, al_bytes_set, (al_bytes *dst, const void *data, size_t len), (dst, data, len)) \
	FN(int, al_cancel_fd, (const al_cancel *c), (c)) \
	PROC(void, al_cancel_fire, (al_cancel *c, al_cancel_kind kind), (c, kind)) \
	PROC(void, al_cancel_free, (al_cancel *c), (c)) \
	FN(al_cancel *, al_cancel_new, (void), ()) \
	FN(al_cancel_kind, al_cancel_state, (const al_cancel *c), (c)) \
	FN(pid_t, al_cg_clone3, (struct clone_args *ca, int cg_dirfd, bool *placed), (ca, cg_dirfd, placed)) \
	FN(pid_t, al_cg_clone3_vm, (struct clone_args *ca, int cg_dirfd, bool *placed, int (*fn)(void *), void *arg, void *stack, size_t size), (ca, cg_dirfd, placed, fn, arg, stack, size)) \
	PROC(void, al_close_fds_from, (int lowfd, const int *keep, size_t n_keep), (lowfd, keep, n_keep)) \
	FN(int, al_config_default, (al_config **out, al_error **err), (out, err)) \
	PROC(void, al_config_free, (al_config *cfg), (cfg)) \
	FN(int, al_config_parse, (const char *json, size_t len, al_config **out, al_error **err), (json, len, out, err)) \
	FN(const al_cfg_tenant *, al_config_tenant, (const al_config *cfg, const char *name), (cfg, name)) \
	FN(int, al_control_write, (int dirfd, uint64_t epoch, al_control_action action), (dirfd, epoch, action)) \
	FN(int, al_db_open_readonly, (const char *state_dir, sqlite3 **out, al_error **err), (state_dir, out, err)) \
	FN(int, al_dir_names_at, (int dir_fd, bool (*keep)(const char *name), char ** *names, size_t *n), (dir_fd, keep, names, n)) \
	FN(int, al_epoch_next, (const char *state_dir, uint64_t *out), (state_dir, out)) \
	PROC(void, al_error_free, (al_error *err), (err)) \
	FN(const char *, al_error_get_message, (const al_error *err), (err)) \
	VA(int, al_error_set, (al_error **errp, al_error_code code, int errnum, const char *reason, const char *fmt, ...), ()) \
	VA(int, al_error_wrap, (al_error **errp, int rc, const char *fmt, ...), ()) \
	PROC(void, al_explicit_free_str, (char *s), (s)) \
	PROC(void, al_facts_array_free, (al_facts **facts, size_t n), (facts, n)) \
	PROC(void, al_facts_free, (al_facts *facts), (facts)) \
	FN(int, al_facts_from_json, (const char *json, size_t len, al_facts **out, al_error **err), (json, len, out, err)) \
	FN(al_facts *, al_facts_new, (const char *provider_id, al_safety_class cls), (provider_id, cls)) \
	FN(char *, al_facts_to_json, (const al_facts *facts, int pretty), (facts, pretty)) \
	PROC(void, al_format_time_ms, (int64_t ms, char *buf, size_t len), (ms, buf, len)) \
	FN(int, al_forwarded_env_parse, (const char *header, char ***env, size_t *n, const char **why), (header, env, n, why)) \
	FN(int, al_hex_digit, (char c), (c)) \
	FN(int, al_host_admit_json_ex, (al_host *h, const al_host_context *ctx, const char *json, size_t len, const al_run_options *opts, const al_admit_options *aopts, al_admission **adm, al_result **out), (h, ctx, json, len, opts, aopts, adm, out)) \
	FN(int, al_host_audit_close_start, (al_host *h, const json_t *start, const char *outcome, const char *reason, const char *detail, al_error **err), (h, start, outcome, reason, detail, err)) \
	FN(int, al_host_audit_event, (al_host *h, json_t *record, al_error **err), (h, record, err)) \
	FN(int, al_host_audit_has, (al_host *h, const char *run_id, const char *event), (h, run_id, event)) \
	FN(int, al_host_audit_open_starts, (al_host *h, const char *from, json_t **starts, char **head, al_error **err), (h, from, starts, head, err)) \
	FN(int, al_host_capabilities, (al_host *host, const al_host_context *ctx, al_facts ***out, size_t *n, al_error **err), (host, ctx, out, n, err)) \
	FN(int, al_host_finish, (al_host *h, al_admission *adm, al_result *res, const al_finish_options *o, al_result **out), (h, adm, res, o, out)) \
	PROC(void, al_host_free, (al_host *host), (host)) \
	FN(char *, al_host_metrics_text, (al_host *host), (host)) \
	FN(int, al_host_new, (const al_config *cfg, const al_host_options *opts, al_host **out, al_error **err), (cfg, opts, out, err)) \
	FN(int, al_host_resume, (al_host *h, const al_resume_info *info, al_admission **adm, al_error **err), (h, info, adm, err)) \
	FN(int, al_identity_pidfd, (const al_identity *id, const char *nonce, int *pidfd), (id, nonce, pidfd)) \
	FN(int, al_identity_read, (int dirfd, al_identity *id), (dirfd, id)) \
	FN(int, al_identity_scan, (const char *nonce, al_identity *out), (nonce, out)) \
	FN(int, al_identity_signal, (const al_identity *id, const char *nonce, int sig), (id, nonce, sig)) \
	FN(int, al_identity_verify, (const al_identity *id, const char *nonce), (id, nonce)) \
	FN(int, al_identity_write, (int dirfd, const al_identity *id), (dirfd, id)) \
	FN(int, al_inbox_acked, (int dirfd, char ** *ids, size_t *n), (dirfd, ids, n)) \
	FN(int, al_inbox_deliver, (int dirfd, const char *id, const char *event_json), (dirfd, id, event_json)) \
	FN(bool, al_inbox_id_valid, (const char *s), (s)) \
	FN(int, al_inbox_pending, (int dirfd, char ** *ids, char ** *events, size_t *n), (dirfd, ids, events, n)) \
	FN(int, al_inbox_prepare, (int dirfd), (dirfd)) \
	FN(int, al_inbox_result_pending, (int dirfd, struct al_result *res), (dirfd, res)) \
	FN(bool, al_language_known, (const char *language), (language)) \
	FN(int, al_lease_read, (int dirfd, const al_recovery *r, uint64_t *lease), (dirfd, r, lease)) \
	PROC(void, al_log_context, (const char *request_id, const char *trace_id), (request_id, trace_id)) \
	FN(bool, al_log_enabled, (al_log_level level), (level)) \
	PROC(void, al_log_fields, (al_log_level level, const char *msg, const al_log_field *fields, size_t n), (level, msg, fields, n)) \
	VA(void, al_logf, (al_log_level level, const char *run_id, const char *fmt, ...), ()) \
	FN(int, al_nonce_new, (char out[AL_NONCE_HEX+1]), (out)) \
	FN(int64_t, al_now_ms, (void), ()) \
	FN(int, al_outcome_from_name, (const char *name, al_outcome *out), (name, out)) \
	FN(const char *, al_outcome_name, (al_outcome outcome), (outcome)) \
	FN(int, al_outlog_read, (int fd, uint64_t *offset, al_outlog_fn fn, void *ctx), (fd, offset, fn, ctx)) \
	FN(int, al_proc_stat, (pid_t pid, uint64_t *starttime, char *state), (pid, starttime, state)) \
	FN(int, al_read_whole_fd, (int fd, size_t max, char **out, size_t *len), (fd, max, out, len)) \
	PROC(void, al_dir_spread_children, (int dirfd), (dirfd)) \
	FN(int, al_record_file_blanks_make, (int dirfd), (dirfd)) \
	PROC(void, al_record_file_blanks_drop, (int dirfd), (dirfd)) \
	FN(bool, al_record_file_exists, (int dirfd, const char *name), (dirfd, name)) \
	FN(int, al_record_file_lock_dir, (int dirfd), (dirfd)) \
	FN(int, al_record_file_lock_wait, (int fd, int wait_ms), (fd, wait_ms)) \
	FN(bool, al_record_file_no_space, (int err), (err)) \
	FN(int, al_record_file_read, (int dirfd, const char *name, size_t max, char **out, size_t *len), (dirfd, name, max, out, len)) \
	FN(int, al_record_file_read_json, (int dirfd, const char *name, size_t max, json_t **out), (dirfd, name, max, out)) \
	FN(int, al_record_file_reserve_make, (int dirfd, const char *tmp, size_t size), (dirfd, tmp, size)) \
	FN(int, al_record_file_settle, (int dirfd, const char *tmp, const char *name, size_t max), (dirfd, tmp, name, max)) \
	FN(int, al_record_file_sync_named, (int dirfd, const char *name), (dirfd, name)) \
	FN(int, al_record_file_touch, (int dirfd, const char *name), (dirfd, name)) \
	FN(int, al_record_file_write_how, (int dirfd, const char *name, const void *data, size_t len, mode_t mode, al_record_file_how how), (dirfd, name, data, len, mode, how)) \
	FN(int, al_record_file_write_u64, (int dirfd, const char *name, uint64_t v), (dirfd, name, v)) \
	PROC(void, al_recovery_clear, (al_recovery *r), (r)) \
	FN(int, al_recovery_drop_request, (int dirfd, al_recovery *r), (dirfd, r)) \
	FN(int, al_recovery_read, (int dirfd, const char *run_id, al_recovery *r), (dirfd, run_id, r)) \
	FN(int, al_recovery_write, (int dirfd, const al_recovery *r), (dirfd, r)) \
	FN(int, al_recovery_write_unsynced, (int dirfd, const al_recovery *r), (dirfd, r)) \
	FN(int, al_remove_tree_at, (int parent_fd, const char *name), (parent_fd, name)) \
	FN(char *, al_request_to_json, (const al_request *req), (req)) \
	PROC(void, al_result_free, (al_result *res), (res)) \
	FN(int, al_result_from_json, (const char *json, size_t len, al_result **out, al_error **err), (json, len, out, err)) \
	FN(al_result *, al_result_new, (void), ()) \
	FN(int, al_result_set_outcome, (al_result *res, al_outcome outcome, const char *reason), (res, outcome, reason)) \
	FN(char *, al_result_to_json, (const al_result *res, int pretty), (res, pretty)) \
	FN(int, al_run_cgroup_base, (char **out), (out)) \
	FN(int, al_run_cgroup_create, (const char *base, const char *run_id, const char *tag, char **dir), (base, run_id, tag, dir)) \
	FN(int, al_run_cgroup_create_idle, (const char *base, const char *nonce, const char *tag, char **dir), (base, nonce, tag, dir)) \
	FN(int, al_run_cgroup_kill_wait, (const char *dir, int timeout_ms), (dir, timeout_ms)) \
	FN(int, al_run_cgroup_populated, (const char *dir), (dir)) \
	FN(int, al_run_cgroup_remove, (const char *dir), (dir)) \
	FN(int, al_run_dir_open, (int runs_fd, const char *run_id, bool create, int *fd), (runs_fd, run_id, create, fd)) \
	FN(bool, al_run_id_canonical, (const char *s), (s)) \
	PROC(void, al_run_id_new, (char out[40]), (out)) \
	FN(bool, al_run_id_valid, (const char *s), (s)) \
	PROC(void, al_run_registry_add, (al_run_registry *reg, al_run_entry *entry, const char *run_id, al_cancel *cancel), (reg, entry, run_id, cancel)) \
	PROC(void, al_run_registry_destroy, (al_run_registry *reg), (reg)) \
	PROC(void, al_run_registry_init, (al_run_registry *reg), (reg)) \
	FN(int, al_run_registry_interrupt_run, (al_run_registry *reg, const char *run_id, al_error **err), (reg, run_id, err)) \
	PROC(void, al_run_registry_remove, (al_run_registry *reg, al_run_entry *entry), (reg, entry)) \
	FN(const char *, al_run_work_tmpfs, (const char *provider, const char *module), (provider, module)) \
	FN(int, al_rundir_remove_leftover, (const char *base, const char *run_id), (base, run_id)) \
	FN(int, al_runs_dir_open, (const char *state_dir, int *fd), (state_dir, fd)) \
	FN(int, al_runs_forget, (const char *state_dir, uint64_t older_than_ms, char *const *run_ids, size_t n_run_ids, al_forget_stats *stats, al_error **err), (state_dir, older_than_ms, run_ids, n_run_ids, stats, err)) \
	FN(const char *, al_safety_class_name, (al_safety_class c), (c)) \
	PROC(void, al_sandbox_config_drop_pools, (const char *provider, json_t *config), (provider, config)) \
	FN(int, al_sandbox_idle_targets, (const char *provider, json_t *config, al_sandbox_warm_fn on, void *ctx), (provider, config, on, ctx)) \
	PROC(void, al_secrets_env_free, (char **env, size_t n), (env, n)) \
	PROC(void, al_sha256_hex, (const void *data, size_t len, char hex[65]), (data, len, hex)) \
	FN(int, al_state_dir_check, (const char *state_dir, al_error **err), (state_dir, err)) \
	FN(int, al_strdup_opt, (const char *s, char **out), (s, out)) \
	PROC(void, al_strv_free, (char **v, size_t n), (v, n)) \
	FN(int, al_toolbelt_persist_operations, (int run_dirfd, const char *ops_json), (run_dirfd, ops_json)) \
	FN(int, al_toolbelt_rotate, (int run_dirfd), (run_dirfd)) \
	FN(bool, al_utf8_valid, (const unsigned char *s, size_t len), (s, len)) \
	FN(int, sqlite3_bind_blob64, (sqlite3_stmt *st, int i, const void *data, sqlite3_uint64 n, void (*destroy)(void *)), (st, i, data, n, destroy)) \
	FN(int, sqlite3_bind_int64, (sqlite3_stmt *st, int i, sqlite3_int64 v), (st, i, v)) \
	FN(int, sqlite3_bind_text, (sqlite3_stmt *st, int i, const char *text, int n, void (*destroy)(void *)), (st, i, text, n, destroy)) \
	FN(int, sqlite3_busy_handler, (sqlite3 *db, int (*handler)(void *, int), void *ctx), (db, handler, ctx)) \
	FN(int, sqlite3_changes, (sqlite3 *db), (db)) \
	FN(int, sqlite3_close, (sqlite3 *db), (db)) \
	FN(const void *, sqlite3_column_blob, (sqlite3_stmt *st, int i), (st, i)) \
	FN(int, sqlite3_column_bytes, (sqlite3_stmt *st, int i), (st, i)) \
	FN(int, sqlite3_column_count, (sqlite3_stmt *st), (st)) \
	FN(int, sqlite3_column_int, (sqlite3_stmt *st, int i), (st, i)) \
	FN(sqlite3_int64, sqlite3_column_int64, (sqlite3_stmt *st, int i), (st, i)) \
	FN(const unsigned char *, sqlite3_column_text, (sqlite3_stmt *st, int i), (st, i)) \
	FN(int, sqlite3_column_type, (sqlite3_stmt *st, int i), (st, i)) \
	FN(int, sqlite3_errcode, (sqlite3 *db), (db)) \
	FN(const char *, sqlite3_errmsg, (sqlite3 *db), (db)) \
	FN(const char *, sqlite3_errstr, (int code), (code)) \
	FN(int, sqlite3_exec, (sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **), void *ctx, char **errmsg), (db, sql, callback, ctx, errmsg)) \
	FN(int, sqlite3_finalize, (sqlite3_stmt *st), (st)) \
	FN(int, sqlite3_get_autocommit, (sqlite3 *db), (db)) \
	FN(int, sqlite3_open_v2, (const char *filename, sqlite3 **db, int flags, const char *vfs), (filename, db, flags, vfs)) \
	FN(int, sqlite3_prepare_v2, (sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail), (db, sql, n, st, tail)) \
	FN(int, sqlite3_reset, (sqlite3_stmt *st), (st)) \
	FN(int, sqlite3_step, (sqlite3_stmt *st), (st)) \
	AL_NET_HOST_API_TEST(FN, PROC, VA)

/* The fault points of the test build (src/supervisor/fault.h). */
#ifdef AL_TEST_BUILD
#define AL_NET_HOST_API_TEST(FN, PROC, VA) \
	PROC(void, al_fault_point, (const char *name), (name))
#else
#define AL_NET_HOST_API_TEST(FN, PROC, VA)
#endif

typedef struct al_net_host_api {
	uint32_t version; /* AL_NET_HOST_API_VERSION */
	uint32_t size;	  /* sizeof(al_net_host_api) */
#define AL_NET_HOST_API_FIELD(ret, name, params, args) ret(*name) params;
	AL_NET_HOST_API(AL_NET_HOST_API_FIELD, AL_NET_HOST_API_FIELD,
			AL_NET_HOST_API_FIELD)
#undef AL_NET_HOST_API_FIELD
} al_net_host_api;

/* Each module's one entry the binary calls before any other: 0, or
 * -EPROTO when the table is not the one the module was built against
 * (then the module is unusable). */
#define AL_NET_MODULE_BIND "al_net_module_bind"
int al_net_module_bind(const al_net_host_api *api);

#endif
