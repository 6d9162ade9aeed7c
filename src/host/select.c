/* Provider selection.  The candidates are tried in configured order; each
 * is probed now (facts are observed, not assumed) and the first eligible one
 * is chosen.  Every candidate passed over is recorded with its reason, and
 * nothing weaker is ever substituted silently: a request whose needs no
 * candidate meets is refused.  The chosen candidate is probed again right
 * before a handle is ensured for it when time passed since the selection
 * probe (this thread waited for another's ensure), since facts can change
 * between the selection pass and the moment its handle is built; when
 * nothing came between them, the selection probe is that probe (a probe
 * costs a CLI run ~0.3 ms). */
#include "host/select.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	return 0;
}

static void release_ref(al_handle_ref *r)
{
	if (!r->handle || r->quarantined)
		return;
	if (r->ops->release && r->ops->release(r->handle, NULL) < 0) {
		/* Visible (metrics) and never handed out again. */
		r->quarantined = true;
		return;
	}
	r->handle = NULL;
}

void al_selector_destroy(al_selector *s)
{
	for (al_handle_ref *r = s->refs, *n; r; r = n) {
		n = r->next;
		release_ref(r);
		free(r);
	}
	for (size_t i = 0; i < s->n; i++)
		pthread_mutex_destroy(&s->cands[i].ensure_lock);
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
		release_ref(ref);
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
	if (!al_facts_find_language(f, req->language)) {
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
	return true;
}

/* Takes (ensuring when needed) the candidate's shared handle.  On a
 * changed re-probe or a failed ensure, fills *sk and returns 1. */
static int take_handle(al_selector *s, size_t i, const al_request *req,
		       unsigned soft, al_facts **facts, al_handle_ref **out,
		       al_skip *sk)
{
	al_candidate_rt *c = &s->cands[i];
	al_handle_ref *ref = NULL;
	int rc = 0;

	/* Waiting for another thread's ensure is the gap in which facts
	 * can change: then the facts are observed again before an ensure. */
	bool waited = pthread_mutex_trylock(&c->ensure_lock) != 0;
	if (waited)
		pthread_mutex_lock(&c->ensure_lock);
	pthread_mutex_lock(&s->lock);
	if ((ref = c->current))
		ref->users++;
	pthread_mutex_unlock(&s->lock);
	if (ref && c->ops->health && c->ops->health(ref->handle, NULL) < 0) {
		/* Unhealthy: retire it (released once its runs end). */
		pthread_mutex_lock(&s->lock);
		ref->retired = true;
		c->current = NULL;
		pthread_mutex_unlock(&s->lock);
		al_selector_put(s, ref);
		ref = NULL;
	}
	if (!ref) {
		al_facts *fresh = NULL;
		al_provider_handle *h = NULL;
		if (waited || *facts == NULL) {
			if (c->ops->probe(config_of(c), &fresh, NULL) < 0 ||
			    !fresh) {
				set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE,
					 "probe_failed");
				al_facts_free(fresh);
				rc = 1;
				goto out;
			}
			if (!eligible(s, c, fresh, req, soft, sk)) {
				al_facts_free(fresh);
				rc = 1;
				goto out;
			}
		}
		if (c->ops->ensure(config_of(c), &h, NULL) < 0) {
			set_skip(sk, c->ops->id, AL_SKIP_UNAVAILABLE,
				 "ensure_failed");
			al_facts_free(fresh);
			rc = 1;
			goto out;
		}
		ref = calloc(1, sizeof(*ref));
		if (!ref) {
			if (c->ops->release)
				c->ops->release(h, NULL);
			al_facts_free(fresh);
			rc = -ENOMEM;
			goto out;
		}
		ref->ops = c->ops;
		ref->handle = h;
		ref->users = 1;
		pthread_mutex_lock(&s->lock);
		ref->next = s->refs;
		s->refs = ref;
		c->current = ref;
		pthread_mutex_unlock(&s->lock);
		if (fresh) {
			al_facts_free(*facts);
			*facts = fresh;
		}
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
		if (c->ops->probe(config_of(c), &f, NULL) < 0 || !f) {
			al_facts_free(f);
			set_skip(&sk, c->ops->id, AL_SKIP_UNAVAILABLE,
				 "probe_failed");
			if (add_skip(sel, &sk) < 0)
				return -ENOMEM;
			continue;
		}
		if (!eligible(s, c, f, req, soft, &sk)) {
			al_facts_free(f);
			if (add_skip(sel, &sk) < 0)
				return -ENOMEM;
			continue;
		}
		if (f->safety_class == AL_SAFETY_DISABLED) {
			/* Execution deliberately off at this provider:
			 * refused here, nothing reaches it. */
			sel->chosen = i;
			sel->facts = f;
			sel->outcome = AL_OUTCOME_DISABLED;
			snprintf(sel->reason, sizeof(sel->reason),
				 "provider_disabled");
			return 1;
		}
		int rc = take_handle(s, i, req, soft, &f, &sel->ref, &sk);
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
