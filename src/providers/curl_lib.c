/* libcurl loaded on first use (see curl_lib.h). */
#define AL_CURL_NO_REDIRECT 1
#include "providers/curl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

al_curl_lib al_curl;

/* The entry points this file wraps, resolved with the rest. */
static struct {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_share_init) *share_init;
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_share_cleanup) *share_cleanup;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
} entry;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;

/* A symbol of lib, or NULL (*all turned false). */
static void *sym(void *lib, const char *name, bool *all)
{
	void *p = dlsym(lib, name);
	if (p == NULL)
		*all = false;
	return p;
}

static void load(void)
{
	void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL)
		return;
	bool all = true;
#define AL_CURL_RESOLVE(name)                                                 \
	al_curl.name = (__typeof__(al_curl.name))sym(lib, #name, &all);
	AL_CURL_DIRECT(AL_CURL_RESOLVE)
#undef AL_CURL_RESOLVE
#define AL_CURL_ENTRY(field, name)                                            \
	entry.field = (__typeof__(entry.field))sym(lib, name, &all);
	AL_CURL_ENTRY(global_init, "curl_global_init")
	AL_CURL_ENTRY(easy_init, "curl_easy_init")
	AL_CURL_ENTRY(share_init, "curl_share_init")
	AL_CURL_ENTRY(multi_init, "curl_multi_init")
	AL_CURL_ENTRY(slist_append, "curl_slist_append")
	AL_CURL_ENTRY(slist_free_all, "curl_slist_free_all")
	AL_CURL_ENTRY(easy_cleanup, "curl_easy_cleanup")
	AL_CURL_ENTRY(share_cleanup, "curl_share_cleanup")
	AL_CURL_ENTRY(multi_cleanup, "curl_multi_cleanup")
#undef AL_CURL_ENTRY
	/* a library without one of them is not used at all (it stays
	 * mapped: another part of the process may have it open too) */
	loaded = all;
}

bool al_curl_loaded(void)
{
	pthread_once(&load_once, load);
	return loaded;
}

CURLcode al_curl_global_init(long flags)
{
	return al_curl_loaded() ? entry.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *al_curl_easy_init(void)
{
	return al_curl_loaded() ? entry.easy_init() : NULL;
}

CURLSH *al_curl_share_init(void)
{
	return al_curl_loaded() ? entry.share_init() : NULL;
}

CURLM *al_curl_multi_init(void)
{
	return al_curl_loaded() ? entry.multi_init() : NULL;
}

struct curl_slist *al_curl_slist_append(struct curl_slist *list,
					const char *s)
{
	return al_curl_loaded() ? entry.slist_append(list, s) : NULL;
}

void al_curl_slist_free_all(struct curl_slist *list)
{
	if (list != NULL && al_curl_loaded())
		entry.slist_free_all(list);
}

void al_curl_easy_cleanup(CURL *e)
{
	if (e != NULL && al_curl_loaded())
		entry.easy_cleanup(e);
}

CURLSHcode al_curl_share_cleanup(CURLSH *s)
{
	return s != NULL && al_curl_loaded() ? entry.share_cleanup(s)
					     : CURLSHE_OK;
}

CURLMcode al_curl_multi_cleanup(CURLM *m)
{
	return m != NULL && al_curl_loaded() ? entry.multi_cleanup(m)
					     : CURLM_OK;
}
