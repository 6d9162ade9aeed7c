/* The gates a request passes before any provider is asked: the tenant's
 * language allow-list, its grant (or a grant pinned to the code's SHA-256)
 * and its limit ceilings.  Deny by default: an empty grant allows nothing
 * beyond network none, workspace none, no secrets, no streaming. */
#include "host/gates.h"

#include <stdio.h>
#include <string.h>

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

const char *al_gate_grant(const al_cfg_tenant *t, const al_request *req,
			  const char code_sha256[65])
{
	if (grant_covers(&t->grant, &req->grant))
		return NULL;
	/* A pin widens the grant only for exactly that content. */
	for (size_t i = 0; i < t->n_pins; i++)
		if (strcmp(t->pins[i].code_sha256, code_sha256) == 0 &&
		    grant_covers(&t->pins[i].grant, &req->grant))
			return NULL;
	return "gate:grant";
}

const char *al_gate_ceilings(const al_cfg_tenant *t, al_limits *limits,
			     char *buf, size_t buflen)
{
	al_limits ceil = t->ceilings;
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
			*val = max;
			continue;
		}
		snprintf(buf, buflen, "gate:ceiling:%s", al_limit_name(bit));
		return buf;
	}
	return NULL;
}
