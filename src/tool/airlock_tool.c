/* airlock-tool: the toolbelt command a run uses to talk to its host
 * (docs/toolbelt.md).  Statically linked (libc, jansson) so it runs in any
 * sandbox root; it never echoes an argument or the credential.
 *
 * Exit status: 0 success, 1 the host rejected or failed the call (a safe
 * error code is printed), 2 usage or missing environment. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "tool/proto.h"

#define EXIT_REJECTED 1
#define EXIT_USAGE 2
/* How long the host gets to answer; a host operation has its own,
 * shorter, timeout on the host. */
#define ANSWER_TIMEOUT_MS 60000

static const char usage_text[] =
	"usage: airlock-tool [--request-id ID] COMMAND\n"
	"  context                       the run's context\n"
	"  emit [--type T] JSON          an event to the host\n"
	"  outcome completed|failed [--reason R]\n"
	"  inbox                         unacknowledged inbox events, acked\n"
	"  call OP [JSON]                a host operation\n";

static int usage(const char *why)
{
	/* Never the offending argument: it may hold a secret. */
	fprintf(stderr, "airlock-tool: %s\n%s", why, usage_text);
	return EXIT_USAGE;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > AL_TOOL_MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.' || c == ':'))
			return false;
	}
	return true;
}

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (s != NULL) {
		puts(s);
		free(s);
	}
	fflush(stdout);
}

static int fail_code(const char *code)
{
	json_t *o = json_pack("{s:b, s:s}", "ok", 0, "error", code);
	print_json(o);
	json_decref(o);
	return EXIT_REJECTED;
}

/* ---- the credential ---------------------------------------------------- */

/* The token file first (a daemon that adopted the run replaced it), then
 * the variable.  false: neither is there. */
static bool read_token(char out[AL_TOOL_TOKEN_HEX + 1], bool *from_file)
{
	const char *file = getenv("AIRLOCK_TOOL_TOKEN_FILE");
	*from_file = false;
	if (file != NULL && file[0] != '\0') {
		int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			char buf[AL_TOOL_TOKEN_HEX + 2];
			ssize_t n = read(fd, buf, sizeof(buf));
			close(fd);
			while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
				n--;
			if (n == AL_TOOL_TOKEN_HEX) {
				memcpy(out, buf, AL_TOOL_TOKEN_HEX);
				out[AL_TOOL_TOKEN_HEX] = '\0';
				*from_file = true;
				explicit_bzero(buf, sizeof(buf));
				return true;
			}
			explicit_bzero(buf, sizeof(buf));
		}
	}
	const char *env = getenv("AIRLOCK_TOOL_TOKEN");
	if (env == NULL || strlen(env) != AL_TOOL_TOKEN_HEX)
		return false;
	memcpy(out, env, AL_TOOL_TOKEN_HEX + 1);
	return true;
}

/* ---- the transport ----------------------------------------------------- */

/* Connects to the socket at path.  The directory is opened first and the
 * socket reached through /proc/self/fd, so a long state directory does not
 * run into sun_path's 108 bytes. */
static int connect_socket(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int dfd = -1, s = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	size_t dl = slash == path ? 1 : (size_t)(slash - path);
	memcpy(dir, path, dl);
	dir[dl] = '\0';
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s",
			 dfd, slash + 1);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (s >= 0)
			close(s);
		close(dfd);
		return -e;
	}
	close(dfd);
	return s;
}

/* Sends the request, reads the answer.  *answer: the parsed object. */
static int exchange(const char *sock_path, const char *msg, json_t **answer)
{
	int s = connect_socket(sock_path);
	if (s < 0)
		return s;
	int rc = 0;
	char *buf = malloc(AL_TOOL_MAX_MSG + 1);
	if (buf == NULL) {
		close(s);
		return -ENOMEM;
	}
	if (send(s, msg, strlen(msg), MSG_NOSIGNAL) < 0) {
		rc = -errno;
		goto out;
	}
	struct pollfd p = {s, POLLIN, 0};
	int pr;
	do
		pr = poll(&p, 1, ANSWER_TIMEOUT_MS);
	while (pr < 0 && errno == EINTR);
	if (pr <= 0) {
		rc = pr == 0 ? -ETIMEDOUT : -errno;
		goto out;
	}
	ssize_t n = recv(s, buf, AL_TOOL_MAX_MSG + 1, 0);
	if (n <= 0 || (size_t)n > AL_TOOL_MAX_MSG) {
		rc = n < 0 ? -errno : -EPROTO;
		goto out;
	}
	*answer = json_loadb(buf, (size_t)n, 0, NULL);
	if (!json_is_object(*answer)) {
		json_decref(*answer);
		*answer = NULL;
		rc = -EPROTO;
	}
out:
	free(buf);
	close(s);
	return rc;
}

/* What the run sees of its directories, which only its environment
 * knows (the host's paths differ from a sandbox's). */
static void add_local_context(json_t *ctx)
{
	static const char *const vars[][2] = {
		{"inbox", "AIRLOCK_INBOX"},
		{"inbox_acks", "AIRLOCK_INBOX_ACKS"},
		{"run_temp", "AIRLOCK_RUN_TEMP"},
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i][1]);
		json_object_set_new(ctx, vars[i][0],
				    v != NULL ? json_string(v) : json_null());
	}
}

/* Sends req (token added here) and prints the answer.  A token the host
 * rejected is read once more when it came from the file: a daemon that
 * adopted the run may have replaced it just now. */
static int call_host(json_t *req)
{
	const char *sock = getenv("AIRLOCK_TOOL_SOCKET");
	char token[AL_TOOL_TOKEN_HEX + 1];
	bool from_file;
	if (sock == NULL || sock[0] != '/' || !read_token(token, &from_file)) {
		fprintf(stderr, "airlock-tool: no toolbelt in this run "
				"(AIRLOCK_TOOL_SOCKET and a token are needed)\n");
		return EXIT_USAGE;
	}
	int rc = EXIT_REJECTED;
	for (int attempt = 0; attempt < 2; attempt++) {
		json_t *answer = NULL;
		if (json_object_set_new(req, "token", json_string(token)) < 0)
			break;
		char *msg = json_dumps(req, JSON_COMPACT);
		json_object_del(req, "token");
		if (msg == NULL)
			break;
		int x = exchange(sock, msg, &answer);
		explicit_bzero(msg, strlen(msg));
		free(msg);
		if (x < 0) {
			rc = fail_code(x == -ETIMEDOUT ? "timeout"
						       : "unreachable");
			break;
		}
		const char *err = json_string_value(json_object_get(answer, "error"));
		if (json_is_true(json_object_get(answer, "ok"))) {
			json_t *res = json_object_get(answer, "result");
			const char *op = json_string_value(json_object_get(req, "op"));
			if (json_is_object(res) && op != NULL &&
			    strcmp(op, "context") == 0)
				add_local_context(res);
			print_json(res != NULL ? res : answer);
			rc = 0;
		} else if (err != NULL && strcmp(err, "bad_token") == 0 &&
			   attempt == 0 && from_file) {
			char again[AL_TOOL_TOKEN_HEX + 1];
			bool ff;
			if (read_token(again, &ff) && ff &&
			    strcmp(again, token) != 0) {
				memcpy(token, again, sizeof(token));
				json_decref(answer);
				continue;
			}
			rc = fail_code(err);
		} else {
			/* Only a code the host made; never its message. */
			rc = fail_code(err != NULL && name_ok(err) ? err
								   : "failed");
		}
		json_decref(answer);
		break;
	}
	explicit_bzero(token, sizeof(token));
	return rc;
}

/* ---- inbox ------------------------------------------------------------- */

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int inbox_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 12 && d->d_name[6] == '-' &&
	       strcmp(d->d_name + n - 5, ".json") == 0;
}

/* The delivered events (NNNNNN-<id>.json, delivery order) without a
 * marker, printed one per line, each acknowledged once printed. */
static int inbox(void)
{
	const char *dir = getenv("AIRLOCK_INBOX");
	const char *acks = getenv("AIRLOCK_INBOX_ACKS");
	struct dirent **names = NULL;
	int rc = 0;
	if (dir == NULL || acks == NULL) {
		fprintf(stderr, "airlock-tool: no inbox in this run\n");
		return EXIT_USAGE;
	}
	int afd = open(acks, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ifd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int n = ifd >= 0 && afd >= 0 ? scandir(dir, &names, inbox_filter, by_name)
				     : -1;
	if (n < 0) {
		rc = fail_code("inbox_unavailable");
		goto out;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		const char *name = names[i]->d_name;
		size_t len = strlen(name);
		char id[AL_TOOL_MAX_NAME + 1];
		if (len - 7 - 5 > AL_TOOL_MAX_NAME)
			continue;
		memcpy(id, name + 7, len - 12);
		id[len - 12] = '\0';
		struct stat st;
		if (!name_ok(id) || fstatat(afd, id, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		int fd = openat(ifd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		json_t *ev = fd >= 0 ? json_loadfd(fd, 0, NULL) : NULL;
		if (fd >= 0)
			close(fd);
		if (!json_is_object(ev)) {
			json_decref(ev);
			rc = fail_code("inbox_unreadable");
			break;
		}
		print_json(ev);
		json_decref(ev);
		int m = openat(afd, id, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			       0600);
		if (m < 0)
			rc = fail_code("ack_failed");
		else
			close(m);
	}
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (afd >= 0)
		close(afd);
	if (ifd >= 0)
		close(ifd);
	return rc;
}

/* ---- commands ---------------------------------------------------------- */

static json_t *parse_json_arg(const char *text, size_t max)
{
	if (strlen(text) > max)
		return NULL;
	return json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
}

int main(int argc, char **argv)
{
	const char *request_id = NULL, *type = NULL, *reason = NULL;
	const char *pos[3] = {NULL, NULL, NULL};
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--request-id") == 0 || strcmp(a, "--type") == 0 ||
		    strcmp(a, "--reason") == 0) {
			if (i + 1 >= argc)
				return usage("an option lacks its value");
			const char *v = argv[++i];
			if (!name_ok(v))
				return usage("an option's value must be "
					     "[A-Za-z0-9_.:-]{1,64}");
			if (a[2] == 'r' && a[3] == 'e' && a[4] == 'q')
				request_id = v;
			else if (a[2] == 't')
				type = v;
			else
				reason = v;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage_text, stdout);
			return 0;
		} else if (a[0] == '-' && a[1] == '-' && a[2] != '\0') {
			return usage("unknown option");
		} else if (npos < 3) {
			pos[npos++] = a;
		} else {
			return usage("too many arguments");
		}
	}
	if (npos == 0)
		return usage("a command is needed");
	const char *cmd = pos[0];
	json_t *req = json_object();
	int rc;
	if (req == NULL)
		return EXIT_REJECTED;
	if (request_id != NULL)
		json_object_set_new(req, "request_id", json_string(request_id));

	if (strcmp(cmd, "context") == 0) {
		if (npos != 1 || type || reason)
			goto bad;
		json_object_set_new(req, "op", json_string("context"));
		rc = call_host(req);
	} else if (strcmp(cmd, "emit") == 0) {
		if (npos != 2 || reason)
			goto bad;
		json_t *data = parse_json_arg(pos[1], AL_TOOL_MAX_EVENT_BYTES);
		if (data == NULL) {
			json_decref(req);
			return strlen(pos[1]) > AL_TOOL_MAX_EVENT_BYTES
				       ? fail_code("too_large")
				       : usage("the event must be JSON");
		}
		json_object_set_new(req, "op", json_string("emit"));
		json_object_set_new(req, "type", json_string(type ? type : "event"));
		json_object_set_new(req, "data", data);
		rc = call_host(req);
	} else if (strcmp(cmd, "outcome") == 0) {
		if (npos != 2 || type ||
		    (strcmp(pos[1], "completed") != 0 &&
		     strcmp(pos[1], "failed") != 0))
			goto bad;
		json_object_set_new(req, "op", json_string("outcome"));
		json_object_set_new(req, "outcome", json_string(pos[1]));
		if (reason != NULL)
			json_object_set_new(req, "reason", json_string(reason));
		rc = call_host(req);
	} else if (strcmp(cmd, "inbox") == 0) {
		if (npos != 1 || type || reason)
			goto bad;
		rc = inbox();
	} else if (strcmp(cmd, "call") == 0) {
		if (npos < 2 || type || reason)
			goto bad;
		if (!name_ok(pos[1])) {
			json_decref(req);
			return usage("an operation name must be "
				     "[A-Za-z0-9_.:-]{1,64}");
		}
		json_t *input = npos == 3 ? parse_json_arg(pos[2],
							    AL_TOOL_MAX_CALL_BYTES)
					  : json_object();
		if (input == NULL) {
			json_decref(req);
			return npos == 3 && strlen(pos[2]) > AL_TOOL_MAX_CALL_BYTES
				       ? fail_code("too_large")
				       : usage("the input must be JSON");
		}
		json_object_set_new(req, "op", json_string("call"));
		json_object_set_new(req, "operation", json_string(pos[1]));
		json_object_set_new(req, "input", input);
		rc = call_host(req);
	} else {
		json_decref(req);
		return usage("unknown command");
	}
	json_decref(req);
	return rc;
bad:
	json_decref(req);
	return usage("wrong arguments for this command");
}
