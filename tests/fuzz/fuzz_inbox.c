/* libFuzzer target: inbox events (docs/durability.md, "Inbox").
 *
 * An event reaches a run as the body of POST /v1/runs/{id}/inbox
 * (parse_event in src/server/http.c), is stored as "NNNNNN-<id>.json"
 * (src/supervisor/inbox.c) and is found again by that name by the
 * supervisor (parse_name) and by a warm pool member's forwarder
 * (event_name in src/sandbox/warm_inbox.c).  The three files are included
 * so their static parsers are reachable.
 *
 * Input: the first byte picks what is fuzzed.
 *   0  an API body: refused with a reason (always when it holds a raw
 *      NUL byte, which is never JSON), or accepted with an id that
 *      is valid and a stored record {"id", "event"} that parses back to
 *      the same id and an object of at most 64 KiB; the stored name of
 *      that id reads back as it in both name parsers.
 *   1  a directory entry's name: both name parsers agree on it (accept
 *      or refuse, and the same id). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/warm_inbox.c"
#include "server/http.c"
#include "supervisor/inbox.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_names_agree(const char *name)
{
	delivered d;
	inbox_id id;
	bool a = parse_name(name, &d), b = event_name(name, id);
	if (a != b || (a && strcmp(d.id, id) != 0)) {
		fprintf(stderr, "name parsers disagree on '%s'\n", name);
		abort();
	}
}

static void fz_check_body(const uint8_t *data, size_t size)
{
	req_ctx rc = {0};
	char *id = NULL, *event = NULL;
	if (size > 0) {
		rc.body = malloc(size + 1);
		if (rc.body == NULL)
			return;
		memcpy(rc.body, data, size);
		rc.body[size] = '\0';
		rc.len = size;
	}
	const char *why = parse_event(&rc, &id, &event);
	if (why != NULL) {
		if (id != NULL || event != NULL || why[0] == '\0')
			abort();
		free(rc.body);
		return;
	}
	if (id == NULL || event == NULL || !al_inbox_id_valid(id) ||
	    memchr(data, '\0', size) != NULL)
		abort();
	json_error_t jerr;
	json_t *rec = json_loads(event, JSON_REJECT_DUPLICATES, &jerr);
	json_t *ev = json_object_get(rec, "event");
	if (!json_is_object(rec) || json_object_size(rec) != 2 ||
	    !json_is_string(json_object_get(rec, "id")) ||
	    strcmp(json_string_value(json_object_get(rec, "id")), id) != 0 ||
	    !json_is_object(ev))
		abort();
	char *evtext = json_dumps(ev, JSON_COMPACT);
	if (evtext == NULL || strlen(evtext) > AL_MAX_INBOX_EVENT_BYTES)
		abort();
	free(evtext);
	json_decref(rec);

	char name[96];
	snprintf(name, sizeof(name), "%06u-%s.json", 999999u, id);
	delivered d;
	if (!parse_name(name, &d) || d.seq != 999999u ||
	    strcmp(d.id, id) != 0)
		abort();
	fz_names_agree(name);
	free(id);
	free(event);
	free(rc.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 2 * MAX_INBOX_BODY)
		return 0;
	if (data[0] == 0) {
		fz_check_body(data + 1, size - 1);
		return 0;
	}
	char name[NAME_MAX + 1];
	size_t n = size - 1 < NAME_MAX ? size - 1 : NAME_MAX;
	memcpy(name, data + 1, n);
	name[n] = '\0';
	fz_names_agree(name);
	return 0;
}
