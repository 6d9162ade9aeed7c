/* Internal: the language a selection probe is made for. */
#ifndef AL_CORE_PROBE_SCOPE_H
#define AL_CORE_PROBE_SCOPE_H

/* The host's selection of a candidate that already has a handle probes
 * it only to judge one request: the facts about the request's language
 * are all it reads (docs/host.md, "Step 6: selection").  It names that
 * language for the calling thread around the probe; a built-in provider
 * may then observe that language's toolchain alone.  Any other probe
 * (a new handle's own, capabilities, a supervisor's) runs with no scope
 * and observes everything.  NULL clears the scope. */
void al_probe_scope_set(const char *language);
/* The calling thread's scope, or NULL. */
const char *al_probe_scope_language(void);

#endif
