/* libFuzzer target: the request parser (al_request_from_json).
 *
 * Any input must be parsed or refused with a typed error naming a field,
 * never crash; text with a raw NUL byte is never JSON.  A parsed request must survive a round trip: its canonical
 * JSON parses again and gives the same canonical JSON (the idempotency
 * hash depends on that), and describing it never fails. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	al_request *req = NULL, *again = NULL;
	al_error *err = NULL;

	if (al_request_from_json((const char *)data, size, &req, &err) < 0) {
		/* Refused: typed, with a reason. */
		if (req != NULL || err == NULL ||
		    al_error_get_code(err) == 0 ||
		    al_error_get_message(err)[0] == '\0')
			abort();
		al_error_free(err);
		return 0;
	}
	/* A raw NUL byte is never JSON text. */
	if (err != NULL || memchr(data, '\0', size) != NULL)
		abort();
	char *one = al_request_to_json(req);
	char *line = al_request_describe(req);
	if (one == NULL || line == NULL)
		abort();
	if (al_request_from_json(one, strlen(one), &again, &err) < 0) {
		fprintf(stderr, "canonical form refused (%s: %s): %s\n",
			al_error_get_reason(err), al_error_get_message(err),
			one);
		abort();
	}
	char *two = al_request_to_json(again);
	if (two == NULL || strcmp(one, two) != 0) {
		fprintf(stderr, "round trip differs:\n%s\n%s\n", one,
			two ? two : "(null)");
		abort();
	}
	free(two);
	free(line);
	free(one);
	al_request_free(again);
	al_request_free(req);
	return 0;
}
