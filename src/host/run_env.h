/* Internal: the host's layer of a run's environment (docs/host.md, "The
 * run's environment"): the tenant's pass_env variables read from this
 * process, then the granted secrets under the variable names the tenant
 * maps them to, then what a caller's host forwarded.  The provider puts
 * this layer after the request's env and before the trusted variables. */
#ifndef AL_HOST_RUN_ENV_H
#define AL_HOST_RUN_ENV_H

#include <stddef.h>

#include "host/config.h"

/* *out (n_out strings "NAME=value"; free with al_secrets_env_free) takes
 * the forwarded strings over (*fwd is freed and cleared either way but on
 * -ENOMEM).  0; 1 when a secret cannot be read; negative errno. */
int al_run_env_resolve(const al_config *cfg, const al_cfg_tenant *t,
		       const al_request *req, char ***fwd, size_t *n_fwd,
		       char ***out, size_t *n_out);

#endif
