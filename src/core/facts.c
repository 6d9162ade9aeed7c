/* Provider facts: allocation, copy, language lookup. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/contract.h>

#include "core/util.h"
#include "json/toolbelt_json.h"

al_facts *al_facts_new(const char *provider_id, al_safety_class cls)
{
	al_facts *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	f->safety_class = cls;
	if (al_strdup_opt(provider_id, &f->provider) < 0) {
		free(f);
		return NULL;
	}
	return f;
}

void al_facts_free(al_facts *f)
{
	if (f == NULL)
		return;
	free(f->provider);
	free(f->unavailable_reason);
	for (size_t i = 0; i < f->n_languages; i++) {
		free(f->languages[i].language);
		free(f->languages[i].toolchain);
		free(f->languages[i].version);
		free(f->languages[i].path);
	}
	free(f->languages);
	free(f->mechanism_json);
	al_toolbelt_facts_drop(f);
	free(f);
}

int al_facts_add_language(al_facts *f, const char *language,
			  const char *toolchain, const char *version,
			  const char *path)
{
	al_language_fact *grown =
		realloc(f->languages, (f->n_languages + 1) * sizeof(*grown));
	if (grown == NULL)
		return -ENOMEM;
	f->languages = grown;
	al_language_fact *l = &f->languages[f->n_languages];
	memset(l, 0, sizeof(*l));
	if (al_strdup_opt(language, &l->language) < 0 ||
	    al_strdup_opt(toolchain, &l->toolchain) < 0 ||
	    al_strdup_opt(version, &l->version) < 0 ||
	    al_strdup_opt(path, &l->path) < 0) {
		free(l->language);
		free(l->toolchain);
		free(l->version);
		free(l->path);
		return -ENOMEM;
	}
	f->n_languages++;
	return 0;
}

const al_language_fact *al_facts_find_language(const al_facts *f,
					       const char *language)
{
	if (f == NULL || language == NULL)
		return NULL;
	for (size_t i = 0; i < f->n_languages; i++)
		if (strcmp(f->languages[i].language, language) == 0)
			return &f->languages[i];
	return NULL;
}

al_facts *al_facts_dup(const al_facts *src)
{
	if (src == NULL)
		return NULL;
	al_facts *f = al_facts_new(src->provider, src->safety_class);
	if (f == NULL)
		return NULL;
	f->available = src->available;
	f->isolation = src->isolation;
	f->limits = src->limits;
	f->network = src->network;
	f->workspace = src->workspace;
	f->streaming = src->streaming;
	f->exec = src->exec;
	if (al_toolbelt_facts_copy(src, f) < 0 ||
	    al_strdup_opt(src->unavailable_reason, &f->unavailable_reason) < 0 ||
	    al_strdup_opt(src->mechanism_json, &f->mechanism_json) < 0)
		goto fail;
	for (size_t i = 0; i < src->n_languages; i++) {
		const al_language_fact *l = &src->languages[i];
		if (al_facts_add_language(f, l->language, l->toolchain,
					  l->version, l->path) < 0)
			goto fail;
	}
	return f;
fail:
	al_facts_free(f);
	return NULL;
}
