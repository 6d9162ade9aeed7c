#include "core/probe_scope.h"

static _Thread_local const char *scope_language;

void al_probe_scope_set(const char *language)
{
	scope_language = language;
}

const char *al_probe_scope_language(void)
{
	return scope_language;
}
