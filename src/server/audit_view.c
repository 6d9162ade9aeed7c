/* The audit trail as a tenant sees it over HTTP: only records whose
 * "tenant" is the caller's (the token decides it, as everywhere), newest
 * first, paged by seq.  The chain's integrity is one fact for the whole
 * trail, so every tenant gets the same verify status; the other tenants'
 * records themselves are never read out. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <jansson.h>
#include <sqlite3.h>

#include <airlock/host.h>

#include "host/db.h"
#include "server/audit_view.h"

/* The tenant's records, newest first, into arr; *next the seq to page on
 * from, 0 when there is no more. */
static int read_records(const char *state_dir, const char *tenant,
			const char *run_id, size_t limit, int64_t before,
			json_t *arr, int64_t *next)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	al_error *err = NULL;
	int rc = al_db_open_readonly(state_dir, &db, &err);
	al_error_free(err);
	*next = 0;
	if (rc < 0)
		return -EIO;
	/* One row past the page says whether there is a next page. */
	if (sqlite3_prepare_v2(db,
			       "SELECT seq, prev_hash, hash, record FROM audit "
			       "WHERE json_extract(record, '$.tenant') = ?1 "
			       "AND seq < ?2 AND (?4 IS NULL OR "
			       "json_extract(record, '$.run_id') = ?4) "
			       "ORDER BY seq DESC LIMIT ?3",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 2, before > 0 ? before : INT64_MAX) !=
		    SQLITE_OK ||
	    sqlite3_bind_int64(st, 3, (sqlite3_int64)limit + 1) != SQLITE_OK ||
	    (run_id != NULL &&
	     sqlite3_bind_text(st, 4, run_id, -1, SQLITE_STATIC) != SQLITE_OK)) {
		rc = -EIO;
		goto out;
	}
	size_t n = 0;
	int step;
	int64_t last = 0;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == limit) {
			*next = last;
			break;
		}
		const char *prev = (const char *)sqlite3_column_text(st, 1);
		const char *hash = (const char *)sqlite3_column_text(st, 2);
		const char *text = (const char *)sqlite3_column_text(st, 3);
		json_t *rec = text ? json_loads(text, 0, NULL) : NULL;
		/* An unreadable row is shown as what it is: verify names it. */
		if (!json_is_object(rec)) {
			json_decref(rec);
			rec = json_object();
		}
		if (rec == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		last = sqlite3_column_int64(st, 0);
		json_object_set_new(rec, "seq", json_integer(last));
		json_object_set_new(rec, "prev_hash",
				    prev ? json_string(prev) : json_null());
		json_object_set_new(rec, "hash",
				    hash ? json_string(hash) : json_null());
		if (json_array_append_new(arr, rec) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = -EIO;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int al_audit_view(const char *state_dir, const char *tenant,
		  const char *run_id, size_t limit, int64_t before, char **out)
{
	json_t *arr = json_array(), *verify = json_object(), *doc = NULL;
	int64_t next = 0;
	int rc = arr && verify ? 0 : -ENOMEM;
	*out = NULL;
	if (rc == 0)
		rc = read_records(state_dir, tenant, run_id, limit, before, arr,
				  &next);
	if (rc < 0)
		goto out;
	al_error *err = NULL;
	bool ok = al_audit_verify(state_dir, NULL, &err) == 0;
	json_object_set_new(verify, "ok", json_boolean(ok));
	if (!ok)
		json_object_set_new(verify, "message",
				    json_string(err ? al_error_get_message(err)
						    : "cannot verify"));
	al_error_free(err);
	doc = json_pack("{s:O, s:o, s:O}", "records", arr, "next_before",
			next > 0 ? json_integer(next) : json_null(), "verify",
			verify);
	if (doc == NULL || (*out = json_dumps(doc, JSON_COMPACT)) == NULL)
		rc = -ENOMEM;
out:
	json_decref(doc);
	json_decref(verify);
	json_decref(arr);
	return rc;
}
