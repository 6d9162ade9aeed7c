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
	"socket_bytes",
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

const char *al_outcome_name(al_outcome outcome)
{
	if ((unsigned)outcome >= AL_OUTCOME__COUNT)
		return NULL;
	return outcome_names[outcome];
}

int al_outcome_from_name(const char *name, al_outcome *out)
{
	int i = index_of(outcome_names, COUNT(outcome_names), name);
	if (i < 0)
		return i;
	*out = (al_outcome)i;
	return 0;
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

const char *al_network_name(al_network n)
{
	return (unsigned)n < COUNT(network_names) ? network_names[n] : NULL;
}

int al_network_from_name(const char *name, al_network *out)
{
	int i = index_of(network_names, COUNT(network_names), name);
	if (i < 0)
		return i;
	*out = (al_network)i;
	return 0;
}

const char *al_workspace_mode_name(al_workspace_mode m)
{
	return (unsigned)m < COUNT(workspace_names) ? workspace_names[m] : NULL;
}

int al_workspace_mode_from_name(const char *name, al_workspace_mode *out)
{
	int i = index_of(workspace_names, COUNT(workspace_names), name);
	if (i < 0)
		return i;
	*out = (al_workspace_mode)i;
	return 0;
}

const char *al_purpose_name(al_purpose p)
{
	return (unsigned)p < COUNT(purpose_names) ? purpose_names[p] : NULL;
}

const char *al_isolation_name(al_isolation i)
{
	return (unsigned)i < COUNT(isolation_names) ? isolation_names[i] : NULL;
}

const char *al_safety_class_name(al_safety_class c)
{
	return (unsigned)c < COUNT(safety_names) ? safety_names[c] : NULL;
}

int al_safety_class_from_name(const char *name, al_safety_class *out)
{
	int i = index_of(safety_names, COUNT(safety_names), name);
	if (i < 0)
		return i;
	*out = (al_safety_class)i;
	return 0;
}

int al_purpose_from_name(const char *name, al_purpose *out)
{
	int i = index_of(purpose_names, COUNT(purpose_names), name);
	if (i < 0)
		return i;
	*out = (al_purpose)i;
	return 0;
}

int al_isolation_from_name(const char *name, al_isolation *out)
{
	int i = index_of(isolation_names, COUNT(isolation_names), name);
	if (i < 0)
		return i;
	*out = (al_isolation)i;
	return 0;
}
