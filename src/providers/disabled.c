/* The `disabled` provider: code execution deliberately off.  Every request
 * gets the explicit outcome `disabled`; nothing is ever started. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <airlock/provider.h>

#include "providers/builtin.h"

struct al_provider_handle {
	int unused;
};

static int disabled_probe(const char *config_json, al_facts **out,
			  al_error **err)
{
	(void)config_json;
	(void)err;
	al_facts *f = al_facts_new("disabled", AL_SAFETY_DISABLED);
	if (f == NULL)
		return -ENOMEM;
	/* Available as a provider (it answers), offering nothing. */
	f->available = true;
	*out = f;
	return 0;
}

static int disabled_ensure(const char *config_json, al_provider_handle **out,
			   al_error **err)
{
	(void)config_json;
	(void)err;
	*out = calloc(1, sizeof(**out));
	return *out != NULL ? 0 : -ENOMEM;
}

static int disabled_health(al_provider_handle *h, al_error **err)
{
	(void)h;
	(void)err;
	return 0;
}

static int disabled_execute(al_provider_handle *h, const al_exec *exec,
			    al_result *res, al_error **err)
{
	(void)h;
	(void)err;
	snprintf(res->run_id, sizeof(res->run_id), "%s", exec->run_id);
	res->started_at_ms = res->finished_at_ms = al_now_ms();
	return al_result_set_outcome(res, AL_OUTCOME_DISABLED,
				     "execution_disabled");
}

static int disabled_interrupt(al_provider_handle *h, const char *run_id,
			      al_error **err)
{
	(void)h;
	(void)run_id;
	return al_error_set(err, AL_ERR_NOT_FOUND, ESRCH, NULL,
			    "nothing runs on the disabled provider");
}

static int disabled_release(al_provider_handle *h, al_error **err)
{
	(void)err;
	free(h);
	return 0;
}

const al_provider_ops al_disabled_provider = {
	AL_ABI_HEADER(al_provider_ops),
	.id = "disabled",
	.probe = disabled_probe,
	.ensure = disabled_ensure,
	.health = disabled_health,
	.execute = disabled_execute,
	.interrupt = disabled_interrupt,
	.release = disabled_release,
};
