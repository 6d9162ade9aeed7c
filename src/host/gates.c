/* The gates a request passes before any provider is asked: the tenant's
 * language allow-list, the env policy, its grant (or a grant pinned to the
 * request's execution plan) and its limit ceilings.  Deny by default: an
 * empty grant allows nothing beyond network none, workspace none, no
 * secrets, no streaming. */
#include "host/gates.h"

#include <stdio.h>
#include <string.h>

#include "host/env_policy.h"
#include "host/plan.h"

const char *al_gate_language(const al_cfg_tenant *t, const al_request *req)
{
	return al_cfg_tenant_allows_language(t, req->language)
		       ? NULL
		       : "gate:language";
}

static bool grant_covers(const al_cfg_grant *g, const al_grant *ask)
{
	if (!(g->network & (1u << ask->network)))
		return false;
	if (!(g->workspace & (1u << ask->workspace)))
		return false;
	if (ask->streaming && !g->streaming)
		return false;
	for (size_t i = 0; i < ask->n_secrets; i++) {
		bool found = false;
		for (size_t j = 0; j < g->n_secrets && !found; j++)
			found = strcmp(ask->secrets[i], g->secrets[j]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static const char *env_refused(const al_cfg_tenant *t, const char *name,
			       char *buf, size_t buflen)
{
	const al_env_rule *r = al_env_policy_match(name);
	if (!r || al_cfg_tenant_allows_env(t, name))
		return NULL;
	snprintf(buf, buflen, "gate:env:%s", r->pattern);
	return buf;
}

const char *al_gate_env(const al_cfg_tenant *t, const al_request *req,
			char *const *fwd_env, size_t n_fwd, char *buf,
			size_t buflen)
{
	const char *why;
	for (size_t i = 0; i < req->n_env; i++)
		if ((why = env_refused(t, req->env[i].name, buf, buflen)))
			return why;
	for (size_t i = 0; i < n_fwd; i++) {
		/* Only the name is looked at; the value stays unread. */
		char name[160];
		size_t n = strcspn(fwd_env[i], "=");
		if (n >= sizeof(name))
			continue; /* longer than any name the table has */
		memcpy(name, fwd_env[i], n);
		name[n] = '\0';
		if ((why = env_refused(t, name, buf, buflen)))
			return why;
	}
	return NULL;
}

static bool pin_matches(const al_cfg_pin *p, const al_request *req,
			const char code_sha256[65],
			const char plan_sha256[65])
{
	if (p->kind == AL_PIN_PLAN)
		return strcmp(p->sha256, plan_sha256) == 0;
	/* A code pin names the plan of that code alone, in its language. */
	return strcmp(p->sha256, code_sha256) == 0 &&
	       strcmp(p->language, req->language) == 0 &&
	       al_plan_code_only(req);
}

const char *al_gate_grant(const al_cfg_tenant *t, const al_request *req,
			  const char code_sha256[65],
			  const char plan_sha256[65])
{
	if (grant_covers(&t->grant, &req->grant))
		return NULL;
	/* A pin widens the grant only for exactly that plan. */
	for (size_t i = 0; i < t->n_pins; i++)
		if (pin_matches(&t->pins[i], req, code_sha256, plan_sha256) &&
		    grant_covers(&t->pins[i].grant, &req->grant))
			return NULL;
	return "gate:grant";
}

/* What an unset memory or pids limit becomes (the contract says none). */
static uint64_t unset_value(unsigned bit)
{
	if (bit == AL_LIMIT_MEMORY_BYTES)
		return AL_CFG_UNSET_MEMORY_BYTES;
	if (bit == AL_LIMIT_PIDS)
		return AL_CFG_UNSET_PIDS;
	return 0;
}

const char *al_gate_ceilings(const al_cfg_tenant *t, al_request *req,
			     unsigned *lowered, unsigned *soft, char *buf,
			     size_t buflen)
{
	al_limits ceil = t->ceilings;
	al_limits *limits = &req->limits;
	*lowered = *soft = 0;
	for (unsigned bit = 1; bit & AL_LIMIT__ALL; bit <<= 1) {
		if (!(ceil.set & bit))
			continue;
		uint64_t max = *al_limits_field(&ceil, bit);
		uint64_t *val = al_limits_field(limits, bit);
		bool over = *val == 0 || *val > max;
		if (!over)
			continue;
		if (!(limits->set & bit)) {
			/* Defaulted: the tenant's ceiling becomes the
			 * limit, so an unlimited default cannot escape. */
			uint64_t u = *val == 0 ? unset_value(bit) : 0;
			*val = u && u < max ? u : max;
			*lowered |= bit;
			if (!(t->ceilings_configured & bit))
				*soft |= bit;
			continue;
		}
		snprintf(buf, buflen, "gate:ceiling:%s", al_limit_name(bit));
		return buf;
	}
	/* The build step's limits and each judged case's are held to the
	 * same ceilings: an explicit one above is refused, a default above
	 * is lowered to the ceiling (and made explicit, so it travels). */
	for (unsigned bit = 1; bit & AL_LIMIT__ALL; bit <<= 1) {
		if (!(ceil.set & bit))
			continue;
		uint64_t max = *al_limits_field(&ceil, bit);
		uint64_t *bv = al_limits_field(&req->build_limits, bit);
		if ((bit & AL_BUILD_LIMIT_BITS) && (*bv == 0 || *bv > max)) {
			if (req->build_limits.set & bit) {
				snprintf(buf, buflen, "gate:ceiling:build.%s",
					 al_limit_name(bit));
				return buf;
			}
			*bv = max;
			req->build_limits.set |= bit;
		}
		for (size_t i = 0; i < req->n_tests; i++) {
			al_limits *cl = &req->tests[i].limits;
			if ((cl->set & bit) && *al_limits_field(cl, bit) > max) {
				snprintf(buf, buflen, "gate:ceiling:tests.%s",
					 al_limit_name(bit));
				return buf;
			}
		}
	}
	/* argv and env as execve copies them: each string and its NUL */
	uint64_t argv_bytes = 0, env_bytes = 0;
	for (size_t i = 0; i < req->argc; i++)
		argv_bytes += strlen(req->argv[i]) + 1;
	for (size_t i = 0; i < req->n_env; i++)
		env_bytes += strlen(req->env[i].name) +
			     strlen(req->env[i].value) + 2;
	if (argv_bytes > t->argv_bytes_max)
		return "gate:ceiling:argv_bytes";
	if (env_bytes > t->env_bytes_max)
		return "gate:ceiling:env_bytes";
	return NULL;
}
