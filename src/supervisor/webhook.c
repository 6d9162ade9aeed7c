/* The webhook kind of host operation (docs/toolbelt.md): one POST of the
 * call's JSON to the URL the operator configured.  Built into the remote
 * provider's module (Makefile), and libcurl is loaded the first time a
 * run calls a webhook (providers/curl_lib.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "providers/curl_lib.h"

#include "supervisor/toolbelt.h"

typedef struct sink {
	char *data;
	size_t len, max;
	bool over;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	sink *s = ctx;
	size_t add = size * n;
	if (s->len + add > s->max) {
		s->over = true;
		return 0; /* ends the transfer */
	}
	char *d = realloc(s->data, s->len + add + 1);
	if (d == NULL)
		return 0;
	memcpy(d + s->len, p, add);
	s->len += add;
	d[s->len] = '\0';
	s->data = d;
	return add;
}

int al_tool_webhook_post(const char *url, const char *body,
			 uint64_t timeout_ms, uint64_t max, long *status,
			 char **out)
{
	sink s = {.max = max};
	struct curl_slist *hdr = NULL;
	int rc = 0;
	*status = 0;
	*out = NULL;
	if (!al_curl_loaded())
		return -ENOSYS; /* no libcurl on this host */
	CURL *c = curl_easy_init();
	if (c == NULL)
		return -ENOMEM;
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* Only where the operator pointed it: no redirects, http(s) only,
	 * no proxy from the supervisor's environment. */
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	CURLcode cc = curl_easy_perform(c);
	if (s.over)
		rc = -EFBIG;
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		rc = -ETIMEDOUT;
	else if (cc != CURLE_OK)
		rc = -EIO;
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	if (rc == 0)
		*out = s.data;
	else
		free(s.data);
	return rc;
}
