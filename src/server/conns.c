/* The connection guard: a deadline per connection for the phase it is in
 * (headers, body), enforced by one thread that shuts down the socket of a
 * connection past its deadline.  libmicrohttpd then sees the peer gone and
 * closes the connection on its own thread, which frees everything.
 *
 * The entry of a connection lives from libmicrohttpd's STARTED to its
 * CLOSED notification, and CLOSED comes before the socket is closed: a
 * socket shut down under the guard's lock is always the connection's own,
 * never a reused descriptor number. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "server/conns.h"
#include "core/util.h"

/* How often the thread looks at deadlines at most: reaping is at most
 * this late. */
#define TICK_MS 250

typedef struct conn_entry {
	struct conn_entry *prev, *next;
	MHD_socket fd;
	al_conn_phase phase;
	int64_t deadline_ms; /* 0: none */
	bool reaped;
} conn_entry;

struct al_conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stop;
	unsigned header_ms, body_ms;
	conn_entry *head;
	al_conns_stats st;
};

/* Lock held. */
static void set_phase_locked(al_conns *g, conn_entry *e, al_conn_phase p)
{
	e->phase = p;
	e->deadline_ms = p == AL_CONN_HEADERS ? al_mono_ms() + g->header_ms
			 : p == AL_CONN_BODY  ? al_mono_ms() + g->body_ms
					      : 0;
}

static void *guard_main(void *arg)
{
	al_conns *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		int64_t now = al_mono_ms();
		for (conn_entry *e = g->head; e != NULL; e = e->next) {
			if (e->reaped || e->deadline_ms == 0 ||
			    e->deadline_ms > now)
				continue;
			/* Both directions: the connection's thread wakes
			 * from its poll and finds the peer gone. */
			shutdown(e->fd, SHUT_RDWR);
			e->reaped = true;
			if (e->phase == AL_CONN_BODY)
				g->st.body_timeouts++;
			else
				g->st.header_timeouts++;
		}
		struct timespec ts;
		al_deadline(CLOCK_MONOTONIC, &ts, TICK_MS);
		pthread_cond_timedwait(&g->wake, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int al_conns_new(unsigned header_ms, unsigned body_ms, al_conns **out)
{
	al_conns *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (g == NULL)
		return -ENOMEM;
	g->header_ms = header_ms;
	g->body_ms = body_ms;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = pthread_create(&g->thread, NULL, guard_main, g)) != 0) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return -rc;
	}
	*out = g;
	return 0;
}

void al_conns_free(al_conns *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	/* Every daemon is stopped: each entry got its CLOSED. */
	while (g->head != NULL) {
		conn_entry *e = g->head;
		g->head = e->next;
		free(e);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void al_conns_notify(void *cls, struct MHD_Connection *conn,
		     void **socket_context,
		     enum MHD_ConnectionNotificationCode code)
{
	al_conns *g = cls;
	conn_entry *e = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
			conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci == NULL)
			return;
		if ((e = calloc(1, sizeof(*e))) == NULL) {
			/* Unguarded is not an option: refuse it. */
			shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		e->fd = ci->connect_fd;
		pthread_mutex_lock(&g->lock);
		set_phase_locked(g, e, AL_CONN_HEADERS);
		e->next = g->head;
		if (g->head != NULL)
			g->head->prev = e;
		g->head = e;
		g->st.open++;
		pthread_mutex_unlock(&g->lock);
		*socket_context = e;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || e == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		g->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	g->st.open--;
	pthread_mutex_unlock(&g->lock);
	free(e);
	*socket_context = NULL;
}

void al_conns_phase(al_conns *g, struct MHD_Connection *conn,
		    al_conn_phase phase)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	conn_entry *e = ci != NULL ? ci->socket_context : NULL;
	if (g == NULL || e == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	set_phase_locked(g, e, phase);
	pthread_mutex_unlock(&g->lock);
}

void al_conns_stats_get(al_conns *g, al_conns_stats *out)
{
	pthread_mutex_lock(&g->lock);
	*out = g->st;
	pthread_mutex_unlock(&g->lock);
}
