/* The exec shape (docs/contract.md): a provider whose facts claim "exec"
 * runs an argv directly — no code, no shell — and refuses a program
 * outside what a run may see (here: an executable the kit planted in a
 * host directory). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "kit/kit.h"
#include "kit/kit_cases.h"

static al_request *exec_req(kit_ctx *k, kit_case *c, const char *program,
			    const char *arg)
{
	al_request *req = kit_req_lang(k, c, "exec", "");
	if (req == NULL)
		return NULL;
	const char *argv[] = {program, arg};
	if (al_strv_dup((char *const *)argv, 2, &req->exec) < 0) {
		al_request_free(req);
		kit_fail(c, "out of memory building a request");
		return NULL;
	}
	req->n_exec = 2;
	return req;
}

static int plant(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

void kit_case_exec_argv(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0}, planted = {0};
	al_request *req = NULL, *bad = NULL;
	char tok[40], want[64], path[PATH_MAX], text[128];
	if (k->facts == NULL || !k->facts->exec) {
		kit_skip(c, "facts: the exec shape is not offered");
		return;
	}
	if (!kit_need_runner(k, c))
		return;
	kit_token(k, tok, sizeof(tok));
	snprintf(want, sizeof(want), "%s $HOME\n", tok);
	kit_host_path(k, "planted-exec", path, sizeof(path));
	snprintf(text, sizeof(text), "#!/bin/sh\necho PLANTED-%s\n", tok);
	if (plant(path, text) < 0) {
		kit_fail(c, "kit: cannot plant its program");
		goto out;
	}
	/* No shell: "$HOME" reaches echo as it is. */
	if ((req = exec_req(k, c, "/bin/echo", "")) == NULL ||
	    (bad = exec_req(k, c, path, "x")) == NULL)
		goto out;
	free(req->exec[1]);
	req->exec[1] = al_strdup_printf("%s $HOME", tok);
	if (req->exec[1] == NULL) {
		kit_fail(c, "out of memory building a request");
		goto out;
	}
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (strcmp(kit_out(r.res, AL_STDOUT), want) != 0) {
		kit_fail(c, "exec [\"/bin/echo\", \"%s $HOME\"] should print "
			    "its argument untouched; saw %s",
			 tok, kit_describe(r.res));
		goto out;
	}
	if (kit_exec(k, c, bad, NULL, &planted) < 0)
		goto out;
	if (kit_out_has(planted.res, AL_STDOUT, "PLANTED-") ||
	    planted.res->outcome != AL_OUTCOME_INVALID_REQUEST)
		kit_fail(c, "a program in a host directory must be refused "
			    "(invalid_request); saw %s",
			 kit_describe(planted.res));
	else
		kit_pass(c);
out:
	unlink(path);
	kit_run_clear(&r);
	kit_run_clear(&planted);
	al_request_free(req);
	al_request_free(bad);
}
