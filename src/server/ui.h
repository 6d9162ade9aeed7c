/* Internal: the web console's static files (docs/console.md), embedded
 * at build time and served at /ui.  Public content: every piece of data
 * the console shows comes from the /v1 API with the user's token. */
#ifndef AL_SERVER_UI_H
#define AL_SERVER_UI_H

#include <stdbool.h>

#include <microhttpd.h>

#include "server/service.h"

/* Whether url is under /ui (the console's routes). */
bool al_ui_route(const char *url);
/* Answers GET/HEAD of a /ui url: the file, a redirect of "/ui" to "/ui/",
 * or 404. */
enum MHD_Result al_ui_answer(al_service *svc, struct MHD_Connection *conn,
			     const char *url);

#endif
