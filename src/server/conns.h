/* Internal: the connection guard of airlockd (docs/serve.md,
 * "Connections").  libmicrohttpd's own timeout is an idle timeout, which a
 * client that trickles one byte at a time never reaches; the guard gives
 * every request a deadline for its headers and one for its body, and
 * closes the socket of a connection that misses one. */
#ifndef AL_SERVER_CONNS_H
#define AL_SERVER_CONNS_H

#include <stdint.h>

#include <microhttpd.h>

typedef struct al_conns al_conns;

/* Where a connection is: waiting for a request's headers (also idle
 * between kept-alive requests), reading a body, or being answered (no
 * deadline: a run or an event stream may take long). */
typedef enum al_conn_phase {
	AL_CONN_HEADERS = 0,
	AL_CONN_BODY,
	AL_CONN_ANSWERING
} al_conn_phase;

typedef struct al_conns_stats {
	unsigned open;		/* connections now */
	uint64_t header_timeouts; /* closed for slow headers */
	uint64_t body_timeouts;	  /* closed for a slow body */
} al_conns_stats;

/* Starts the guard's thread.  Timeouts in milliseconds, both > 0. */
int al_conns_new(unsigned header_ms, unsigned body_ms, al_conns **out);
/* Stops the thread; call after every daemon using it has stopped. */
void al_conns_free(al_conns *g);

/* The MHD_OPTION_NOTIFY_CONNECTION callback (cls: the guard). */
void al_conns_notify(void *cls, struct MHD_Connection *conn,
		     void **socket_context,
		     enum MHD_ConnectionNotificationCode code);
/* Moves conn to phase, starting that phase's deadline. */
void al_conns_phase(al_conns *g, struct MHD_Connection *conn,
		    al_conn_phase phase);
void al_conns_stats_get(al_conns *g, al_conns_stats *out);

#endif
