/* Internal: the daemon's log (docs/serve.md, "Logs"): one line per event
 * on stderr, text (key=value) or JSON, with a level and an RFC 3339 UTC
 * timestamp.  airlockd and its supervisors share it; the format and the
 * level travel to supervisors in AIRLOCK_LOG_FORMAT / AIRLOCK_LOG_LEVEL. */
#ifndef AL_CORE_LOG_H
#define AL_CORE_LOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum al_log_level {
	AL_LOG_ERROR = 0,
	AL_LOG_WARN,
	AL_LOG_INFO,
	AL_LOG_DEBUG,
	/* Or-ed into a level: written whatever the level (the start-up
	 * lines a supervisor of airlockd reads its address from). */
	AL_LOG_ALWAYS = 0x100
} al_log_level;

/* "text" or "json"; -EINVAL otherwise. */
int al_log_set_format(const char *name);
/* "error", "warn", "info" or "debug"; -EINVAL otherwise. */
int al_log_set_level(const char *name);
/* Takes AIRLOCK_LOG_FORMAT and AIRLOCK_LOG_LEVEL when set; -EINVAL names
 * an invalid one in *bad (the variable's name). */
int al_log_from_env(const char **bad);
/* Exports the current format and level to the environment, for the
 * processes this one starts. */
void al_log_export_env(void);
bool al_log_enabled(al_log_level level);

/* One field: a string (NULL: left out) or a number. */
typedef struct al_log_field {
	const char *key;
	const char *str;
	long long num;
	bool is_num;
} al_log_field;
#define AL_LF_S(k, v) ((al_log_field){.key = (k), .str = (v)})
#define AL_LF_N(k, v)                                                          \
	((al_log_field){.key = (k), .num = (long long)(v), .is_num = true})

/* One line: msg and the fields, then this thread's request context. */
void al_log_fields(al_log_level level, const char *msg,
		   const al_log_field *fields, size_t n);
/* One line with a printf message and, when run_id is not NULL, a run_id
 * field. */
void al_logf(al_log_level level, const char *run_id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Hands this process's lines to a writer thread (airlockd): a caller
 * queues its line and goes on, so a stderr nobody reads never stops the
 * daemon.  Lines past queue_max bytes queued are dropped and counted; a
 * line says how many once the writer catches up.  Children of this
 * process write their own lines.  0, -EALREADY or a pthread error. */
int al_log_writer_start(size_t queue_max);
/* Waits at most wait_ms for the lines queued so far to be written (a
 * process about to die on purpose): true when they were, or when this
 * process has no writer. */
bool al_log_flush(unsigned wait_ms);
/* Stops taking lines (callers write their own from here) and waits at
 * most wait_ms for the queue to be written: true when it was and the
 * thread is joined (or none runs), false when stderr still blocks it — a
 * later call joins it once it is through, else the exit ends it. */
bool al_log_writer_stop(unsigned wait_ms);

/* The request this thread is serving (NULL: none): its id and trace id are
 * added to every line the thread writes until cleared. */
void al_log_context(const char *request_id, const char *trace_id);

#endif
