/* Loopback plumbing the HTTP fuzz targets share: the port a
 * libmicrohttpd daemon bound, a connection to it, an answer read to its
 * end.  Any failure to set these up aborts (the target cannot judge
 * anything without them). */
#ifndef AL_FUZZ_NET_H
#define AL_FUZZ_NET_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

/* The port mhd (started on 127.0.0.1 port 0) listens on. */
static inline uint16_t fuzz_mhd_port(struct MHD_Daemon *mhd)
{
	const union MHD_DaemonInfo *info =
		mhd ? MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_BIND_PORT)
		    : NULL;
	if (info == NULL)
		abort();
	return info->port;
}

/* A connection to 127.0.0.1:port whose reads and writes give up after 20
 * seconds, so an answer that never ends shows as EAGAIN.  Tens of
 * thousands of connections in one run can use up the loopback's
 * ephemeral ports while closed ones wait out TIME_WAIT: the client's
 * side is closed with a reset (no TIME_WAIT), and a connect refused for
 * want of a local address is tried again, bounded. */
static inline int fuzz_connect(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 20};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	for (int attempt = 0; attempt < 200; attempt++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
			abort();
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		int e = errno;
		close(fd);
		/* EINTR: libFuzzer's timer signal (SIGALRM) cut the connect
		 * short; the next attempt starts afresh. */
		if (e != EADDRNOTAVAIL && e != EADDRINUSE && e != EAGAIN &&
		    e != EINTR) {
			fprintf(stderr, "fuzz: cannot connect to the daemon: "
					"%s\n",
				strerror(e));
			break;
		}
		struct timespec pause = {0, 10 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	abort();
}

/* Reads fd to its end or to a failed read, then closes it: the bytes
 * read, NUL-terminated, with their count in *len; *err is 0 at the end,
 * else the failed read's errno (the caller judges it). */
static inline char *fuzz_read_all(int fd, size_t *len, int *err)
{
	size_t cap = 8192, got = 0;
	char *buf = malloc(cap);
	*err = 0;
	for (;;) {
		if (buf == NULL)
			abort();
		ssize_t r = read(fd, buf + got, cap - got - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			*err = errno;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (cap - got < 1024)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

#endif
