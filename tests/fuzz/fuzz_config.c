/* libFuzzer target: the configuration parser (al_config_parse) and the
 * daemon's token table read from the same text (al_auth_from_config).
 *
 * Any input is parsed or refused with AL_ERR_INVALID_CONFIG (or an
 * internal error for memory), never a crash; text with a raw NUL byte is
 * never JSON.  A parsed configuration
 * copies (the reload path re-parses its source), finds each of its
 * tenants by name, and keeps each provider's configuration as a JSON
 * object. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <airlock/host.h>

#include "host/config.h"
#include "server/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void typed(al_error **err, al_error_code want)
{
	if (*err == NULL || (al_error_get_code(*err) != want &&
			     al_error_get_code(*err) != AL_ERR_INTERNAL) ||
	    al_error_get_message(*err)[0] == '\0')
		abort();
	al_error_free(*err);
	*err = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	al_config *cfg = NULL, *copy = NULL;
	al_auth *auth = NULL;
	al_error *err = NULL;
	const char *text = (const char *)data;

	if (al_config_parse(text, size, &cfg, &err) < 0) {
		if (cfg != NULL)
			abort();
		typed(&err, AL_ERR_INVALID_CONFIG);
		return 0;
	}
	/* A raw NUL byte is never JSON text (and the source is kept as a
	 * C string, so the copy below would read less). */
	if (memchr(data, '\0', size) != NULL)
		abort();
	if (al_config_copy(cfg, &copy, &err) < 0 ||
	    copy->n_tenants != cfg->n_tenants ||
	    copy->n_candidates != cfg->n_candidates)
		abort();
	for (size_t i = 0; i < cfg->n_tenants; i++) {
		const al_cfg_tenant *t = &cfg->tenants[i];
		if (al_config_tenant(cfg, t->name) != t)
			abort();
		for (size_t k = 0; k < t->n_languages; k++)
			if (!al_cfg_tenant_allows_language(t, t->languages[k]))
				abort();
	}
	for (size_t i = 0; i < cfg->n_candidates; i++) {
		const char *pc = cfg->candidates[i].config_json;
		if (cfg->candidates[i].provider == NULL)
			abort();
		if (pc != NULL) {
			json_t *o = json_loads(pc, 0, NULL);
			if (!json_is_object(o))
				abort();
			json_decref(o);
		}
	}
	if (al_auth_from_config(text, size, cfg, &auth, &err) < 0) {
		if (auth != NULL)
			abort();
		typed(&err, AL_ERR_INVALID_CONFIG);
	} else if (auth != NULL) {
		char principal[AL_AUTH_PRINCIPAL_LEN];
		/* A token no one holds finds no tenant. */
		if (al_auth_tenant(auth, "Bearer not-a-configured-token",
				   principal) != NULL)
			abort();
		const char *any = al_auth_any_tenant(auth);
		if (any != NULL && al_config_tenant(cfg, any) == NULL)
			abort();
		al_auth_free(auth);
	}
	al_config_free(copy);
	al_config_free(cfg);
	return 0;
}
