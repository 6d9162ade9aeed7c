/* Provider selection.  The candidates are tried in configured order; each
 * is probed now (facts are observed, not assumed) and the first eligible one
 * is chosen.  Every candidate passed over is recorded with its reason, and
 * nothing weaker is ever substituted silently: a request whose needs no
 * candidate meets is refused.  Every new handle is preceded by a probe of
 * its own, right before its ensure: facts can change between the selection
 * pass and the moment the handle is built (another thread's ensure, a
 * health check that retired the old handle), and a handle lives long.  A
 * candidate with no handle is therefore probed under its ensure lock, and
 * that probe is the handle's own; one with a handle probed again only
 * when the handle is retired.  A
 * handle whose release fails is quarantined: never handed out again, and
 * its candidate is unavailable ("quarantined") until a probe of it
 * succeeds again.
 *
 * A candidate with a "module" is loaded from that shared object only once
 * the deployment acknowledged it: an unacknowledged module is not even
 * loaded (its code would run in this process). */
#include "host/select.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/probe_scope.h"
#include "lang/languages.h"

static const char *const skip_names[] = {
	[AL_SKIP_UNAVAILABLE] = "unavailable",
	[AL_SKIP_TRUSTED_NOT_ACKNOWLEDGED] = "trusted_not_acknowledged",
	[AL_SKIP_ISOLATION_REQUIRED] = "isolation_required",
	[AL_SKIP_LANGUAGE_ABSENT] = "language_absent",
	[AL_SKIP_VERSION_INELIGIBLE] = "version_ineligible",
	[AL_SKIP_CAPABILITY_INELIGIBLE] = "capability_ineligible",
	[AL_SKIP_NOT_ACKNOWLEDGED] = "not_acknowledged",
};

const char *al_skip_name(al_skip_kind k)
{
	return (unsigned)k < sizeof(skip_names) / sizeof(skip_names[0])
		       ? skip_names[k]
		       : "unknown";
}

/* An unacknowledged module candidate: its name only, never called. */
static int stub_candidate(al_candidate_rt *c, const char *id, al_error **err)
{
	c->stub = calloc(1, sizeof(*c->stub));
	char *name = strdup(id);
	if (!c->stub || !name) {
		free(c->stub);
		c->stub = NULL;
		free(name);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	}
	c->stub->id = name;
	c->ops = c->stub;
	return 0;
}

static int module_candidate(al_candidate_rt *c, const al_config *cfg,
			    const char *id, al_error **err)
{
	c->module = true;
	/* The CLI's -p does not acknowledge a module: only the file that
	 * names it can. */
	c->acknowledged = al_cfg_acknowledged(cfg, id);
	if (!c->acknowledged)
		return stub_candidate(c, id, err);
	return al_provider_module_load(id, c->cfg->module, &c->ops, err);
}

/* "require_provider" (the seed's RequireCustomBinding): the named
 * provider must be the one selection tries first, resolved and
 * acknowledged, or the host does not start. */
static int check_required(const al_selector *s, const al_config *cfg,
			  const char *force, al_error **err)
{
	const char *want = cfg->require_provider;
	if (!want)
		return 0;
	if (force && strcmp(force, want) != 0)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM,
				    "require_provider",
				    "the configuration requires provider %s; "
				    "%s was asked for",
				    want, force);
	if (s->n == 0 || strcmp(s->cands[0].ops->id, want) != 0)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM,
				    "require_provider",
				    "the configuration requires provider %s, "
				    "but %s comes first among the providers",
				    want, s->n ? s->cands[0].ops->id : "none");
	if (!al_selector_acknowledged(s, 0))
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM,
				    "require_provider",
				    "the configuration requires provider %s, "
				    "but it is not in acknowledged_providers",
				    want);
	return 0;
}

static const al_provider_ops *lookup(const al_provider_ops *const *extra,
				     const char *id)
{
	for (size_t i = 0; extra && extra[i]; i++)
		if (strcmp(extra[i]->id, id) == 0)
			return extra[i];
	return al_provider_lookup(id);
}

int al_selector_init(al_selector *s, const al_config *cfg,
		     const al_provider_ops *const *extra, const char *force,
		     bool force_acknowledges, al_error **err)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->trusted_acknowledged = cfg->trusted_acknowledged;
	size_t n = force ? 1 : cfg->n_candidates;
	s->cands = calloc(n, sizeof(*s->cands));
	if (!s->cands)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	for (size_t i = 0; i < n; i++) {
		al_candidate_rt *c = &s->cands[i];
		const char *id = force ? force : cfg->candidates[i].provider;
		/* A forced provider keeps its configured config, if any. */
		for (size_t j = 0; j < cfg->n_candidates; j++)
			if (strcmp(cfg->candidates[j].provider, id) == 0)
				c->cfg = &cfg->candidates[j];
		pthread_mutex_init(&c->ensure_lock, NULL);
		s->n = i + 1;
		if (c->cfg && c->cfg->module) {
			int rc = module_candidate(c, cfg, id, err);
			if (rc < 0)
				return rc;
			continue;
		}
		c->ops = lookup(extra, id);
		if (!c->ops) {
			char key[32];
			snprintf(key, sizeof(key), "providers[%zu]", i);
			return al_error_set(err,
					    force ? AL_ERR_NOT_FOUND
						  : AL_ERR_INVALID_CONFIG,
					    ENOENT, force ? "provider" : key,
					    "unknown provider");
		}
		/* By the table itself, not the name: a registered provider
		 * that calls itself "sandbox" is not airlock's.  The
		 * container provider's isolation is airlock's own too: it
		 * writes the container's configuration and observes it. */
		c->own = c->ops == al_provider_lookup("sandbox") ||
			 c->ops == al_provider_lookup("container") ||
			 c->ops == al_provider_lookup("disabled");
		c->acknowledged = al_cfg_acknowledged(cfg, id) ||
				  (force && force_acknowledges);
	}
	if (force && force_acknowledges)
		s->trusted_acknowledged = true;
	return check_required(s, cfg, force, err);
}

/* Called with s->lock held (or alone, at destroy). */
static void release_ref(al_selector *s, al_handle_ref *r)
{
	if (!r->handle || r->quarantined)
		return;
	if (r->ops->release && r->ops->release(r->handle, NULL) < 0) {
		/* Visible (metrics) and never handed out again; its
		 * candidate waits for a good probe. */
		r->quarantined = true;
		s->cands[r->cand].quarantined = true;
		return;
	}
	r->handle = NULL;
}

void al_selector_destroy(al_selector *s)
{
	for (al_handle_ref *r = s->refs, *n; r; r = n) {
		n = r->next;
		release_ref(s, r);
		free(r);
	}
	for (size_t i = 0; i < s->n; i++) {
		pthread_mutex_destroy(&s->cands[i].ensure_lock);
		if (s->cands[i].stub)
			free((char *)s->cands[i].stub->id);
		free(s->cands[i].stub);
	}
	free(s->cands);
	pthread_mutex_destroy(&s->lock);
}

unsigned al_selector_quarantined(al_selector *s)
{
	unsigned n = 0;
	pthread_mutex_lock(&s->lock);
	for (al_handle_ref *r = s->refs; r; r = r->next)
		n += r->quarantined;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void al_selector_put(al_selector *s, al_handle_ref *ref)
{
	if (!ref)
		return;
	pthread_mutex_lock(&s->lock);
	if (ref->users > 0)
		ref->users--;
	if (ref->users == 0 && ref->retired)
		release_ref(s, ref);
	pthread_mutex_unlock(&s->lock);
}

static const char *config_of(const al_candidate_rt *c)
{
	return c->cfg ? c->cfg->config_json : NULL;
}

al_facts *al_selector_probe(al_selector *s, size_t i)
{
	al_facts *f = NULL;
	al_candidate_rt *c = &s->cands[i];
	if (c->ops->probe(config_of(c), &f, NULL) < 0) {
		al_facts_free(f);
		return NULL;
	}
	return f;
}

static void set_skip(al_skip *sk, const char *provider, al_skip_kind kind,
		     const char *detail)
{
	snprintf(sk->provider, sizeof(sk->provider), "%s", provider);
	sk->kind = kind;
	snprintf(sk->detail, sizeof(sk->detail), "%s", detail ? detail : "");
}

bool al_selector_acknowledged(const al_selector *s, size_t i)
{
	const al_candidate_rt *c = &s->cands[i];
	/* The built-in local provider runs nothing isolated and says so:
	 * its acknowledgement is the trusted_local one (eligible). */
	return c->own || c->acknowledged ||
	       c->ops == al_provider_lookup("local");
}

/* true when the candidate can run the request; else fills *sk. */
static bool eligible(const al_selector *s, const al_candidate_rt *c,
		     const al_facts *f, const al_request *req, unsigned soft,
		     al_skip *sk)
{
	const char *id = c->ops->id;
	if (!f->available) {
		set_skip(sk, id, AL_SKIP_UNAVAILABLE, f->unavailable_reason);
		return false;
	}
	/* A provider that says it runs code without isolation needs the
	 * deployment's word for that too, whoever built it. */
	if (f->safety_class == AL_SAFETY_TRUSTED_LOCAL &&
	    !s->trusted_acknowledged) {
		set_skip(sk, id, AL_SKIP_TRUSTED_NOT_ACKNOWLEDGED, NULL);
		return false;
	}
	if (req->isolation == AL_ISOLATION_REQUIRED &&
	    (f->safety_class == AL_SAFETY_TRUSTED_LOCAL ||
	     f->safety_class == AL_SAFETY_DISABLED)) {
		set_skip(sk, id, AL_SKIP_ISOLATION_REQUIRED,
			 al_safety_class_name(f->safety_class));
		return false;
	}
	if (f->safety_class == AL_SAFETY_DISABLED)
		return true; /* refuses everything itself: see al_select */
	/* The exec shape runs no language: the provider must offer it. */
	if (req->exec != NULL ? !f->exec
			      : !al_facts_find_language(f, req->language)) {
		set_skip(sk, id, AL_SKIP_LANGUAGE_ABSENT, NULL);
		return false;
	}
	for (size_t i = 0; i < req->n_toolchain; i++) {
		const al_toolchain_req *tc = &req->toolchain[i];
		bool ok = false;
		for (size_t j = 0; j < f->n_languages && !ok; j++) {
			const al_language_fact *lf = &f->languages[j];
			ok = lf->toolchain && lf->version &&
			     strcmp(lf->toolchain, tc->toolchain) == 0 &&
			     al_version_satisfies(lf->version,
						  tc->constraint) == 1;
		}
		if (!ok) {
			set_skip(sk, id, AL_SKIP_VERSION_INELIGIBLE,
				 tc->toolchain);
			return false;
		}
	}
	al_limits lim = req->limits;
	for (unsigned bit = 1; bit & AL_LIMIT__ALL; bit <<= 1) {
		if (*al_limits_field(&lim, bit) != 0 && !(f->limits & bit) &&
		    !(soft & bit)) {
			set_skip(sk, id, AL_SKIP_CAPABILITY_INELIGIBLE,
				 al_limit_name(bit));
			return false;
		}
	}
	if (!(f->network & (1u << req->grant.network))) {
		set_skip(sk, id, AL_SKIP_CAPABILITY_INELIGIBLE, "network");
		return false;
	}
	if (!(f->workspace & (1u << req->grant.workspace))) {
		set_skip(sk, id, AL_SKIP_CAPABILITY_INELIGIBLE, "workspace");
		return false;
	}
	if (req->grant.streaming && !f->streaming) {
		set_skip(sk, id, AL_SKIP_CAPABILITY_INELIGIBLE, "streaming");
		return false;
	}
	/* an image is a container's: no other provider would honour it */
	if (req->image != NULL && f->safety_class != AL_SAFETY_CONTAINER) {
		set_skip(sk, id, AL_SKIP_CAPABILITY_INELIGIBLE, "image");
		return false;
	}
	if (req->grant.toolbelt && !f->toolbelt) {
		set_skip(sk, id, AL_SKIP_CAPABILITY_INELIGIBLE, "toolbelt");
		return false;
	}
	return true;
}

/* A quarantined candidate stays unavailable until a probe of it succeeds
 * (f is that probe); false fills *sk. */
static bool unquarantine(al_selector *s, al_candidate_rt *c, const al_facts *f,
			 al_skip *sk)
{
	pthread_mutex_lock(&s->lock);
	bool q = c->quarantined;
	if (q && f->available)
		c->quarantined = false;
	pthread_mutex_unlock(&s->lock);
	if (q && !f->available) {
		set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE, "quarantined");
		return false;
	}
	return true;
}

/* A new handle becomes the candidate's current one, with one user. */
static int adopt_handle(al_selector *s, al_candidate_rt *c, size_t i,
			al_provider_handle *h, al_handle_ref **out)
{
	al_handle_ref *ref = calloc(1, sizeof(*ref));
	if (!ref) {
		if (c->ops->release)
			c->ops->release(h, NULL);
		return -ENOMEM;
	}
	ref->ops = c->ops;
	ref->cand = i;
	ref->handle = h;
	ref->users = 1;
	pthread_mutex_lock(&s->lock);
	ref->next = s->refs;
	s->refs = ref;
	c->current = ref;
	pthread_mutex_unlock(&s->lock);
	*out = ref;
	return 0;
}

/* Takes (ensuring when needed) the candidate's shared handle.  On a
 * changed re-probe or a failed ensure, fills *sk and returns 1.  own_probe:
 * the caller holds c->ensure_lock and made *facts under it, so they are
 * the probe a new handle needs (no ensure can come between them); the
 * lock is released here. */
static int take_handle(al_selector *s, size_t i, const al_request *req,
		       unsigned soft, al_facts **facts, al_handle_ref **out,
		       al_skip *sk, bool own_probe)
{
	al_candidate_rt *c = &s->cands[i];
	al_handle_ref *ref = NULL;
	int rc = 0;

	if (!own_probe)
		pthread_mutex_lock(&c->ensure_lock);
	pthread_mutex_lock(&s->lock);
	if ((ref = c->current))
		ref->users++;
	pthread_mutex_unlock(&s->lock);
	if (ref && c->ops->health && c->ops->health(ref->handle, NULL) < 0) {
		/* Unhealthy: retire it (released once its runs end), and
		 * probe again for its successor. */
		pthread_mutex_lock(&s->lock);
		ref->retired = true;
		c->current = NULL;
		pthread_mutex_unlock(&s->lock);
		al_selector_put(s, ref);
		ref = NULL;
		own_probe = false;
	}
	if (!ref && own_probe) {
		al_provider_handle *h = NULL;
		if (c->ops->ensure(config_of(c), &h, NULL) < 0) {
			set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE,
				 "ensure_failed");
			rc = 1;
			goto out;
		}
		rc = adopt_handle(s, c, i, h, &ref);
		if (rc < 0)
			goto out;
	} else if (!ref) {
		al_facts *fresh = NULL;
		al_provider_handle *h = NULL;
		/* The mandatory re-probe: this handle's own. */
		if (c->ops->probe(config_of(c), &fresh, NULL) < 0 || !fresh) {
			set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE,
				 "probe_failed");
			al_facts_free(fresh);
			rc = 1;
			goto out;
		}
		if (!unquarantine(s, c, fresh, sk) ||
		    !eligible(s, c, fresh, req, soft, sk)) {
			al_facts_free(fresh);
			rc = 1;
			goto out;
		}
		if (c->ops->ensure(config_of(c), &h, NULL) < 0) {
			set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE,
				 "ensure_failed");
			al_facts_free(fresh);
			rc = 1;
			goto out;
		}
		rc = adopt_handle(s, c, i, h, &ref);
		if (rc < 0) {
			al_facts_free(fresh);
			goto out;
		}
		al_facts_free(*facts);
		*facts = fresh;
	}
	*out = ref;
out:
	pthread_mutex_unlock(&c->ensure_lock);
	return rc;
}

static int add_skip(al_selection *sel, const al_skip *sk)
{
	al_skip *n = realloc(sel->skips, (sel->n_skips + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	sel->skips = n;
	sel->skips[sel->n_skips++] = *sk;
	return 0;
}

/* The candidate's handle, when one is current, is not built again. */
static bool has_handle(al_selector *s, const al_candidate_rt *c)
{
	pthread_mutex_lock(&s->lock);
	bool has = c->current != NULL;
	pthread_mutex_unlock(&s->lock);
	return has;
}

/* The language a probe that only judges req may be narrowed to: its
 * facts about that language's toolchain are all the judgement reads,
 * unless req runs no language or constrains toolchains by name. */
static const char *judged_language(const al_request *req)
{
	return req->exec == NULL && req->n_toolchain == 0 &&
			       req->language != NULL
		       ? req->language
		       : NULL;
}

/* Probes candidate i and judges it for req; 1 with *sk filled when it is
 * passed over, 0 with *out when it may run the request.  own_probe: this
 * probe is also a new handle's own, so it observes everything. */
static int judge_candidate(al_selector *s, size_t i, const al_request *req,
			   unsigned soft, bool own_probe, al_facts **out,
			   al_skip *sk)
{
	al_candidate_rt *c = &s->cands[i];
	al_facts *f = NULL;
	*out = NULL;
	al_probe_scope_set(own_probe ? NULL : judged_language(req));
	int rc = c->ops->probe(config_of(c), &f, NULL);
	al_probe_scope_set(NULL);
	if (rc < 0 || !f) {
		al_facts_free(f);
		set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE, "probe_failed");
		return 1;
	}
	if (!unquarantine(s, c, f, sk) || !eligible(s, c, f, req, soft, sk)) {
		al_facts_free(f);
		return 1;
	}
	*out = f;
	return 0;
}

int al_select(al_selector *s, const al_request *req, unsigned soft,
	      al_selection *sel)
{
	memset(sel, 0, sizeof(*sel));
	for (size_t i = 0; i < s->n; i++) {
		al_candidate_rt *c = &s->cands[i];
		al_facts *f = NULL;
		al_skip sk = {0};
		/* Provenance first: a provider airlock did not build is not
		 * even probed until the deployment acknowledges it. */
		if (!al_selector_acknowledged(s, i)) {
			set_skip(&sk, c->ops->id, AL_SKIP_NOT_ACKNOWLEDGED,
				 NULL);
			if (add_skip(sel, &sk) < 0)
				return -ENOMEM;
			continue;
		}
		/* No handle yet (a CLI run, a daemon's first run): this probe
		 * is made under the ensure lock and serves as the new
		 * handle's own, rather than a second probe right after it. */
		bool own_probe = !has_handle(s, c);
		if (own_probe)
			pthread_mutex_lock(&c->ensure_lock);
		if (judge_candidate(s, i, req, soft, own_probe, &f, &sk) ==
		    1) {
			if (own_probe)
				pthread_mutex_unlock(&c->ensure_lock);
			if (add_skip(sel, &sk) < 0)
				return -ENOMEM;
			continue;
		}
		if (f->safety_class == AL_SAFETY_DISABLED) {
			if (own_probe)
				pthread_mutex_unlock(&c->ensure_lock);
			/* Execution deliberately off at this provider:
			 * refused here, nothing reaches it. */
			sel->chosen = i;
			sel->facts = f;
			sel->outcome = AL_OUTCOME_DISABLED;
			snprintf(sel->reason, sizeof(sel->reason),
				 "provider_disabled");
			return 1;
		}
		int rc = take_handle(s, i, req, soft, &f, &sel->ref, &sk,
				     own_probe);
		if (rc < 0) {
			al_facts_free(f);
			return rc;
		}
		if (rc == 1) {
			al_facts_free(f);
			if (add_skip(sel, &sk) < 0)
				return -ENOMEM;
			continue;
		}
		sel->chosen = i;
		sel->facts = f;
		return 0;
	}
	/* Nothing eligible: the most specific refusal wins. */
	const al_skip *cap = NULL, *lang = NULL;
	for (size_t i = 0; i < sel->n_skips; i++) {
		const al_skip *sk = &sel->skips[i];
		if (!cap && sk->kind == AL_SKIP_CAPABILITY_INELIGIBLE)
			cap = sk;
		if (!lang && (sk->kind == AL_SKIP_LANGUAGE_ABSENT ||
			      sk->kind == AL_SKIP_VERSION_INELIGIBLE))
			lang = sk;
	}
	if (cap) {
		sel->outcome = AL_OUTCOME_UNENFORCEABLE_LIMIT;
		snprintf(sel->reason, sizeof(sel->reason), "%s", cap->detail);
	} else if (lang) {
		sel->outcome = AL_OUTCOME_UNSUPPORTED_LANGUAGE;
		snprintf(sel->reason, sizeof(sel->reason), "%s",
			 al_skip_name(lang->kind));
	} else {
		sel->outcome = AL_OUTCOME_UNAVAILABLE;
		snprintf(sel->reason, sizeof(sel->reason),
			 "sandbox_unavailable");
	}
	return 1;
}

void al_selection_clear(al_selection *sel)
{
	free(sel->skips);
	al_facts_free(sel->facts);
	memset(sel, 0, sizeof(*sel));
}

json_t *al_selection_json(const al_selection *sel)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < sel->n_skips; i++) {
		const al_skip *sk = &sel->skips[i];
		json_t *o = json_pack("{s:s, s:s}", "provider", sk->provider,
				      "skipped", al_skip_name(sk->kind));
		if (o && sk->detail[0])
			json_object_set_new(o, "detail",
					    json_string(sk->detail));
		if (o)
			json_array_append_new(arr, o);
	}
	return arr;
}
