/* Choosing the store's backend from its URL (docs/scale-out.md). */
#include "store/store.h"

#include <errno.h>
#include <string.h>

int al_store_pg_open(const char *url, al_store **out, al_error **err);
int al_store_sqlite_open(const char *url, bool create, al_store **out,
			 al_error **err);

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool is_sqlite(const char *url)
{
	return has_prefix(url, "sqlite://");
}

bool al_store_url_ok(const char *url)
{
	return url != NULL && (has_prefix(url, "postgresql://") ||
			       has_prefix(url, "postgres://") ||
			       is_sqlite(url));
}

int al_store_open(const char *url, al_store **out, al_error **err)
{
	*out = NULL;
	if (!al_store_url_ok(url))
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "store",
				    "expected \"sqlite\", sqlite:///PATH or "
				    "a postgresql:// URL");
	if (is_sqlite(url))
		return al_store_sqlite_open(url, true, out, err);
	return al_store_pg_open(url, out, err);
}

int al_store_audit_verify(const char *url, uint64_t *records, al_error **err)
{
	al_store *st = NULL;
	/* Verifying never creates an empty store where none was. */
	int rc = url != NULL && is_sqlite(url)
			 ? al_store_sqlite_open(url, false, &st, err)
			 : al_store_open(url, &st, err);
	if (rc < 0 || st == NULL)
		return rc < 0 ? rc : -EIO;
	rc = st->ops->audit_verify(st, records, err);
	st->ops->close(st);
	return rc;
}
