/* libFuzzer target: the bundle and its manifest (src/bundle/).
 *
 * The input is a request; a parsed request's code and files[] become a
 * bundle, the bundle a manifest.  Checked for every input that gets that
 * far:
 *   - the manifest checks against its own bundle;
 *   - the code comes first, the inputs follow sorted bytewise, unique;
 *   - the canonical text has one reading: one header line and one line
 *     per entry, each read back gives the entry's kind, mode, size, hash
 *     and path exactly;
 *   - changing any one field of any entry (mode, size, hash, path) makes
 *     the check fail with "bundle_mismatch". */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>
#include <airlock/provider.h>

#include "bundle/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must_mismatch(const al_manifest *m, const al_bundle *b,
			  const char *what)
{
	al_error *err = NULL;
	if (al_manifest_check(m, b, &err) == 0 ||
	    strcmp(al_error_get_reason(err), "bundle_mismatch") != 0) {
		fprintf(stderr, "a changed %s passed the check\n", what);
		abort();
	}
	al_error_free(err);
}

/* Reads the canonical text back; aborts unless it says exactly m. */
static void one_reading(const al_manifest *m, const char *text)
{
	static const char head[] = "airlock-manifest 1\n";
	if (strncmp(text, head, sizeof(head) - 1) != 0)
		abort();
	const char *p = text + sizeof(head) - 1;
	for (size_t i = 0; i < m->n; i++) {
		const al_manifest_entry *e = &m->entries[i];
		const char *nl = strchr(p, '\n');
		if (nl == NULL)
			abort();
		char kind[8], sha[65];
		unsigned mode;
		uint64_t sz;
		int used = 0;
		/* The path is the rest of the line after exactly one
		 * space: it may itself start with a space. */
		if (sscanf(p, "%7s %4o %" SCNu64 " %64s%n", kind, &mode, &sz,
			   sha, &used) != 4 ||
		    used <= 0 || p[used] != ' ')
			abort();
		const char *path = p + used + 1;
		size_t plen = (size_t)(nl - path);
		if (strcmp(kind, e->kind == AL_BUNDLE_CODE ? "code" : "input") !=
			    0 ||
		    mode != (e->mode & 07777u) || sz != e->size ||
		    strcmp(sha, e->sha256) != 0 || strlen(e->path) != plen ||
		    memcmp(path, e->path, plen) != 0) {
			fprintf(stderr, "entry %zu reads back differently\n", i);
			abort();
		}
		p = nl + 1;
	}
	if (*p != '\0')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	al_request *req = NULL;
	al_bundle *b = NULL;
	al_manifest *m = NULL;
	al_error *err = NULL;

	if (al_request_from_json((const char *)data, size, &req, &err) < 0) {
		al_error_free(err);
		return 0;
	}
	if (al_bundle_new(req, &b, &err) < 0) {
		if (b != NULL || al_error_get_code(err) != AL_ERR_INVALID_REQUEST)
			abort();
		al_error_free(err);
		al_request_free(req);
		return 0;
	}
	if (al_manifest_new(b, &m) < 0)
		abort();
	if (al_manifest_check(m, b, &err) < 0) {
		fprintf(stderr, "own manifest refused: %s\n",
			al_error_get_message(err));
		abort();
	}
	if (m->n != al_bundle_count(b) || m->n == 0 ||
	    m->entries[0].kind != AL_BUNDLE_CODE)
		abort();
	uint64_t total = 0;
	for (size_t i = 0; i < m->n; i++) {
		const al_manifest_entry *e = &m->entries[i];
		total += e->size;
		if (i > 0 && (e->kind != AL_BUNDLE_INPUT ||
			      (i > 1 && strcmp(m->entries[i - 1].path,
					       e->path) >= 0)))
			abort();
		if (strpbrk(e->path, "\n\r") != NULL)
			abort();
	}
	if (total != m->total_bytes)
		abort();
	char *text = al_manifest_canonical(m);
	if (text == NULL)
		abort();
	one_reading(m, text);
	free(text);

	for (size_t i = 0; i < m->n; i++) {
		al_manifest_entry *e = &m->entries[i];
		e->mode ^= 01;
		must_mismatch(m, b, "mode");
		e->mode ^= 01;
		e->size += 1;
		must_mismatch(m, b, "size");
		e->size -= 1;
		char saved = e->sha256[0];
		e->sha256[0] = saved == '0' ? '1' : '0';
		must_mismatch(m, b, "hash");
		e->sha256[0] = saved;
		char *path = e->path;
		size_t plen = strlen(path);
		char *other = malloc(plen + 2);
		if (other == NULL)
			abort();
		memcpy(other, path, plen);
		other[plen] = 'x';
		other[plen + 1] = '\0';
		e->path = other;
		must_mismatch(m, b, "path");
		e->path = path;
		free(other);
	}
	if (al_manifest_check(m, b, &err) < 0)
		abort();
	al_manifest_free(m);
	al_bundle_free(b);
	al_request_free(req);
	return 0;
}
