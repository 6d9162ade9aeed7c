/* Internal: the service's listening sockets. */
#ifndef AL_SERVER_LISTEN_H
#define AL_SERVER_LISTEN_H

#include <stddef.h>

#include <airlock/error.h>

/* A TCP listener on "ADDR:PORT" or "[V6ADDR]:PORT" (numeric only; port 0
 * picks a free one).  *shown gets "http://ADDR:PORT" with the real port. */
int al_listen_tcp(const char *addr, int *fd_out, char *shown, size_t len,
		  al_error **err);
/* A unix stream listener at path, mode 0600.  A stale socket file (no
 * one answering) is replaced; a live one is refused (EADDRINUSE). */
int al_listen_unix(const char *path, int *fd_out, al_error **err);

#endif
