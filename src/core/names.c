/* Name tables of the contract's enums: one place for every JSON token. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <airlock/airlock.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const outcome_names[AL_OUTCOME__COUNT] = {
	[AL_OUTCOME_COMPLETED] = "completed",
	[AL_OUTCOME_FAILED] = "failed",
	[AL_OUTCOME_KILLED] = "killed",
	[AL_OUTCOME_TIMED_OUT] = "timed_out",
	[AL_OUTCOME_INTERRUPTED] = "interrupted",
	[AL_OUTCOME_CANCELLED] = "cancelled",
	[AL_OUTCOME_INVALID_REQUEST] = "invalid_request",
	[AL_OUTCOME_DENIED] = "denied",
	[AL_OUTCOME_UNSUPPORTED_LANGUAGE] = "unsupported_language",
	[AL_OUTCOME_UNENFORCEABLE_LIMIT] = "unenforceable_limit",
	[AL_OUTCOME_DISABLED] = "disabled",
	[AL_OUTCOME_UNAVAILABLE] = "unavailable",
	[AL_OUTCOME_CONFLICT] = "conflict",
};

static const char *const limit_names[] = {
	"wall_ms",	"cpu_ms",	   "memory_bytes",    "pids",
	"output_bytes", "file_bytes", "workspace_bytes", "open_files",
	"socket_bytes", "stack_bytes",
};

static const char *const network_names[] = {"none", "loopback", "host"};
static const char *const workspace_names[] = {"none", "ro", "rw"};
static const char *const purpose_names[] = {"script", "plugin", "asset"};
static const char *const isolation_names[] = {"preferred", "required"};
static const char *const safety_names[] = {"disabled", "trusted_local",
					   "sandboxed", "container", "remote"};

static int index_of(const char *const *names, size_t n, const char *name)
{
	if (name == NULL)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (names[i] != NULL && strcmp(names[i], name) == 0)
			return (int)i;
	return -EINVAL;
}

const char *al_version(void)
{
	return AIRLOCK_VERSION;
}

bool al_outcome_ran(al_outcome outcome)
{
	switch (outcome) {
	case AL_OUTCOME_COMPLETED:
	case AL_OUTCOME_FAILED:
	case AL_OUTCOME_KILLED:
	case AL_OUTCOME_TIMED_OUT:
	case AL_OUTCOME_INTERRUPTED:
	case AL_OUTCOME_CANCELLED:
		return true;
	default:
		return false;
	}
}

const char *al_limit_name(unsigned bit)
{
	for (size_t i = 0; i < COUNT(limit_names); i++)
		if (bit == (1u << i))
			return limit_names[i];
	return NULL;
}

int al_limit_from_name(const char *name, unsigned *bit)
{
	int i = index_of(limit_names, COUNT(limit_names), name);
	if (i < 0)
		return i;
	*bit = 1u << i;
	return 0;
}

/* Every enum with a name table; the name and from_name functions of each
 * are generated from this one list (the X-macro of libuv's UV_ERRNO_MAP):
 * X(function stem, enum type, table). */
#define NAME_TABLES(X)                                          \
	X(outcome, al_outcome, outcome_names)                   \
	X(network, al_network, network_names)                   \
	X(workspace_mode, al_workspace_mode, workspace_names)   \
	X(purpose, al_purpose, purpose_names)                   \
	X(isolation, al_isolation, isolation_names)             \
	X(safety_class, al_safety_class, safety_names)

/* (type is a type name: it cannot be parenthesised.) */
#define NAME_FUNCTIONS(stem, type, table)                               \
	const char *al_##stem##_name(type v)                            \
	{                                                               \
		return (unsigned)v < COUNT(table) ? (table)[v] : NULL;  \
	}                                                               \
	/* NOLINTNEXTLINE(bugprone-macro-parentheses) */                \
	int al_##stem##_from_name(const char *name, type *out)          \
	{                                                               \
		int i = index_of(table, COUNT(table), name);            \
		if (i < 0)                                              \
			return i;                                       \
		*out = (type)i;                                         \
		return 0;                                               \
	}
NAME_TABLES(NAME_FUNCTIONS)
