/* Internal: libcurl, loaded the first time an HTTP client of ours needs
 * it (the remote provider, the Docker Engine client, webhooks).
 *
 * Linked, libcurl maps some thirty libraries (TLS, Kerberos, LDAP, SSH,
 * IDN) into every process that embeds libairlock, whether it ever makes
 * a request or not, and a cold sandbox run's init is a copy of its
 * caller: each of those mappings is copied and torn down again per run
 * (docs/performance.md, "The init as a copy of its caller").  Loaded
 * here with dlopen instead, as the fleet store loads libpq.
 *
 * A file that includes this header calls libcurl's functions by their
 * usual names; the macros below send them through the loaded library.
 * The functions that start an interaction (curl_global_init and the
 * *_init ones) load it first and fail as they do when out of memory
 * (NULL, or CURLE_FAILED_INIT) when it cannot be loaded; the *_cleanup
 * and curl_slist_* functions accept what those returned; the others are
 * only ever called on a handle an init returned. */
#ifndef AL_PROVIDERS_CURL_LIB_H
#define AL_PROVIDERS_CURL_LIB_H

/* plain declarations: the type-checking wrappers are macros of the same
 * names as the ones below */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include <stdbool.h>

#define AL_CURL_DIRECT(X)                                                     \
	X(curl_easy_setopt)                                                   \
	X(curl_easy_perform)                                                  \
	X(curl_easy_getinfo)                                                  \
	X(curl_share_setopt)                                                  \
	X(curl_multi_add_handle)                                              \
	X(curl_multi_remove_handle)                                           \
	X(curl_multi_perform)                                                 \
	X(curl_multi_poll)                                                    \
	X(curl_multi_info_read)

typedef struct al_curl_lib {
#define AL_CURL_FIELD(name) __typeof__(name) *name;
	AL_CURL_DIRECT(AL_CURL_FIELD)
#undef AL_CURL_FIELD
} al_curl_lib;

/* Filled once libcurl is loaded (al_curl_loaded). */
extern al_curl_lib al_curl;

/* Loads libcurl once per process; true when every function it needs was
 * found. */
bool al_curl_loaded(void);

CURLcode al_curl_global_init(long flags);
CURL *al_curl_easy_init(void);
CURLSH *al_curl_share_init(void);
CURLM *al_curl_multi_init(void);
struct curl_slist *al_curl_slist_append(struct curl_slist *list,
					const char *s);
void al_curl_slist_free_all(struct curl_slist *list);
void al_curl_easy_cleanup(CURL *e);
CURLSHcode al_curl_share_cleanup(CURLSH *s);
CURLMcode al_curl_multi_cleanup(CURLM *m);

/* AL_CURL_NO_REDIRECT: the names stay libcurl's own (this file's
 * implementation, and a test that looks at the table). */
#ifndef AL_CURL_NO_REDIRECT
/* curl.h's own three-argument checks, replaced by the calls below */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#define curl_global_init al_curl_global_init
#define curl_easy_init al_curl_easy_init
#define curl_share_init al_curl_share_init
#define curl_multi_init al_curl_multi_init
#define curl_slist_append al_curl_slist_append
#define curl_slist_free_all al_curl_slist_free_all
#define curl_easy_cleanup al_curl_easy_cleanup
#define curl_share_cleanup al_curl_share_cleanup
#define curl_multi_cleanup al_curl_multi_cleanup
#define curl_easy_setopt (al_curl.curl_easy_setopt)
#define curl_easy_perform (al_curl.curl_easy_perform)
#define curl_easy_getinfo (al_curl.curl_easy_getinfo)
#define curl_share_setopt (al_curl.curl_share_setopt)
#define curl_multi_add_handle (al_curl.curl_multi_add_handle)
#define curl_multi_remove_handle (al_curl.curl_multi_remove_handle)
#define curl_multi_perform (al_curl.curl_multi_perform)
#define curl_multi_poll (al_curl.curl_multi_poll)
#define curl_multi_info_read (al_curl.curl_multi_info_read)
#endif

#endif
