/* Request allocation, deep copy and limit defaults. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/contract.h>

#include "core/build_contract.h"
#include "core/util.h"
#include "json/toolbelt_json.h"

void al_limits_apply_defaults(al_limits *l)
{
	if (!(l->set & AL_LIMIT_WALL_MS))
		l->wall_ms = AL_DEFAULT_WALL_MS;
	if (!(l->set & AL_LIMIT_OUTPUT_BYTES))
		l->output_bytes = AL_DEFAULT_OUTPUT_BYTES;
	if (!(l->set & AL_LIMIT_OPEN_FILES))
		l->open_files = AL_DEFAULT_OPEN_FILES;
	if (!(l->set & AL_LIMIT_CPU_MS))
		l->cpu_ms = 0;
	if (!(l->set & AL_LIMIT_MEMORY_BYTES))
		l->memory_bytes = 0;
	if (!(l->set & AL_LIMIT_PIDS))
		l->pids = 0;
	if (!(l->set & AL_LIMIT_FILE_BYTES))
		l->file_bytes = 0;
	if (!(l->set & AL_LIMIT_WORKSPACE_BYTES))
		l->workspace_bytes = 0;
	if (!(l->set & AL_LIMIT_SOCKET_BYTES))
		l->socket_bytes = 0;
	if (!(l->set & AL_LIMIT_STACK_BYTES))
		l->stack_bytes = 0;
}

al_request *al_request_new(void)
{
	al_request *req = calloc(1, sizeof(*req));
	if (req == NULL)
		return NULL;
	req->code.data = calloc(1, 1);
	req->stdin_data.data = calloc(1, 1);
	if (req->code.data == NULL || req->stdin_data.data == NULL) {
		al_request_free(req);
		return NULL;
	}
	al_limits_apply_defaults(&req->limits);
	al_build_limits_apply_defaults(&req->build_limits);
	return req;
}

void al_request_free(al_request *req)
{
	if (req == NULL)
		return;
	free(req->language);
	free(req->code.data);
	free(req->code_sha256);
	al_strv_free(req->argv, req->argc);
	free(req->stdin_data.data);
	for (size_t i = 0; req->files != NULL && i < req->n_files; i++) {
		free(req->files[i].path);
		free(req->files[i].content.data);
	}
	free(req->files);
	al_strv_free(req->outputs, req->n_outputs);
	al_strv_free(req->grant.secrets, req->grant.n_secrets);
	al_toolbelt_grant_free(&req->grant);
	for (size_t i = 0; req->env != NULL && i < req->n_env; i++) {
		free(req->env[i].name);
		al_explicit_free_str(req->env[i].value);
	}
	free(req->env);
	free(req->idempotency_key);
	for (size_t i = 0; req->toolchain != NULL && i < req->n_toolchain; i++) {
		free(req->toolchain[i].toolchain);
		free(req->toolchain[i].constraint);
	}
	free(req->toolchain);
	free(req->name);
	al_strv_free(req->exec, req->n_exec);
	free(req->continues);
	al_request_build_free(req);
	free(req->image);
	free(req);
}

al_request *al_request_dup(const al_request *src)
{
	al_request *req = calloc(1, sizeof(*req));
	if (req == NULL)
		return NULL;
	req->purpose = src->purpose;
	req->limits = src->limits;
	req->isolation = src->isolation;
	req->has_stdin = src->has_stdin;
	req->grant.network = src->grant.network;
	req->grant.workspace = src->grant.workspace;
	req->grant.streaming = src->grant.streaming;
	if (al_request_build_dup(src, req) < 0)
		goto fail;

	if (al_strdup_opt(src->language, &req->language) < 0 ||
	    al_bytes_dup(&src->code, &req->code) < 0 ||
	    al_strdup_opt(src->code_sha256, &req->code_sha256) < 0 ||
	    al_bytes_dup(&src->stdin_data, &req->stdin_data) < 0 ||
	    al_strdup_opt(src->idempotency_key, &req->idempotency_key) < 0 ||
	    al_strdup_opt(src->name, &req->name) < 0 ||
	    al_strdup_opt(src->continues, &req->continues) < 0 ||
	    al_strdup_opt(src->image, &req->image) < 0)
		goto fail;
	if (src->exec != NULL) {
		if (al_strv_dup(src->exec, src->n_exec, &req->exec) < 0)
			goto fail;
		req->n_exec = src->n_exec;
	}
	/* Each count is set right after its array so a failure frees it. */
	if (al_strv_dup(src->argv, src->argc, &req->argv) < 0)
		goto fail;
	req->argc = src->argc;
	if (al_strv_dup(src->outputs, src->n_outputs, &req->outputs) < 0)
		goto fail;
	req->n_outputs = src->n_outputs;
	if (al_strv_dup(src->grant.secrets, src->grant.n_secrets,
			&req->grant.secrets) < 0)
		goto fail;
	req->grant.n_secrets = src->grant.n_secrets;
	if (al_toolbelt_grant_dup(&src->grant, &req->grant) < 0)
		goto fail;

	if (src->n_files > 0) {
		req->files = calloc(src->n_files, sizeof(*req->files));
		if (req->files == NULL)
			goto fail;
		for (size_t i = 0; i < src->n_files; i++, req->n_files++) {
			req->files[i].mode = src->files[i].mode;
			if (al_strdup_opt(src->files[i].path,
					  &req->files[i].path) < 0 ||
			    al_bytes_dup(&src->files[i].content,
					 &req->files[i].content) < 0) {
				req->n_files++;
				goto fail;
			}
		}
	}
	if (src->n_env > 0) {
		req->env = calloc(src->n_env, sizeof(*req->env));
		if (req->env == NULL)
			goto fail;
		for (size_t i = 0; i < src->n_env; i++, req->n_env++) {
			if (al_strdup_opt(src->env[i].name, &req->env[i].name) <
				    0 ||
			    al_strdup_opt(src->env[i].value,
					  &req->env[i].value) < 0) {
				req->n_env++;
				goto fail;
			}
		}
	}
	if (src->n_toolchain > 0) {
		req->toolchain = calloc(src->n_toolchain, sizeof(*req->toolchain));
		if (req->toolchain == NULL)
			goto fail;
		for (size_t i = 0; i < src->n_toolchain; i++, req->n_toolchain++) {
			if (al_strdup_opt(src->toolchain[i].toolchain,
					  &req->toolchain[i].toolchain) < 0 ||
			    al_strdup_opt(src->toolchain[i].constraint,
					  &req->toolchain[i].constraint) < 0) {
				req->n_toolchain++;
				goto fail;
			}
		}
	}
	return req;
fail:
	al_request_free(req);
	return NULL;
}
