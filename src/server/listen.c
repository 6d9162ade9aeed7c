/* The service's listening sockets, opened here (not by libmicrohttpd) so a
 * start-up failure names its cause and port 0 can be reported. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/listen.h"

#define BACKLOG 512

int al_listen_tcp(const char *addr, int *fd_out, char *shown, size_t len,
		  al_error **err)
{
	char host[128];
	const char *port, *colon;
	struct addrinfo hints = {0}, *ai = NULL;
	int fd = -1, rc, one = 1;

	*fd_out = -1;
	if (addr[0] == '[') {
		const char *close_br = strchr(addr, ']');
		if (close_br == NULL || close_br[1] != ':')
			goto bad;
		colon = close_br + 1;
		if ((size_t)(close_br - addr - 1) >= sizeof(host))
			goto bad;
		memcpy(host, addr + 1, (size_t)(close_br - addr - 1));
		host[close_br - addr - 1] = '\0';
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
			goto bad;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
	}
	port = colon + 1;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	hints.ai_socktype = SOCK_STREAM;
	if (port[0] == '\0' || getaddrinfo(host, port, &hints, &ai) != 0)
		goto bad;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = al_error_set(err, AL_ERR_IO, errno, "listen",
				  "cannot create a socket");
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, BACKLOG) < 0) {
		rc = al_error_set(err, AL_ERR_IO, errno, "listen",
				  "cannot listen on %s: %s", addr,
				  strerror(errno));
		goto out;
	}
	union {
		struct sockaddr sa;
		struct sockaddr_in s4;
		struct sockaddr_in6 s6;
	} sa;
	memset(&sa, 0, sizeof(sa));
	socklen_t sl = sizeof(sa);
	char num[INET6_ADDRSTRLEN] = "?";
	unsigned p = 0;
	bool v6 = false;
	if (getsockname(fd, &sa.sa, &sl) == 0) {
		v6 = sa.sa.sa_family == AF_INET6;
		if (v6) {
			inet_ntop(AF_INET6, &sa.s6.sin6_addr, num, sizeof(num));
			p = ntohs(sa.s6.sin6_port);
		} else {
			inet_ntop(AF_INET, &sa.s4.sin_addr, num, sizeof(num));
			p = ntohs(sa.s4.sin_port);
		}
	}
	snprintf(shown, len, v6 ? "http://[%s]:%u" : "http://%s:%u", num, p);
	*fd_out = fd;
	fd = -1;
	rc = 0;
	goto out;
bad:
	rc = al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, "listen",
			  "listen address: expected ADDR:PORT or [V6ADDR]:PORT "
			  "with a numeric address");
out:
	if (ai != NULL)
		freeaddrinfo(ai);
	if (fd >= 0)
		close(fd);
	return rc;
}

int al_listen_unix(const char *path, int *fd_out, al_error **err)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct stat st;
	int fd = -1, rc;

	*fd_out = -1;
	if (strlen(path) >= sizeof(sun.sun_path))
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, ENAMETOOLONG,
				    "unix_socket", "unix socket path too long");
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return al_error_set(err, AL_ERR_IO, errno, "unix_socket",
				    "cannot create a socket");
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			rc = al_error_set(err, AL_ERR_IO, EEXIST,
					  "unix_socket",
					  "%s exists and is not a socket",
					  path);
			goto out;
		}
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			rc = al_error_set(err, AL_ERR_IO, EADDRINUSE,
					  "unix_socket",
					  "%s: another service answers there",
					  path);
			goto out;
		}
		/* Stale: nobody answers.  A fresh socket for the bind. */
		close(fd);
		unlink(path);
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			return al_error_set(err, AL_ERR_IO, errno,
					    "unix_socket",
					    "cannot create a socket");
	}
	/* Restricted before listen(): nobody can connect in between. */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		rc = al_error_set(err, AL_ERR_IO, errno, "unix_socket",
				  "cannot bind %s: %s", path, strerror(errno));
		goto out;
	}
	if (chmod(path, 0600) < 0 || listen(fd, BACKLOG) < 0) {
		rc = al_error_set(err, AL_ERR_IO, errno, "unix_socket",
				  "cannot listen on %s: %s", path,
				  strerror(errno));
		unlink(path);
		goto out;
	}
	*fd_out = fd;
	return 0;
out:
	close(fd);
	return rc;
}
