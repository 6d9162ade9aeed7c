/* The CLI's commands that take a provider by name outside the host
 * (probe, contract) resolve a configured provider module here, with the
 * host's rule: an unacknowledged module is not loaded. */
#include <errno.h>
#include <string.h>

#include <airlock/provider.h>

#include "cli/cli.h"
#include "host/config.h"

int cli_module_provider(const al_config *cfg, const char *id,
			const al_provider_ops **out)
{
	const al_cfg_candidate *c = NULL;
	for (size_t i = 0; cfg != NULL && i < cfg->n_candidates; i++)
		if (strcmp(cfg->candidates[i].provider, id) == 0)
			c = &cfg->candidates[i];
	if (c == NULL || c->module == NULL)
		return -ENOENT;
	if (!al_cfg_acknowledged(cfg, id)) {
		cli_error("provider %s is a module the configuration does not "
			  "acknowledge: add it to acknowledged_providers "
			  "(not_acknowledged)",
			  id);
		return -EPERM;
	}
	al_error *err = NULL;
	int rc = al_provider_module_load(id, c->module, out, &err);
	if (rc < 0)
		cli_error("%s", al_error_get_message(err));
	al_error_free(err);
	return rc;
}
