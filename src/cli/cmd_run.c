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

/* Long options without a short letter: values above any char, so they
 * never collide with the short options. */
enum run_opt {
	OPT_PIDS = 256,
	OPT_CPU,
	OPT_OUTPUT_LIMIT,
	OPT_NETWORK,
	OPT_STDIN_FILE,
	OPT_ARG,
	OPT_ENV,
	OPT_REQUEST,
	OPT_JSON,
	OPT_TENANT,
	OPT_FILE_LIMIT,
	OPT_FILE,
	OPT_OUTPUT,
	OPT_OUTPUTS_DIR,
	OPT_WORKSPACE,
	OPT_RAW,
	OPT_TOOLBELT,
	OPT_OPERATION,
	OPT_EXEC,
};

static const struct option run_long_opts[] = {
	{"lang", required_argument, NULL, 'l'},
	{"eval", required_argument, NULL, 'e'},
	{"provider", required_argument, NULL, 'p'},
	{"timeout", required_argument, NULL, 't'},
	{"memory", required_argument, NULL, 'm'},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
	{"network", required_argument, NULL, OPT_NETWORK},
	{"stdin-file", required_argument, NULL, OPT_STDIN_FILE},
	{"arg", required_argument, NULL, OPT_ARG},
	{"env", required_argument, NULL, OPT_ENV},
	{"request", required_argument, NULL, OPT_REQUEST},
	{"json", no_argument, NULL, OPT_JSON},
	{"tenant", required_argument, NULL, OPT_TENANT},
	{"file-limit", required_argument, NULL, OPT_FILE_LIMIT},
	{"file", required_argument, NULL, OPT_FILE},
	{"output", required_argument, NULL, OPT_OUTPUT},
	{"outputs-dir", required_argument, NULL, OPT_OUTPUTS_DIR},
	{"workspace", required_argument, NULL, OPT_WORKSPACE},
	{"raw", no_argument, NULL, OPT_RAW},
	{"toolbelt", no_argument, NULL, OPT_TOOLBELT},
	{"operation", required_argument, NULL, OPT_OPERATION},
	{"exec", required_argument, NULL, OPT_EXEC},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

enum limit_unit { LIMIT_DURATION, LIMIT_SIZE, LIMIT_COUNT };

/* The options that set one positive limit each. */
static const struct {
	int opt;
	enum limit_unit unit;
	const char *key;
	const char *message;
} limit_opts[] = {
	{'t', LIMIT_DURATION, "wall_ms",
	 "--timeout: expected a duration like 500ms, 5s or 2m"},
	{'m', LIMIT_SIZE, "memory_bytes", "--memory: expected a size like 256M"},
	{OPT_PIDS, LIMIT_COUNT, "pids", "--pids: expected a positive number"},
	{OPT_CPU, LIMIT_DURATION, "cpu_ms", "--cpu: expected a duration like 1s"},
	{OPT_OUTPUT_LIMIT, LIMIT_SIZE, "output_bytes",
	 "--output-limit: expected a size like 64K"},
	{OPT_FILE_LIMIT, LIMIT_SIZE, "file_bytes",
	 "--file-limit: expected a size like 16M"},
};

/* What the options asked for.  The json_t members are owned. */
typedef struct run_opts {
	const char *lang, *code, *provider, *network, *stdin_file;
	const char *request_file, *tenant, *outputs_dir, *workspace;
	const char *exec_prog, *file;
	bool as_json, raw, toolbelt;
	json_t *limits, *args, *env, *files, *outputs, *operations;
} run_opts;

/* A stage's verdict: go on, or stop and exit with the status it returns
 * instead. */
enum { RUN_GO = -1 };

static int run_opts_init(run_opts *o)
{
	*o = (run_opts){.tenant = "default"};
	o->limits = json_object();
	o->args = json_array();
	o->env = json_object();
	o->files = json_array();
	o->outputs = json_array();
	o->operations = json_array();
	return o->limits && o->args && o->env && o->files && o->outputs &&
			       o->operations
		       ? 0
		       : -ENOMEM;
}

static void run_opts_clear(run_opts *o)
{
	json_decref(o->limits);
	json_decref(o->args);
	json_decref(o->env);
	json_decref(o->files);
	json_decref(o->outputs);
	json_decref(o->operations);
}

/* A limit option: RUN_GO when c is not one or its value is good. */
static int parse_limit(run_opts *o, int c, const char *arg, bool *matched)
{
	for (size_t i = 0; i < sizeof(limit_opts) / sizeof(limit_opts[0]); i++) {
		if (limit_opts[i].opt != c)
			continue;
		*matched = true;
		uint64_t v = 0;
		int r = limit_opts[i].unit == LIMIT_DURATION
				? cli_parse_duration_ms(arg, &v)
			: limit_opts[i].unit == LIMIT_SIZE ? cli_parse_size(arg, &v)
							   : cli_parse_count(arg, &v);
		if (r < 0 || v == 0) {
			cli_error("%s", limit_opts[i].message);
			return CLI_EXIT_USAGE;
		}
		set_limit(o->limits, limit_opts[i].key, v);
		return RUN_GO;
	}
	*matched = false;
	return RUN_GO;
}

/* --env NAME=VALUE */
static int parse_env(run_opts *o, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (eq == NULL || eq == arg) {
		cli_error("--env: expected NAME=VALUE");
		return CLI_EXIT_USAGE;
	}
	char *name = strndup(arg, (size_t)(eq - arg));
	if (name == NULL)
		return CLI_EXIT_USAGE;
	json_object_set_new(o->env, name, json_string(eq + 1));
	free(name);
	return RUN_GO;
}

/* One option other than a limit. */
static int parse_one(run_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'l':
		o->lang = arg;
		break;
	case 'e':
		o->code = arg;
		break;
	case 'p':
		o->provider = arg;
		break;
	case OPT_NETWORK:
		o->network = arg;
		break;
	case OPT_STDIN_FILE:
		o->stdin_file = arg;
		break;
	case OPT_TOOLBELT:
		o->toolbelt = true;
		break;
	case OPT_OPERATION:
		o->toolbelt = true;
		json_array_append_new(o->operations, json_string(arg));
		break;
	case OPT_ARG:
		json_array_append_new(o->args, json_string(arg));
		break;
	case OPT_ENV:
		return parse_env(o, arg);
	case OPT_REQUEST:
		o->request_file = arg;
		break;
	case OPT_JSON:
		o->as_json = true;
		break;
	case OPT_TENANT:
		o->tenant = arg;
		break;
	case OPT_FILE:
		if (add_input_file(o->files, arg) < 0)
			return CLI_EXIT_REFUSED;
		break;
	case OPT_OUTPUT:
		json_array_append_new(o->outputs, json_string(arg));
		break;
	case OPT_OUTPUTS_DIR:
		o->outputs_dir = arg;
		break;
	case OPT_WORKSPACE:
		o->workspace = arg;
		break;
	case OPT_RAW:
		o->raw = true;
		break;
	case OPT_EXEC:
		o->exec_prog = arg;
		break;
	case 'h':
		fputs(run_usage, stdout);
		return CLI_EXIT_OK;
	default:
		fputs(run_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	return RUN_GO;
}

static int parse_run_options(int argc, char **argv, run_opts *o)
{
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "l:e:p:t:m:h", run_long_opts,
				NULL)) != -1) {
		bool matched = false;
		int rc = parse_limit(o, c, optarg, &matched);
		if (!matched)
			rc = parse_one(o, c, optarg);
		if (rc != RUN_GO)
			return rc;
	}
	o->file = optind < argc ? argv[optind++] : NULL;
	if (optind < argc) {
		cli_error("run: unexpected argument (use --arg for the program's arguments)");
		return CLI_EXIT_USAGE;
	}
	return RUN_GO;
}

/* --request FILE: the whole request as written. */
static int read_request_file(const run_opts *o, char **body, size_t *body_len)
{
	if (o->file != NULL || o->code != NULL) {
		cli_error("run: --request carries the code; give no FILE or -e");
		return CLI_EXIT_USAGE;
	}
	if (json_array_size(o->files) > 0 || json_array_size(o->outputs) > 0 ||
	    o->workspace != NULL) {
		cli_error("run: --request carries files, outputs and the "
			  "grant; give no --file, --output or --workspace");
		return CLI_EXIT_USAGE;
	}
	int r = cli_read_file(o->request_file, body, body_len);
	if (r < 0) {
		cli_error("run: cannot read the request file: %s", strerror(-r));
		return CLI_EXIT_REFUSED;
	}
	return RUN_GO;
}

/* The code and its language: -e, FILE, standard input or --exec.  The
 * language may be guessed from FILE's name.  *code_buf is owned. */
static int resolve_code(run_opts *o, char **code_buf, size_t *code_len)
{
	if (o->exec_prog != NULL &&
	    (o->file != NULL || o->code != NULL || o->lang != NULL)) {
		cli_error("run: --exec runs a program, not code; give no FILE, -e or -l");
		return CLI_EXIT_USAGE;
	}
	if (o->exec_prog != NULL) {
		o->code = "";
		o->lang = "exec";
	}
	if (o->file != NULL && o->code != NULL) {
		cli_error("run: give FILE or -e CODE, not both");
		return CLI_EXIT_USAGE;
	}
	if (o->code == NULL) {
		int r = cli_read_file(o->file != NULL ? o->file : "-", code_buf,
				      code_len);
		if (r < 0) {
			cli_error("run: cannot read the code: %s", strerror(-r));
			return CLI_EXIT_REFUSED;
		}
		o->code = *code_buf;
	} else {
		*code_len = strlen(o->code);
	}
	if (o->lang == NULL)
		o->lang = guess_language(o->file);
	if (o->lang == NULL) {
		cli_error("run: no language: use -l LANG (or a FILE with a known extension)");
		return CLI_EXIT_USAGE;
	}
	/* The contract's code is UTF-8 text without NULs: anything else
	 * cannot even be put in a request. */
	if (!al_utf8_valid((const unsigned char *)o->code, *code_len) ||
	    memchr(o->code, '\0', *code_len) != NULL)
		return refuse_locally(o->as_json, AL_OUTCOME_INVALID_REQUEST,
				      "code", "the code is not UTF-8 text");
	return RUN_GO;
}

/* The request's grant: network, workspace, toolbelt and operations. */
static json_t *build_grant(run_opts *o)
{
	json_t *grant = json_object();
	/* Choosing the trusted local provider by name is the
	 * acknowledgement that the program shares this host's network; any
	 * other provider keeps the deny-all default. */
	if (o->network == NULL && o->provider != NULL &&
	    strcmp(o->provider, "local") == 0)
		o->network = "host";
	if (o->network != NULL)
		json_object_set_new(grant, "network", json_string(o->network));
	/* Files to place or outputs to collect need a workspace. */
	if (o->workspace == NULL && (json_array_size(o->files) > 0 ||
				     json_array_size(o->outputs) > 0))
		o->workspace = "rw";
	if (o->workspace != NULL)
		json_object_set_new(grant, "workspace", json_string(o->workspace));
	if (o->toolbelt)
		json_object_set_new(grant, "toolbelt", json_true());
	if (json_array_size(o->operations) > 0)
		json_object_set(grant, "operations", o->operations);
	return grant;
}

/* --stdin-file: text as it is, other bytes as base64. */
static int add_stdin(json_t *req, const char *stdin_file)
{
	char *buf = NULL;
	size_t len = 0;
	int r = cli_read_file(stdin_file, &buf, &len);
	if (r < 0) {
		cli_error("run: cannot read --stdin-file: %s", strerror(-r));
		return CLI_EXIT_REFUSED;
	}
	int rc = RUN_GO;
	if (al_utf8_valid((unsigned char *)buf, len) &&
	    memchr(buf, '\0', len) == NULL) {
		json_object_set_new(req, "stdin", json_stringn(buf, len));
	} else {
		char *b64 = al_base64_encode(buf, len);
		if (b64 != NULL)
			json_object_set_new(req, "stdin_b64", json_string(b64));
		else
			rc = CLI_EXIT_USAGE;
		free(b64);
	}
	free(buf);
	return rc;
}

/* The request object the options describe. */
static int fill_request(run_opts *o, json_t *req, const char *code,
			size_t code_len)
{
	json_object_set_new(req, "language", json_string(o->lang));
	json_object_set_new(req, "code", json_stringn(code, code_len));
	if (json_array_size(o->args) > 0)
		json_object_set(req, "argv", o->args);
	if (o->exec_prog != NULL && cli_exec_shape(req, o->exec_prog) < 0)
		return CLI_EXIT_USAGE;
	if (json_object_size(o->env) > 0)
		json_object_set(req, "env", o->env);
	if (json_object_size(o->limits) > 0)
		json_object_set(req, "limits", o->limits);
	json_object_set_new(req, "grant", build_grant(o));
	if (json_array_size(o->files) > 0)
		json_object_set(req, "files", o->files);
	if (json_array_size(o->outputs) > 0)
		json_object_set(req, "outputs", o->outputs);
	if (o->stdin_file != NULL)
		return add_stdin(req, o->stdin_file);
	return RUN_GO;
}

/* The request built from the options, encoded. */
static int request_from_options(run_opts *o, char **body, size_t *body_len)
{
	char *code_buf = NULL;
	size_t code_len = 0;
	json_t *req = json_object();
	int rc = req != NULL ? resolve_code(o, &code_buf, &code_len)
			     : CLI_EXIT_USAGE;
	if (rc == RUN_GO)
		rc = fill_request(o, req, o->code, code_len);
	if (rc == RUN_GO) {
		*body = json_dumps(req, JSON_COMPACT | JSON_ALLOW_NUL);
		if (*body != NULL) {
			*body_len = strlen(*body);
		} else {
			cli_error("run: cannot encode the request");
			rc = CLI_EXIT_REFUSED;
		}
	}
	json_decref(req);
	free(code_buf);
	return rc;
}

static int build_request(run_opts *o, char **body, size_t *body_len)
{
	if (o->request_file != NULL)
		return read_request_file(o, body, body_len);
	return request_from_options(o, body, body_len);
}

/* What a run holds until its result is printed. */
typedef struct run_session {
	al_config *cfg;
	al_host *host;
	al_result *res;
} run_session;

static void run_session_clear(run_session *s)
{
	al_result_free(s->res);
	al_host_free(s->host);
	al_config_free(s->cfg);
	if (g_cancel != NULL) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		al_cancel_free(g_cancel);
		g_cancel = NULL;
	}
}

/* Runs the encoded request through a host; SIGINT and SIGTERM cancel
 * it. */
static int run_request(const cli_globals *g, const run_opts *o,
		       const char *body, size_t body_len, run_session *s)
{
	if (cli_load_config(g, &s->cfg) < 0)
		return CLI_EXIT_REFUSED;
	al_host_options hopts = {
		.state_dir = g->state_dir,
		.force_provider = o->provider,
		.force_acknowledges_trusted = o->provider != NULL,
	};
	al_error *err = NULL;
	/* One run per process: a warm pool would only be made and thrown
	 * away (docs/sandbox.md, "Warm pools"); the run's namespace and
	 * cgroups are made while the host admits it, and only its
	 * language's toolchain is probed. */
	al_sandbox_one_run(o->lang);
	if (al_host_new(s->cfg, &hopts, &s->host, &err) < 0) {
		cli_error("cannot start: %s", al_error_get_message(err));
		al_error_free(err);
		return CLI_EXIT_REFUSED;
	}
	g_cancel = al_cancel_new();
	if (g_cancel == NULL)
		return CLI_EXIT_USAGE;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	al_host_context ctx = {.tenant = o->tenant, .principal = "cli"};
	al_run_options ropts = {.cancel = g_cancel};
	if (al_host_run_json(s->host, &ctx, body, body_len, &ropts, &s->res) < 0 ||
	    s->res == NULL) {
		cli_error("out of memory");
		return 1;
	}
	return RUN_GO;
}

static void print_result_json(const al_result *res, bool raw)
{
	char *text = al_result_to_json(res, 1);
	if (text == NULL)
		return;
	/* JSON escapes C0 controls only: to a terminal, C1 controls and DEL
	 * in the program's output are escaped too */
	if (!raw && isatty(STDOUT_FILENO))
		cli_write_visible(STDOUT_FILENO, (const unsigned char *)text,
				  strlen(text), true);
	else
		cli_write_all(STDOUT_FILENO, text, strlen(text));
	cli_write_all(STDOUT_FILENO, "\n", 1);
	free(text);
}

/* The program's output passes through; the exit status passes through
 * exactly; a pipe gets the program's bytes alone, a person at a terminal
 * also the reason for the status. */
static void print_result_streams(const al_result *res, bool raw)
{
	write_output_stream(STDOUT_FILENO, &res->output[AL_STDOUT], raw);
	write_output_stream(STDERR_FILENO, &res->output[AL_STDERR], raw);
	if (res->outcome == AL_OUTCOME_FAILED && res->build != NULL &&
	    res->reason != NULL && strcmp(res->reason, "build_failed") == 0) {
		/* the compiler's messages, then why nothing ran */
		write_output_stream(STDERR_FILENO, &res->build->output[AL_STDOUT],
				    raw);
		write_output_stream(STDERR_FILENO, &res->build->output[AL_STDERR],
				    raw);
		fprintf(stderr, "airlock: failed (build_failed)\n");
	} else if (res->outcome == AL_OUTCOME_FAILED) {
		if (isatty(STDERR_FILENO))
			fprintf(stderr, "airlock: failed (exit status %d)\n",
				res->exit_code);
	} else if (!al_outcome_ran(res->outcome) ||
		   res->outcome == AL_OUTCOME_TIMED_OUT ||
		   res->outcome == AL_OUTCOME_KILLED ||
		   res->outcome == AL_OUTCOME_CANCELLED ||
		   res->outcome == AL_OUTCOME_INTERRUPTED) {
		fprintf(stderr, "airlock: %s%s%s%s\n",
			al_outcome_name(res->outcome), res->reason ? " (" : "",
			res->reason ? res->reason : "", res->reason ? ")" : "");
	}
}

/* Prints the result; collected outputs go where the caller asked (or
 * here).  Returns the exit status. */
static int finish_run(const cli_globals *g, const run_opts *o,
		      const al_result *res)
{
	if (o->as_json)
		print_result_json(res, o->raw);
	else
		print_result_streams(res, o->raw);
	int rc = exit_status_for(res);
	if ((json_array_size(o->outputs) > 0 || o->outputs_dir != NULL) &&
	    res->n_outputs > 0 &&
	    deliver_outputs(g, res, o->outputs_dir ? o->outputs_dir : ".") < 0)
		rc = CLI_EXIT_REFUSED;
	return rc;
}

int cmd_run(const cli_globals *g, int argc, char **argv)
{
	run_opts o;
	run_session s = {0};
	char *body = NULL;
	size_t body_len = 0;
	int rc = run_opts_init(&o) < 0 ? CLI_EXIT_USAGE : RUN_GO;
	if (rc == RUN_GO)
		rc = parse_run_options(argc, argv, &o);
	if (rc == RUN_GO)
		rc = build_request(&o, &body, &body_len);
	if (rc == RUN_GO)
		rc = run_request(g, &o, body, body_len, &s);
	if (rc == RUN_GO)
		rc = finish_run(g, &o, s.res);
	run_session_clear(&s);
	free(body);
	run_opts_clear(&o);
	return rc;
}
