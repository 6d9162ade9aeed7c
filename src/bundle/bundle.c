/* The immutable bundle of a request's code and input files (see
 * airlock/provider.h and bundle.h): one anonymous mapping holding the
 * entry table, the paths and the bytes, made read-only once filled, so
 * nothing in this process can change what the manifest describes. */
#include "bundle/bundle.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <airlock/json.h>

#include "json/syntax.h"
#include "lang/languages.h"

struct al_bundle {
	size_t map_len;
	size_t n;
	al_bundle_item items[];
};

bool al_bundle_paths_collide(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > lb) {
		const char *t = a;
		a = b;
		b = t;
		size_t tl = la;
		la = lb;
		lb = tl;
	}
	return strncmp(a, b, la) == 0 && (la == lb || b[la] == '/');
}

static int invalid(al_error **err, const char *field, const char *what)
{
	return al_error_set(err, AL_ERR_INVALID_REQUEST, EINVAL, field, "%s",
			    what);
}

static int check_files(const al_request *req, al_error **err)
{
	char field[48];
	uint64_t total = 0;
	if (req->n_files > AL_MAX_FILES)
		return invalid(err, "files", "too many files");
	if (req->n_files > 0 && req->files == NULL)
		return invalid(err, "files", "files are missing");
	for (size_t i = 0; i < req->n_files; i++) {
		const al_file *f = &req->files[i];
		snprintf(field, sizeof(field), "files[%zu].path", i);
		if (f->path == NULL)
			return invalid(err, field, "is required");
		const char *why = al_syntax_path(f->path, strlen(f->path), false);
		if (why != NULL)
			return invalid(err, field, why);
		for (size_t j = 0; j < i; j++)
			if (al_bundle_paths_collide(req->files[j].path, f->path))
				return invalid(err, field,
					       "repeats or nests in another "
					       "file's path");
		if (f->content.len > 0 && f->content.data == NULL) {
			snprintf(field, sizeof(field), "files[%zu].content", i);
			return invalid(err, field, "has no bytes");
		}
		if (f->mode > 0777u) {
			snprintf(field, sizeof(field), "files[%zu].mode", i);
			return invalid(err, field, "must be at most 0777");
		}
		total += f->content.len;
		if (total > AL_MAX_FILES_TOTAL_BYTES)
			return invalid(err, "files",
				       "hold too many bytes in total");
	}
	return 0;
}

static int check_outputs(const al_request *req, al_error **err)
{
	char field[48];
	if (req->n_outputs > AL_MAX_OUTPUTS)
		return invalid(err, "outputs", "too many outputs");
	if (req->n_outputs > 0 && req->outputs == NULL)
		return invalid(err, "outputs", "outputs are missing");
	for (size_t i = 0; i < req->n_outputs; i++) {
		snprintf(field, sizeof(field), "outputs[%zu]", i);
		const char *p = req->outputs[i];
		if (p == NULL)
			return invalid(err, field, "is required");
		const char *why = al_syntax_path(p, strlen(p), true);
		if (why != NULL)
			return invalid(err, field, why);
		for (size_t j = 0; j < i; j++)
			if (strcmp(req->outputs[j], p) == 0)
				return invalid(err, field, "is listed twice");
	}
	return 0;
}

int al_bundle_request_check(const al_request *req, al_error **err)
{
	if (req == NULL)
		return invalid(err, "request", "no request");
	if (req->code.len > AL_MAX_CODE_BYTES ||
	    (req->code.len > 0 &&
	     (req->code.data == NULL ||
	      memchr(req->code.data, '\0', req->code.len) != NULL)))
		return invalid(err, "code", "is not program text within bounds");
	int rc = check_files(req, err);
	if (rc == 0)
		rc = check_outputs(req, err);
	if (rc < 0)
		return rc;
	/* The request contradicts itself: there is nowhere to put the files,
	 * or nowhere the program could write the outputs. */
	if (req->n_files > 0 && req->grant.workspace == AL_WORKSPACE_NONE)
		return invalid(err, "files",
			       "input files need a workspace grant (ro or rw)");
	if (req->n_outputs > 0 && req->grant.workspace != AL_WORKSPACE_RW)
		return invalid(err, "outputs",
			       "declared outputs need the workspace grant rw");
	return 0;
}

const char *al_bundle_script_name(const char *language)
{
	const char *name = language ? al_language_script_name(language) : NULL;
	return name != NULL ? name : "main";
}

static int by_path(const void *a, const void *b, void *ctx)
{
	const al_request *req = ctx;
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	return strcmp(req->files[ia].path, req->files[ib].path);
}

/* Files ordered by path (bytewise), so equal requests give equal
 * manifests whatever the order of files[]. */
static int sorted_order(const al_request *req, size_t **out)
{
	size_t *idx = calloc(req->n_files ? req->n_files : 1, sizeof(*idx));
	if (idx == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_files; i++)
		idx[i] = i;
	qsort_r(idx, req->n_files, sizeof(*idx), by_path, (void *)req);
	*out = idx;
	return 0;
}

int al_bundle_new(const al_request *req, al_bundle **out, al_error **err)
{
	*out = NULL;
	int rc = al_bundle_request_check(req, err);
	if (rc < 0)
		return rc;
	size_t *order = NULL;
	if (sorted_order(req, &order) < 0)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	const char *script = al_bundle_script_name(req->language);
	size_t n = 1 + req->n_files;
	size_t len = sizeof(al_bundle) + n * sizeof(al_bundle_item) +
		     strlen(script) + 1 + req->code.len;
	for (size_t i = 0; i < req->n_files; i++)
		len += strlen(req->files[i].path) + 1 +
		       req->files[i].content.len;
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		free(order);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "cannot map the bundle");
	}
	al_bundle *b = map;
	b->map_len = len;
	b->n = n;
	char *p = (char *)&b->items[n];
	for (size_t i = 0; i < n; i++) {
		const char *path = script;
		const unsigned char *data = req->code.data;
		size_t dlen = req->code.len;
		unsigned mode = AL_BUNDLE_CODE_MODE;
		if (i > 0) {
			const al_file *f = &req->files[order[i - 1]];
			path = f->path;
			data = f->content.data;
			dlen = f->content.len;
			mode = f->mode;
		}
		size_t plen = strlen(path) + 1;
		memcpy(p, path, plen);
		b->items[i].kind = i == 0 ? AL_BUNDLE_CODE : AL_BUNDLE_INPUT;
		b->items[i].path = p;
		b->items[i].mode = mode;
		p += plen;
		if (dlen > 0)
			memcpy(p, data, dlen);
		b->items[i].data = (const unsigned char *)p;
		b->items[i].len = dlen;
		p += dlen;
	}
	free(order);
	/* From here on nothing in this process can change it. */
	if (mprotect(map, len, PROT_READ) < 0) {
		munmap(map, len);
		return al_error_set(err, AL_ERR_INTERNAL, errno, NULL,
				    "cannot make the bundle read-only");
	}
	*out = b;
	return 0;
}

void al_bundle_free(al_bundle *b)
{
	if (b != NULL)
		munmap(b, b->map_len);
}

size_t al_bundle_count(const al_bundle *b)
{
	return b != NULL ? b->n : 0;
}

const al_bundle_item *al_bundle_item_at(const al_bundle *b, size_t i)
{
	return b != NULL && i < b->n ? &b->items[i] : NULL;
}

int al_bundle_use_init(al_bundle_use *u, const al_exec *exec, al_error **err)
{
	memset(u, 0, sizeof(*u));
	if (exec->bundle == NULL && exec->manifest == NULL) {
		int rc = al_bundle_new(exec->request, &u->own_bundle, err);
		if (rc < 0)
			return rc;
		if (al_manifest_new(u->own_bundle, &u->own_manifest) < 0) {
			al_bundle_use_clear(u);
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		}
		u->bundle = u->own_bundle;
		u->manifest = u->own_manifest;
	} else {
		u->bundle = exec->bundle;
		u->manifest = exec->manifest;
	}
	if (u->bundle == NULL || u->manifest == NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EINVAL,
				    "bundle_mismatch",
				    "a bundle without its manifest");
	/* The host's bundle still has to satisfy the request's rules: a
	 * provider never relies on its caller for them. */
	int rc = al_bundle_request_check(exec->request, err);
	if (rc < 0)
		return rc;
	return al_manifest_check(u->manifest, u->bundle, err);
}

void al_bundle_use_clear(al_bundle_use *u)
{
	al_manifest_free(u->own_manifest);
	al_bundle_free(u->own_bundle);
	memset(u, 0, sizeof(*u));
}
