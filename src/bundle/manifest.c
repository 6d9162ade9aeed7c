/* The manifest of a bundle: per entry kind, path, mode, size and SHA-256,
 * and the digest over its canonical text (docs/workspaces.md):
 *
 *   airlock-manifest 1\n
 *   <kind> <mode: 4 octal digits> <size> <sha256> <path>\n   (per entry)
 *
 * kind is "code" or "input"; entries in bundle order (the code, then the
 * inputs sorted bytewise by path).  Paths hold no control bytes, so the
 * text has one reading. */
#include "bundle/bundle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "json/syntax.h"

void al_manifest_free(al_manifest *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->entries[i].path);
	free(m->entries);
	free(m);
}

int al_manifest_new(const al_bundle *b, al_manifest **out)
{
	*out = NULL;
	size_t n = al_bundle_count(b);
	al_manifest *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->entries = calloc(n ? n : 1, sizeof(*m->entries));
	if (m->entries == NULL) {
		free(m);
		return -ENOMEM;
	}
	m->n = n;
	for (size_t i = 0; i < n; i++) {
		const al_bundle_item *it = al_bundle_item_at(b, i);
		al_manifest_entry *e = &m->entries[i];
		e->kind = it->kind;
		e->mode = it->mode;
		e->size = it->len;
		e->path = strdup(it->path);
		if (e->path == NULL) {
			al_manifest_free(m);
			return -ENOMEM;
		}
		al_sha256_hex(it->data, it->len, e->sha256);
		m->total_bytes += it->len;
	}
	char *text = al_manifest_canonical(m);
	if (text == NULL) {
		al_manifest_free(m);
		return -ENOMEM;
	}
	al_sha256_hex(text, strlen(text), m->digest);
	free(text);
	*out = m;
	return 0;
}

char *al_manifest_canonical(const al_manifest *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;
	fputs("airlock-manifest 1\n", f);
	for (size_t i = 0; i < m->n; i++) {
		const al_manifest_entry *e = &m->entries[i];
		fprintf(f, "%s %04o %" PRIu64 " %s %s\n",
			e->kind == AL_BUNDLE_CODE ? "code" : "input",
			e->mode & 07777u, e->size, e->sha256,
			e->path ? e->path : "");
	}
	if (ferror(f) != 0) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int mismatch(al_error **err, const char *what)
{
	return al_error_set(err, AL_ERR_UNAVAILABLE, EBADMSG, "bundle_mismatch",
			    "the manifest does not describe the bundle: %s",
			    what);
}

int al_manifest_check(const al_manifest *m, const al_bundle *b,
		      al_error **err)
{
	if (m == NULL || b == NULL)
		return mismatch(err, "missing");
	if (m->n != al_bundle_count(b) || m->n == 0)
		return mismatch(err, "entry count");
	uint64_t total = 0;
	for (size_t i = 0; i < m->n; i++) {
		const al_manifest_entry *e = &m->entries[i];
		const al_bundle_item *it = al_bundle_item_at(b, i);
		if (e->path == NULL || e->kind != it->kind ||
		    strcmp(e->path, it->path) != 0 || e->mode != it->mode ||
		    e->size != (uint64_t)it->len ||
		    !al_syntax_sha256(e->sha256, strlen(e->sha256)))
			return mismatch(err, "an entry differs");
		if ((i == 0) != (e->kind == AL_BUNDLE_CODE))
			return mismatch(err, "entry kinds out of order");
		total += e->size;
	}
	if (total != m->total_bytes)
		return mismatch(err, "total size");
	char *text = al_manifest_canonical(m);
	if (text == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	char digest[65];
	al_sha256_hex(text, strlen(text), digest);
	free(text);
	if (strcmp(digest, m->digest) != 0)
		return mismatch(err, "digest");
	return 0;
}
