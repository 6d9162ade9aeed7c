/* airlock run: build a request from options, run it through the host
 * pipeline, print the program's output (or the typed result as JSON). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "bundle/beneath.h"
#include "core/hash.h"
#include "cli/cli.h"
#include "json/base64.h"
#include "child/artifacts.h"
#include "sandbox/sandbox.h"

static const char run_usage[] =
	"usage: airlock run [options] [FILE | -e CODE]\n"
	"Runs code (from FILE, -e, or standard input) and passes its output\n"
	"through; exits with the program's status, 128+N when killed by signal\n"
	"N, 124 on timeout, 125 when refused or when a collected output could\n"
	"not be written.\n"
	"\n"
	"  -l, --lang LANG        sh bash python javascript typescript ruby\n"
	"                         powershell c cpp go rust java (guessed from\n"
	"                         FILE's extension)\n"
	"  -e, --eval CODE        the code itself\n"
	"  -p, --provider ID      disabled, local, sandbox, container, remote\n"
	"                         (default: the configuration's candidates,\n"
	"                         safest first)\n"
	"  -t, --timeout DUR      wall limit: 500ms, 5s, 2m\n"
	"  -m, --memory SIZE      memory limit: 256M\n"
	"      --pids N           process limit\n"
	"      --cpu DUR          CPU time limit\n"
	"      --output-limit SIZE  bytes kept per output stream\n"
	"      --file-limit SIZE  largest file the program may write\n"
	"      --network MODE     none, loopback or host\n"
	"      --stdin-file FILE  the program's standard input\n"
	"      --file LOCAL[:DEST]  an input file, placed at DEST (default: its\n"
	"                         name) in the workspace with its mode (repeatable)\n"
	"      --output PATH      a declared output (a path or a pattern with * and\n"
	"                         ? in a segment, relative to the workspace),\n"
	"                         written under --outputs-dir after the run\n"
	"                         (repeatable)\n"
	"      --outputs-dir DIR  where collected outputs are written (default:\n"
	"                         the current directory); an existing file is\n"
	"                         never replaced, a link never followed\n"
	"      --workspace MODE   none, ro or rw (default: rw with --file or\n"
	"                         --output, else none)\n"
	"      --arg ARG          an argument for the program (repeatable)\n"
	"      --exec PROG        run PROG with the --arg arguments directly,\n"
	"                         no code and no shell (an absolute path in\n"
	"                         the sandbox's system directories, or a\n"
	"                         language's interpreter: python)\n"
	"      --env K=V          an environment variable (repeatable)\n"
	"      --toolbelt         airlock-tool for the program (docs/toolbelt.md)\n"
	"      --operation OP     a host operation it may call (repeatable)\n"
	"      --tenant NAME      tenant to run as (default: default)\n"
	"      --request FILE     a whole JSON request (docs/contract.md)\n"
	"      --json             print the typed result as JSON\n"
	"      --raw              write the program's output to a terminal as\n"
	"                         it is (by default its control characters are\n"
	"                         shown as escapes there; pipes and files always\n"
	"                         get the exact bytes)\n"
	"  -h, --help             this help\n";

static const struct {
	const char *ext;
	const char *lang;
} extensions[] = {
	{".sh", "sh"},	       {".bash", "bash"},	{".py", "python"},
	{".js", "javascript"}, {".mjs", "javascript"}, {".cjs", "javascript"},
	{".ts", "typescript"}, {".rb", "ruby"},	{".ps1", "powershell"},
	{".c", "c"},	       {".cpp", "cpp"},	{".cc", "cpp"},
	{".go", "go"},	       {".rs", "rust"},	{".java", "java"},
};

static const char *guess_language(const char *file)
{
	const char *dot = file != NULL ? strrchr(file, '.') : NULL;
	if (dot == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]); i++)
		if (strcmp(dot, extensions[i].ext) == 0)
			return extensions[i].lang;
	return NULL;
}

static al_cancel *volatile g_cancel;

static void on_signal(int sig)
{
	(void)sig;
	/* The caller gave up: the run ends as `cancelled`. */
	al_cancel_fire(g_cancel, AL_CANCEL_CANCELLED);
}

static int exit_status_for(const al_result *res)
{
	switch (res->outcome) {
	case AL_OUTCOME_COMPLETED:
		return res->exit_code;
	case AL_OUTCOME_FAILED:
		/* a failure the program declared, then exited 0; a failed
		 * build has no exit status of a program */
		return res->has_exit_code && res->exit_code != 0 ? res->exit_code
								  : 1;
	case AL_OUTCOME_KILLED:
	case AL_OUTCOME_INTERRUPTED:
		return 128 + (res->has_signal ? res->signal : 9);
	case AL_OUTCOME_TIMED_OUT:
		return CLI_EXIT_TIMEOUT;
	case AL_OUTCOME_CANCELLED:
		return 128 + SIGINT;
	default:
		return CLI_EXIT_REFUSED;
	}
}

/* A refusal decided before any request exists: printed in the same typed
 * shape as the host's. */
static int refuse_locally(bool as_json, al_outcome outcome, const char *reason,
			  const char *message)
{
	if (as_json) {
		al_result *res = al_result_new();
		if (res != NULL && al_result_set_outcome(res, outcome, reason) == 0) {
			char *text = al_result_to_json(res, 1);
			if (text != NULL)
				puts(text);
			free(text);
		}
		al_result_free(res);
	}
	fprintf(stderr, "airlock: %s (%s): %s\n", al_outcome_name(outcome), reason,
		message);
	return CLI_EXIT_REFUSED;
}

static int set_limit(json_t *limits, const char *name, uint64_t v)
{
	return json_object_set_new(limits, name, json_integer((json_int_t)v));
}

/* The program's output to fd: exact bytes, except to a terminal (unless
 * --raw), where a control sequence would act on the operator's
 * terminal. */
static void write_output_stream(int fd, const al_bytes *b, bool raw)
{
	if (!raw && isatty(fd))
		cli_write_visible(fd, b->data, b->len, false);
	else
		cli_write_all(fd, b->data, b->len);
}

/* --file LOCAL[:DEST]: the bytes (text or base64), the local file's
 * permission bits, DEST or the file's own name.  The last ':' splits. */
static int add_input_file(json_t *files, const char *arg)
{
	char *local = strdup(arg);
	char *data = NULL;
	size_t len = 0;
	int rc = -1;
	if (local == NULL)
		return -1;
	const char *dest = NULL;
	char *colon = strrchr(local, ':');
	if (colon != NULL && colon[1] != '\0') {
		*colon = '\0';
		dest = colon + 1;
	}
	if (dest == NULL) {
		const char *slash = strrchr(local, '/');
		dest = slash != NULL ? slash + 1 : local;
	}
	struct stat st;
	int r = 0;
	if (stat(local, &st) < 0)
		r = errno ? -errno : -EIO;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else
		r = cli_read_file(local, &data, &len);
	if (r < 0 || data == NULL) {
		if (r >= 0)
			r = -EIO;
		cli_error("run: --file: cannot read a regular file there: %s",
			  strerror(-r));
		goto out;
	}
	json_t *f = json_object();
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 0777));
	json_object_set_new(f, "path", json_string(dest));
	json_object_set_new(f, "mode", json_string(mode));
	if (al_utf8_valid((unsigned char *)data, len) &&
	    memchr(data, '\0', len) == NULL) {
		json_object_set_new(f, "content", json_stringn(data, len));
	} else {
		char *b64 = al_base64_encode(data, len);
		if (b64 == NULL) {
			json_decref(f);
			goto out;
		}
		json_object_set_new(f, "content_b64", json_string(b64));
		free(b64);
	}
	json_array_append_new(files, f);
	rc = 0;
out:
	free(data);
	free(local);
	return rc;
}

/* Copies one artifact to dir_fd/path: parents created beneath dir_fd,
 * no link followed on the way or at the end, an existing file never
 * replaced; the bytes must hash to what the result says. */
static int write_output(const cli_globals *g, const al_result *res,
			const al_output_file *o, int dir_fd)
{
	int afd = -1, parent = -1, ofd = -1, rc = -1;
	const char *base = NULL;
	const char *what = "cannot read the artifact";
	al_digest d = {0};
	afd = al_artifact_open(g->state_dir, res->run_id, o->artifact);
	if (afd < 0)
		goto out;
	what = "cannot create its directory there";
	if (al_open_parent_beneath(dir_fd, o->path, true, (uid_t)-1,
				   (gid_t)-1, &parent, &base) < 0 ||
	    base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		goto out;
	ofd = openat(parent, base,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (ofd < 0) {
		what = errno == EEXIST ? "a file of that name exists already"
				       : "cannot create the file";
		goto out;
	}
	what = "cannot copy it";
	if (al_digest_init(&d) < 0)
		goto out;
	unsigned char buf[65536];
	for (;;) {
		ssize_t n = read(afd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		if (al_digest_update(&d, buf, (size_t)n) < 0)
			goto out;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(ofd, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				unlinkat(parent, base, 0);
				goto out;
			}
			off += w;
		}
	}
	char hex[65];
	if (al_digest_final(&d, hex) < 0 || strcmp(hex, o->sha256) != 0) {
		what = "the artifact does not match its SHA-256";
		unlinkat(parent, base, 0);
		goto out;
	}
	if (close(ofd) < 0) {
		ofd = -1;
		unlinkat(parent, base, 0);
		goto out;
	}
	ofd = -1;
	rc = 0;
out:
	if (rc < 0)
		cli_error("output %s: %s", o->path, what);
	al_digest_clear(&d);
	if (ofd >= 0)
		close(ofd);
	if (parent >= 0)
		close(parent);
	if (afd >= 0)
		close(afd);
	return rc;
}

/* Writes every collected output under dir; says which were refused. */
static int deliver_outputs(const cli_globals *g, const al_result *res,
			   const char *dir)
{
	int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		cli_error("--outputs-dir: cannot open the directory: %s",
			  strerror(errno));
		return -1;
	}
	int rc = 0;
	for (size_t i = 0; i < res->n_outputs; i++) {
		const al_output_file *o = &res->outputs[i];
		if (o->refused_reason != NULL || o->artifact == NULL) {
			cli_error("output %s: not collected (%s)", o->path,
				  o->refused_reason ? o->refused_reason
						    : "no artifact");
			continue;
		}
		if (write_output(g, res, o, dir_fd) < 0)
			rc = -1;
	}
	close(dir_fd);
	return rc;
}

int cmd_run(const cli_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"lang", required_argument, NULL, 'l'},
		{"eval", required_argument, NULL, 'e'},
		{"provider", required_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, 't'},
		{"memory", required_argument, NULL, 'm'},
		{"pids", required_argument, NULL, 1},
		{"cpu", required_argument, NULL, 2},
		{"output-limit", required_argument, NULL, 3},
		{"network", required_argument, NULL, 4},
		{"stdin-file", required_argument, NULL, 5},
		{"arg", required_argument, NULL, 6},
		{"env", required_argument, NULL, 7},
		{"request", required_argument, NULL, 8},
		{"json", no_argument, NULL, 9},
		{"tenant", required_argument, NULL, 10},
		{"file-limit", required_argument, NULL, 11},
		{"file", required_argument, NULL, 12},
		{"output", required_argument, NULL, 13},
		{"outputs-dir", required_argument, NULL, 14},
		{"workspace", required_argument, NULL, 15},
		{"raw", no_argument, NULL, 16},
		{"toolbelt", no_argument, NULL, 17},
		{"operation", required_argument, NULL, 18},
		{"exec", required_argument, NULL, 19},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *lang = NULL, *code = NULL, *provider = NULL;
	const char *network = NULL, *stdin_file = NULL, *request_file = NULL;
	const char *tenant = "default";
	const char *outputs_dir = NULL, *workspace = NULL, *exec_prog = NULL;
	bool as_json = false, raw = false;
	json_t *req = json_object(), *limits = json_object();
	json_t *args = json_array(), *env = json_object();
	json_t *files = json_array(), *outputs = json_array();
	json_t *operations = json_array();
	bool toolbelt = false;
	char *code_buf = NULL, *stdin_buf = NULL, *body = NULL;
	size_t code_len = 0, stdin_len = 0, body_len = 0;
	al_config *cfg = NULL;
	al_host *host = NULL;
	al_result *res = NULL;
	int rc = CLI_EXIT_USAGE;
	uint64_t v;

	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "l:e:p:t:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			lang = optarg;
			break;
		case 'e':
			code = optarg;
			break;
		case 'p':
			provider = optarg;
			break;
		case 't':
			if (cli_parse_duration_ms(optarg, &v) < 0 || v == 0) {
				cli_error("--timeout: expected a duration like 500ms, 5s or 2m");
				goto out;
			}
			set_limit(limits, "wall_ms", v);
			break;
		case 'm':
			if (cli_parse_size(optarg, &v) < 0 || v == 0) {
				cli_error("--memory: expected a size like 256M");
				goto out;
			}
			set_limit(limits, "memory_bytes", v);
			break;
		case 1:
			if (cli_parse_count(optarg, &v) < 0 || v == 0) {
				cli_error("--pids: expected a positive number");
				goto out;
			}
			set_limit(limits, "pids", v);
			break;
		case 2:
			if (cli_parse_duration_ms(optarg, &v) < 0 || v == 0) {
				cli_error("--cpu: expected a duration like 1s");
				goto out;
			}
			set_limit(limits, "cpu_ms", v);
			break;
		case 3:
			if (cli_parse_size(optarg, &v) < 0 || v == 0) {
				cli_error("--output-limit: expected a size like 64K");
				goto out;
			}
			set_limit(limits, "output_bytes", v);
			break;
		case 11:
			if (cli_parse_size(optarg, &v) < 0 || v == 0) {
				cli_error("--file-limit: expected a size like 16M");
				goto out;
			}
			set_limit(limits, "file_bytes", v);
			break;
		case 4:
			network = optarg;
			break;
		case 5:
			stdin_file = optarg;
			break;
		case 17:
			toolbelt = true;
			break;
		case 18:
			toolbelt = true;
			json_array_append_new(operations, json_string(optarg));
			break;
		case 6:
			json_array_append_new(args, json_string(optarg));
			break;
		case 7: {
			const char *eq = strchr(optarg, '=');
			if (eq == NULL || eq == optarg) {
				cli_error("--env: expected NAME=VALUE");
				goto out;
			}
			char *name = strndup(optarg, (size_t)(eq - optarg));
			if (name == NULL)
				goto out;
			json_object_set_new(env, name, json_string(eq + 1));
			free(name);
			break;
		}
		case 8:
			request_file = optarg;
			break;
		case 9:
			as_json = true;
			break;
		case 10:
			tenant = optarg;
			break;
		case 12:
			if (add_input_file(files, optarg) < 0) {
				rc = CLI_EXIT_REFUSED;
				goto out;
			}
			break;
		case 13:
			json_array_append_new(outputs, json_string(optarg));
			break;
		case 14:
			outputs_dir = optarg;
			break;
		case 15:
			workspace = optarg;
			break;
		case 16:
			raw = true;
			break;
		case 19:
			exec_prog = optarg;
			break;
		case 'h':
			fputs(run_usage, stdout);
			rc = 0;
			goto out;
		default:
			fputs(run_usage, stderr);
			goto out;
		}
	}
	const char *file = optind < argc ? argv[optind++] : NULL;
	if (optind < argc) {
		cli_error("run: unexpected argument (use --arg for the program's arguments)");
		goto out;
	}

	if (request_file != NULL) {
		if (file != NULL || code != NULL) {
			cli_error("run: --request carries the code; give no FILE or -e");
			goto out;
		}
		if (json_array_size(files) > 0 || json_array_size(outputs) > 0 ||
		    workspace != NULL) {
			cli_error("run: --request carries files, outputs and the "
				  "grant; give no --file, --output or --workspace");
			goto out;
		}
		int r = cli_read_file(request_file, &body, &body_len);
		if (r < 0) {
			cli_error("run: cannot read the request file: %s", strerror(-r));
			rc = CLI_EXIT_REFUSED;
			goto out;
		}
	} else {
		if (exec_prog != NULL &&
		    (file != NULL || code != NULL || lang != NULL)) {
			cli_error("run: --exec runs a program, not code; give no FILE, -e or -l");
			goto out;
		}
		if (exec_prog != NULL) {
			code = "";
			lang = "exec";
		}
		if (file != NULL && code != NULL) {
			cli_error("run: give FILE or -e CODE, not both");
			goto out;
		}
		if (code == NULL) {
			int r = cli_read_file(file != NULL ? file : "-", &code_buf,
					      &code_len);
			if (r < 0) {
				cli_error("run: cannot read the code: %s", strerror(-r));
				rc = CLI_EXIT_REFUSED;
				goto out;
			}
			code = code_buf;
		} else {
			code_len = strlen(code);
		}
		if (lang == NULL)
			lang = guess_language(file);
		if (lang == NULL) {
			cli_error("run: no language: use -l LANG (or a FILE with a known extension)");
			goto out;
		}
		/* The contract's code is UTF-8 text without NULs: anything
		 * else cannot even be put in a request. */
		if (!al_utf8_valid((const unsigned char *)code, code_len) ||
		    memchr(code, '\0', code_len) != NULL) {
			rc = refuse_locally(as_json, AL_OUTCOME_INVALID_REQUEST, "code",
					    "the code is not UTF-8 text");
			goto out;
		}
		json_object_set_new(req, "language", json_string(lang));
		json_object_set_new(req, "code", json_stringn(code, code_len));
		if (json_array_size(args) > 0)
			json_object_set(req, "argv", args);
		if (exec_prog != NULL && cli_exec_shape(req, exec_prog) < 0)
			goto out;
		if (json_object_size(env) > 0)
			json_object_set(req, "env", env);
		if (json_object_size(limits) > 0)
			json_object_set(req, "limits", limits);
		json_t *grant = json_object();
		/* Choosing the trusted local provider by name is the
		 * acknowledgement that the program shares this host's
		 * network; any other provider keeps the deny-all default. */
		if (network == NULL && provider != NULL && strcmp(provider, "local") == 0)
			network = "host";
		if (network != NULL)
			json_object_set_new(grant, "network", json_string(network));
		/* Files to place or outputs to collect need a workspace. */
		if (workspace == NULL && (json_array_size(files) > 0 ||
					  json_array_size(outputs) > 0))
			workspace = "rw";
		if (workspace != NULL)
			json_object_set_new(grant, "workspace",
					    json_string(workspace));
		if (toolbelt)
			json_object_set_new(grant, "toolbelt", json_true());
		if (json_array_size(operations) > 0)
			json_object_set(grant, "operations", operations);
		json_object_set_new(req, "grant", grant);
		if (json_array_size(files) > 0)
			json_object_set(req, "files", files);
		if (json_array_size(outputs) > 0)
			json_object_set(req, "outputs", outputs);
		if (stdin_file != NULL) {
			int r = cli_read_file(stdin_file, &stdin_buf, &stdin_len);
			if (r < 0) {
				cli_error("run: cannot read --stdin-file: %s", strerror(-r));
				rc = CLI_EXIT_REFUSED;
				goto out;
			}
			/* Bytes that are not UTF-8 travel as base64. */
			if (al_utf8_valid((unsigned char *)stdin_buf, stdin_len) &&
			    memchr(stdin_buf, '\0', stdin_len) == NULL) {
				json_object_set_new(req, "stdin",
						    json_stringn(stdin_buf, stdin_len));
			} else {
				char *b64 = al_base64_encode(stdin_buf, stdin_len);
				if (b64 == NULL)
					goto out;
				json_object_set_new(req, "stdin_b64", json_string(b64));
				free(b64);
			}
		}
		body = json_dumps(req, JSON_COMPACT | JSON_ALLOW_NUL);
		if (body == NULL) {
			cli_error("run: cannot encode the request");
			rc = CLI_EXIT_REFUSED;
			goto out;
		}
		body_len = strlen(body);
	}

	if (cli_load_config(g, &cfg) < 0) {
		rc = CLI_EXIT_REFUSED;
		goto out;
	}
	al_host_options hopts = {
		.state_dir = g->state_dir,
		.force_provider = provider,
		.force_acknowledges_trusted = provider != NULL,
	};
	al_error *err = NULL;
	/* One run per process: a warm pool would only be made and thrown
	 * away (docs/sandbox.md, "Warm pools"). */
	al_sandbox_pools_off();
	if (al_host_new(cfg, &hopts, &host, &err) < 0) {
		cli_error("cannot start: %s", al_error_get_message(err));
		al_error_free(err);
		rc = CLI_EXIT_REFUSED;
		goto out;
	}

	g_cancel = al_cancel_new();
	if (g_cancel == NULL)
		goto out;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	al_host_context ctx = {.tenant = tenant, .principal = "cli"};
	al_run_options ropts = {.cancel = g_cancel};
	if (al_host_run_json(host, &ctx, body, body_len, &ropts, &res) < 0 ||
	    res == NULL) {
		cli_error("out of memory");
		rc = 1;
		goto out;
	}

	if (as_json) {
		char *text = al_result_to_json(res, 1);
		if (text != NULL) {
			/* JSON escapes C0 controls only: to a terminal, C1
			 * controls and DEL in the program's output are
			 * escaped too */
			if (!raw && isatty(STDOUT_FILENO))
				cli_write_visible(STDOUT_FILENO,
						  (const unsigned char *)text,
						  strlen(text), true);
			else
				cli_write_all(STDOUT_FILENO, text, strlen(text));
			cli_write_all(STDOUT_FILENO, "\n", 1);
			free(text);
		}
	} else {
		write_output_stream(STDOUT_FILENO, &res->output[AL_STDOUT], raw);
		write_output_stream(STDERR_FILENO, &res->output[AL_STDERR], raw);
		/* The exit status passes through exactly; a pipe gets the
		 * program's bytes alone, a person at a terminal also the
		 * reason for the status. */
		if (res->outcome == AL_OUTCOME_FAILED && res->build != NULL &&
		    res->reason != NULL &&
		    strcmp(res->reason, "build_failed") == 0) {
			/* the compiler's messages, then why nothing ran */
			write_output_stream(STDERR_FILENO,
					    &res->build->output[AL_STDOUT], raw);
			write_output_stream(STDERR_FILENO,
					    &res->build->output[AL_STDERR], raw);
			fprintf(stderr, "airlock: failed (build_failed)\n");
		} else if (res->outcome == AL_OUTCOME_FAILED) {
			if (isatty(STDERR_FILENO))
				fprintf(stderr,
					"airlock: failed (exit status %d)\n",
					res->exit_code);
		}
		else if (!al_outcome_ran(res->outcome) ||
		    res->outcome == AL_OUTCOME_TIMED_OUT ||
		    res->outcome == AL_OUTCOME_KILLED ||
		    res->outcome == AL_OUTCOME_CANCELLED ||
		    res->outcome == AL_OUTCOME_INTERRUPTED)
			fprintf(stderr, "airlock: %s%s%s%s\n",
				al_outcome_name(res->outcome),
				res->reason ? " (" : "",
				res->reason ? res->reason : "",
				res->reason ? ")" : "");
	}
	rc = exit_status_for(res);
	/* Collected outputs go where the caller asked (or here). */
	if ((json_array_size(outputs) > 0 || outputs_dir != NULL) &&
	    res->n_outputs > 0 &&
	    deliver_outputs(g, res, outputs_dir ? outputs_dir : ".") < 0)
		rc = CLI_EXIT_REFUSED;
out:
	al_result_free(res);
	al_host_free(host);
	al_config_free(cfg);
	if (g_cancel != NULL) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		al_cancel_free(g_cancel);
		g_cancel = NULL;
	}
	free(code_buf);
	free(stdin_buf);
	free(body);
	json_decref(req);
	json_decref(limits);
	json_decref(args);
	json_decref(env);
	json_decref(files);
	json_decref(outputs);
	json_decref(operations);
	return rc;
}
