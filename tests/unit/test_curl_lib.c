/* libcurl loaded on first use (src/providers/curl_lib.h): a process that
 * embeds libairlock does not map libcurl until one of its HTTP clients
 * makes a request, and the request then works as it did when linked
 * (a webhook POST to a server on loopback, its answer read back). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AL_CURL_NO_REDIRECT 1
#include "providers/curl_lib.h"
#include "supervisor/toolbelt.h"

static bool curl_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	assert_non_null(f);
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, "/libcurl.so") != NULL;
	fclose(f);
	return found;
}

struct server {
	int fd;
	char request[4096];
};

/* One connection: the request read up to its body, one fixed answer. */
static void *serve_one(void *arg)
{
	struct server *s = arg;
	struct pollfd p = {s->fd, POLLIN, 0};
	if (poll(&p, 1, 10000) != 1)
		return NULL;
	int c = accept(s->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	size_t got = 0;
	while (got < sizeof(s->request) - 1) {
		struct pollfd q = {c, POLLIN, 0};
		if (poll(&q, 1, 10000) != 1)
			break;
		ssize_t n = read(c, s->request + got, sizeof(s->request) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		s->request[got] = '\0';
		/* the headers and the two-byte body "{}" */
		const char *end = strstr(s->request, "\r\n\r\n");
		if (end != NULL && strlen(end + 4) >= 2)
			break;
	}
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
				     "Connection: close\r\n\r\nhello";
	ssize_t w = write(c, answer, sizeof(answer) - 1);
	(void)w;
	close(c);
	return NULL;
}

static void test_loaded_on_first_use(void **state)
{
	(void)state;
	/* nothing of ours has made a request yet */
	assert_false(curl_mapped());

	struct server s = {.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
	assert_true(s.fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(s.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s.fd, 1), 0);
	assert_int_equal(getsockname(s.fd, (struct sockaddr *)&a, &len), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, serve_one, &s), 0);

	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook",
		 (unsigned)ntohs(a.sin_port));
	long status = 0;
	char *out = NULL;
	int rc = al_tool_webhook_post(url, "{}", 10000, 1024, &status, &out);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(s.fd);
	assert_int_equal(rc, 0);
	assert_int_equal(status, 200);
	assert_non_null(out);
	assert_string_equal(out, "hello");
	free(out);
	assert_non_null(strstr(s.request, "POST /hook HTTP/1.1"));
	/* loaded now, once, with every function it needs */
	assert_true(al_curl_loaded());
	assert_true(curl_mapped());
	assert_non_null(al_curl.curl_easy_setopt);
	assert_non_null(al_curl.curl_multi_poll);
}

/* The cleanup functions take what a failed init returned. */
static void test_cleanups_take_null(void **state)
{
	(void)state;
	al_curl_easy_cleanup(NULL);
	al_curl_slist_free_all(NULL);
	assert_int_equal(al_curl_share_cleanup(NULL), CURLSHE_OK);
	assert_int_equal(al_curl_multi_cleanup(NULL), CURLM_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loaded_on_first_use),
		cmocka_unit_test(test_cleanups_take_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
