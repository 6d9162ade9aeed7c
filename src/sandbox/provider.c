/* The `sandbox` provider's operations: probe (observed facts), ensure
 * (one handle: config, compiled filter, cgroup discovery, facts), execute
 * (refusals first, then build and run steps in fresh sandboxes), interrupt
 * and release.  See docs/sandbox.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/provider.h>

#include "bundle/bundle.h"
#include "core/run_registry.h"
#include "core/util.h"
#include "lang/languages.h"
#include "child/artifacts.h"
#include "child/env.h"
#include "child/exec_shape.h"
#include "child/outputs.h"
#include "child/rundir.h"
#include "child/run_report.h"
#include "core/build_contract.h"
#include "core/probe_scope.h"
#include "sandbox/build.h"
#include "cgroup/cgroup.h"
#include "sandbox/context.h"
#include "sandbox/launch.h"
#include "sandbox/mounts.h"
#include "sandbox/netns_ahead.h"
#include "sandbox/cgroups_ahead.h"
#include "sandbox/pool.h"
#include "sandbox/probe.h"
#include "sandbox/run.h"
#include "sandbox/runbase.h"
#include "sandbox/sandbox.h"
#include "sandbox/userns.h"
#include "tool/proto.h"
#include "json/build_json.h"
#include "supervisor/outlog.h"

struct al_provider_handle {
	al_sb_context ctx;
	al_facts *facts;
	al_run_registry runs;
	atomic_uint seq;
	/* A run found a mechanism missing: the handle reports unhealthy
	 * (the host retires it and probes again) and the cache is gone. */
	atomic_bool broken;
	al_sb_pool *pool; /* NULL: no warm pool configured */
	/* A network namespace made ahead for the next cold run (root; not
	 * where pools are off, unless the handle serves one run: then for
	 * that run, from the ensure) */
	al_sb_netns_ahead netns;
	/* A cold run's cgroups made ahead, and removed behind (where the
	 * namespace is, root or not) */
	al_sb_cg_ahead cgroups;
	bool one_run; /* al_sandbox_one_run: nothing made after its run */
};

static atomic_bool pools_off;

void al_sandbox_pools_off(void)
{
	atomic_store(&pools_off, true);
}

static atomic_bool one_run;
/* The one run's language ("": its request names none, or none known):
 * written before one_run is set, read after it is seen set. */
static char one_run_language[16];

void al_sandbox_one_run(const char *language)
{
	one_run_language[0] = '\0';
	if (language != NULL && al_language_known(language) &&
	    strlen(language) < sizeof(one_run_language))
		memcpy(one_run_language, language, strlen(language) + 1);
	atomic_store(&one_run, true);
	atomic_store(&pools_off, true);
}

/* The language a probe may observe alone: a handle that serves one run
 * of a language needs only that language's toolchain in its facts, and
 * a selection probe that judges one request reads no other (the host's
 * scope, core/probe_scope.h).  NULL: every language. */
static const char *handle_language(void)
{
	return atomic_load(&one_run) && one_run_language[0] != '\0'
		       ? one_run_language
		       : NULL;
}

static const char *probe_language(void)
{
	if (handle_language() != NULL)
		return handle_language();
	const char *scope = al_probe_scope_language();
	return scope != NULL && al_language_known(scope) ? scope : NULL;
}

/* Facts of one language (probe_language) or of all; when that language
 * has no toolchain, the whole probe says why, as for any other probe. */
static int probe_for_handle(al_sb_context *ctx, const char *only,
			    al_facts **out, al_error **err)
{
	int rc = al_sb_probe_facts_of(ctx, only, out, err);
	if (rc == 0 && only != NULL && (*out)->n_languages == 0) {
		al_facts_free(*out);
		*out = NULL;
		rc = al_sb_probe_facts(ctx, out, err);
	}
	return rc;
}

static atomic_bool cgroups_ahead_off;

void al_sandbox_cgroups_ahead_off(void)
{
	atomic_store(&cgroups_ahead_off, true);
}

/* The host probes right before every ensure (the provider contract), and
 * the ensure needs the same facts and context for its handle: the last
 * probe's are kept for an ensure of the same thread and configuration
 * that follows within PROBE_REUSE_MS, taken once.  Any other ensure
 * observes again. */
#define PROBE_REUSE_MS 1000

static pthread_mutex_t last_probe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pthread_t thread;
	char *config; /* "" for none */
	al_facts *facts;
	al_sb_context ctx; /* the probe's, while facts != NULL */
	uint64_t at_ms;
} last_probe;

static uint64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void forget_last_probe_locked(void)
{
	free(last_probe.config);
	if (last_probe.facts != NULL)
		al_sb_context_clear(&last_probe.ctx);
	al_facts_free(last_probe.facts);
	last_probe.config = NULL;
	last_probe.facts = NULL;
}

/* Keeps a copy of f, and ctx itself: the caller's ctx is taken (or
 * cleared) either way. */
static void keep_last_probe(const char *config_json, al_sb_context *ctx,
			    const al_facts *f)
{
	char *config = strdup(config_json ? config_json : "");
	al_facts *copy = al_facts_dup(f);
	pthread_mutex_lock(&last_probe_lock);
	forget_last_probe_locked();
	if (config != NULL && copy != NULL) {
		last_probe.thread = pthread_self();
		last_probe.config = config;
		last_probe.facts = copy;
		last_probe.ctx = *ctx;
		last_probe.at_ms = monotonic_ms();
		config = NULL;
		copy = NULL;
		ctx = NULL;
	}
	pthread_mutex_unlock(&last_probe_lock);
	free(config);
	al_facts_free(copy);
	if (ctx != NULL)
		al_sb_context_clear(ctx);
}

/* The facts of this thread's probe just made with config_json, its
 * context moved into *ctx; or NULL (*ctx untouched). */
static al_facts *take_last_probe(const char *config_json, al_sb_context *ctx)
{
	al_facts *f = NULL;
	pthread_mutex_lock(&last_probe_lock);
	if (last_probe.facts != NULL &&
	    pthread_equal(last_probe.thread, pthread_self()) &&
	    strcmp(last_probe.config, config_json ? config_json : "") == 0 &&
	    monotonic_ms() - last_probe.at_ms <= PROBE_REUSE_MS) {
		f = last_probe.facts;
		*ctx = last_probe.ctx;
		last_probe.facts = NULL;
	}
	forget_last_probe_locked();
	pthread_mutex_unlock(&last_probe_lock);
	return f;
}

static int sb_probe(const char *config_json, al_facts **out, al_error **err)
{
	al_sb_context ctx;
	int rc = al_sb_context_init(&ctx, config_json, 0, err);
	if (rc < 0)
		return rc;
	/* A scoped selection probe is no handle's: nothing of it is kept,
	 * and an older probe kept before it is no longer the last. */
	bool scoped = !atomic_load(&one_run) &&
		      al_probe_scope_language() != NULL;
	rc = probe_for_handle(&ctx, probe_language(), out, err);
	if (rc == 0 && !scoped) {
		keep_last_probe(config_json, &ctx, *out);
		return rc;
	}
	al_sb_context_clear(&ctx);
	if (scoped) {
		pthread_mutex_lock(&last_probe_lock);
		forget_last_probe_locked();
		pthread_mutex_unlock(&last_probe_lock);
	}
	return rc;
}

/* Whether a run gets any cgroup here (none delegated: nothing to make
 * ahead). */
/* After a step, from the cgroup helper (al_sb_cg_ahead_after_step). */
static void refill_netns(void *ctx)
{
	al_sb_netns_ahead_refill(ctx);
}

static bool cgroups_used(const al_sb_cgroups *cg)
{
	bool any = cg->v2_base != NULL;
	for (int i = 0; i < AL_CG__N; i++)
		any = any || cg->ver[i] != AL_CG_NONE;
	return any;
}

static int sb_ensure(const char *config_json, al_provider_handle **out,
		     al_error **err)
{
	al_provider_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	int rc;
	h->facts = take_last_probe(config_json, &h->ctx);
	if (h->facts != NULL) {
		rc = al_sb_context_need_filter(&h->ctx, err);
	} else {
		rc = al_sb_context_init(&h->ctx, config_json, AL_SB_CTX_RUNS,
					err);
		if (rc < 0) {
			free(h);
			return rc;
		}
		rc = probe_for_handle(&h->ctx, handle_language(), &h->facts,
				      err);
	}
	if (rc < 0) {
		al_facts_free(h->facts);
		al_sb_context_clear(&h->ctx);
		free(h);
		return rc;
	}
	al_run_registry_init(&h->runs);
	if (h->facts->available)
		al_sb_launch_prepare(h->ctx.privileged);
	h->one_run = atomic_load(&one_run);
	bool ahead = h->facts->available &&
		     (h->one_run || !atomic_load(&pools_off));
	al_sb_netns_ahead_init(&h->netns, ahead && h->ctx.privileged);
	al_sb_cg_ahead_init(&h->cgroups, &h->ctx.cg,
			    ahead && !atomic_load(&cgroups_ahead_off) &&
				    cgroups_used(&h->ctx.cg));
	if (h->one_run) {
		/* the one run's, made while the host admits it */
		al_sb_cg_ahead_once(&h->cgroups);
		al_sb_netns_ahead_refill(&h->netns);
		al_sb_cg_ahead_refill(&h->cgroups);
	} else {
		al_sb_cg_ahead_after_step(&h->cgroups, refill_netns,
					  &h->netns);
	}
	/* Members start being prepared now, in the background. */
	if (h->facts->available && !atomic_load(&pools_off)) {
		rc = al_sb_pool_start(&h->ctx, &h->pool, err);
		if (rc < 0) {
			al_sb_cg_ahead_clear(&h->cgroups);
			al_sb_netns_ahead_clear(&h->netns);
			al_run_registry_destroy(&h->runs);
			al_facts_free(h->facts);
			al_sb_context_clear(&h->ctx);
			free(h);
			return rc;
		}
	}
	*out = h;
	return 0;
}

static int sb_health(al_provider_handle *h, al_error **err)
{
	if (!h->facts->available || atomic_load(&h->broken))
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOSYS,
				    "sandbox_unavailable",
				    "the sandbox is not available on this host");
	return 0;
}

/* The run failed closed because something the facts promised did not
 * work: forget the cached observations, so the next probe tries them. */
static void mechanism_missing(al_provider_handle *h)
{
	atomic_store(&h->broken, true);
	al_sb_observations_invalidate(h->ctx.cache_dir);
}

/* A stage of sb_execute: go on to the next, or (0, or a negative errno)
 * the run ends here. */
enum { SB_GO = 1 };

/* Refusals decided before anything is created. */
static int check_request(const al_facts *f, const al_request *req,
			 al_result *res)
{
	if (!f->available)
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "sandbox_unavailable");
	if (req->exec != NULL ? !f->exec
			      : al_facts_find_language(f, req->language) == NULL)
		return al_result_set_outcome(
			res, AL_OUTCOME_UNSUPPORTED_LANGUAGE, NULL);
	unsigned extra = req->limits.set & ~f->limits;
	if (extra != 0) {
		unsigned bit = extra & (~extra + 1u);
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     al_limit_name(bit));
	}
	if (!(f->network & (1u << req->grant.network)))
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     "network");
	if (!(f->workspace & (1u << req->grant.workspace)))
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     "workspace");
	return SB_GO;
}

static void clear_output(al_result *res)
{
	for (int s = 0; s < 2; s++) {
		al_bytes_clear(&res->output[s]);
		al_bytes_set(&res->output[s], "", 0);
		res->output_seen[s] = 0;
		res->truncated[s] = false;
	}
}

/* al_sb_member_run's answer when the warm member was found dead before
 * its program was told to start: nothing of the request ran. */
enum { SB_MEMBER_FOUND_DEAD = 1 };

/* One run's state through sb_execute; sb_run_end frees it. */
typedef struct sb_run {
	al_provider_handle *h;
	const al_exec *exec;
	const al_request *req;
	al_result *res;
	al_run_entry entry;
	al_rundir rd;
	al_toolchain *tc;
	al_plan plan;
	char **envp;
	char *path_env;
	uid_t uid;
	al_sb_uid slot;
	al_bundle_use bu;
	al_sb_member *member;
	int ws_fd, store_fd;
	int member_ws; /* a member's tmpfs /workspace (grant rw) */
	bool bounded;  /* a tmpfs /workspace: nothing of it on the host */
	al_runlog log;
	char script[PATH_MAX];
	char cg_name[64];
} sb_run;

/* The refusals that need no toolchain: the facts, then the build
 * flags. */
static int sb_refusals(sb_run *r)
{
	int rc = check_request(r->h->facts, r->req, r->res);
	if (rc != SB_GO)
		return rc;
	if (al_build_flags_check(r->req->language, r->req->build_flags,
				 r->req->n_build_flags, NULL) < 0)
		return al_result_set_outcome(r->res, AL_OUTCOME_INVALID_REQUEST,
					     "build_flags");
	return SB_GO;
}

/* exec: the argv itself, its program beneath the read-only system
 * directories every run sees at the same paths, or an interpreter of the
 * facts with its toolchain's roots. */
static int sb_exec_argv(sb_run *r)
{
	const al_request *req = r->req;
	size_t n_roots;
	const char *const *roots = al_sb_system_dirs(&n_roots);
	if (strchr(req->exec[0], '/') == NULL &&
	    al_facts_find_language(r->h->facts, req->exec[0]) != NULL &&
	    al_toolchain_observe(req->exec[0], NULL, r->h->ctx.cache_dir,
				 &r->tc, NULL) < 0)
		r->tc = NULL;
	int rc = r->tc == NULL && strchr(req->exec[0], '/') == NULL
			 ? -EINVAL
			 : al_exec_shape_argv(r->h->facts, req, roots, n_roots,
					      &r->plan.run_argv);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0)
		return al_result_set_outcome(r->res, AL_OUTCOME_INVALID_REQUEST,
					     "exec[0]");
	return SB_GO;
}

/* The toolchain of the request's language (or of exec's interpreter). */
static int sb_find_toolchain(sb_run *r)
{
	if (r->req->exec != NULL)
		return sb_exec_argv(r);
	if (al_toolchain_observe(r->req->language, NULL, r->h->ctx.cache_dir,
				 &r->tc, NULL) < 0)
		return al_result_set_outcome(
			r->res, AL_OUTCOME_UNSUPPORTED_LANGUAGE, NULL);
	return SB_GO;
}

static int sb_open_bundle(sb_run *r)
{
	al_error *setup_err = NULL;
	if (al_bundle_use_init(&r->bu, r->exec, &setup_err) == 0)
		return SB_GO;
	/* a request that cannot be bundled, or a bundle that does not match
	 * its manifest */
	bool invalid = al_error_get_code(setup_err) == AL_ERR_INVALID_REQUEST;
	const char *why = al_error_get_reason(setup_err);
	int rc = al_result_set_outcome(
		r->res, invalid ? AL_OUTCOME_INVALID_REQUEST : AL_OUTCOME_UNAVAILABLE,
		why[0] ? why : "bundle_mismatch");
	al_error_free(setup_err);
	return rc;
}

/* A warm member of this request's class, holding its limits now: its uid
 * and run directory become the run's.  NULL: none, or it could not take
 * the limits. */
static void sb_take_member(sb_run *r)
{
	al_provider_handle *h = r->h;
	al_sb_member *m = r->req->exec == NULL
				  ? al_sb_pool_take(h->pool, r->exec, r->tc->path)
				  : NULL;
	if (m != NULL && al_sb_member_claim(&h->ctx, m, &r->req->limits) < 0) {
		al_sb_member_destroy(m);
		m = NULL;
		al_sb_pool_done(h->pool, r->req->language);
	}
	if (m == NULL)
		return;
	r->member = m;
	r->slot = m->slot;
	m->slot = (al_sb_uid){.fd = -1};
	r->rd = m->rd;
	memset(&m->rd, 0, sizeof(m->rd));
	r->member_ws = m->ws_fd;
	m->ws_fd = -1;
	r->uid = h->ctx.privileged ? r->slot.uid : geteuid();
}

/* The run's uid: the member's, one of the pool's when privileged, else
 * our own. */
static int sb_choose_uid(sb_run *r)
{
	al_provider_handle *h = r->h;
	sb_take_member(r);
	if (r->member != NULL)
		return SB_GO;
	if (!h->ctx.privileged) {
		r->uid = geteuid();
		return SB_GO;
	}
	int rc = al_sb_uid_take(h->ctx.cfg.uid_base, h->ctx.cfg.uid_count,
				&r->slot);
	if (rc < 0)
		/* every uid in use: busy; the pool itself unusable: the
		 * sandbox cannot keep runs apart */
		return al_result_set_outcome(r->res, AL_OUTCOME_UNAVAILABLE,
					     rc == -EAGAIN ? "busy"
							   : "sandbox_unavailable");
	r->uid = r->slot.uid;
	return SB_GO;
}

/* A member's tmpfs /workspace gets the inputs beneath its descriptor. */
static int sb_fill_member_workspace(sb_run *r, uid_t own, gid_t gown,
				    al_error **setup_err)
{
	if (r->bounded && r->member_ws < 0)
		return al_error_set(setup_err, AL_ERR_UNAVAILABLE, EBADF,
				    "workspace_setup_failed",
				    "the warm member has no workspace");
	if (r->member_ws < 0)
		return 0;
	int rc = al_bundle_materialise(r->bu.bundle, r->bu.manifest, -1,
				       r->member_ws, own, gown, setup_err);
	if (rc == 0) {
		r->ws_fd = r->member_ws;
		r->member_ws = -1;
	}
	return rc;
}

/* The run directory with the code and the inputs: 0, or a negative errno
 * with *setup_err set. */
/* A cold run's directory: the one laid out ahead in its base when there
 * is one (named for the run now), else made now. */
static int sb_cold_rundir(sb_run *r, al_error **setup_err)
{
	al_provider_handle *h = r->h;
	const char *base = h->ctx.cfg.run_dir ? h->ctx.cfg.run_dir
					      : al_sb_run_base(r->req);
	if (al_sb_cg_ahead_take_dir(&h->cgroups, base, &r->rd)) {
		if (al_rundir_claim(&r->rd, r->exec->run_id, NULL) == 0)
			return 0;
		(void)al_sb_cg_ahead_give_dir(&h->cgroups, &r->rd);
	}
	return al_rundir_create(base, r->exec->run_id, &r->rd, setup_err);
}

static int sb_prepare_rundir(sb_run *r, al_error **setup_err)
{
	al_provider_handle *h = r->h;
	int rc = r->member != NULL ? 0 : sb_cold_rundir(r, setup_err);
	/* Fresh directories no program has seen yet: handed to the run's
	 * uid before anything is written into them (a member's were at its
	 * start; its program has not run yet). */
	if (rc == 0 && r->member == NULL && h->ctx.privileged &&
	    (chown(r->rd.workspace, r->uid, r->uid) < 0 ||
	     chown(r->rd.tmp, r->uid, r->uid) < 0))
		rc = al_error_set(setup_err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot hand the workspace to the run's uid");
	/* The code always goes to RUN/code (bound read-only at /code); the
	 * inputs to RUN/workspace unless the workspace is a tmpfs: a cold
	 * init writes them into its own, a member's is written here beneath
	 * its descriptor. */
	uid_t own = h->ctx.privileged ? r->uid : (uid_t)-1;
	gid_t gown = h->ctx.privileged ? (gid_t)r->uid : (gid_t)-1;
	if (rc == 0)
		rc = al_rundir_materialise(&r->rd, r->bu.bundle, r->bu.manifest,
					   !r->bounded, own, gown, setup_err);
	if (rc == 0 && r->member != NULL)
		rc = sb_fill_member_workspace(r, own, gown, setup_err);
	if (rc == 0 && !r->bounded &&
	    (r->ws_fd = al_rundir_workspace_fd(&r->rd)) < 0)
		rc = al_error_set(setup_err, AL_ERR_UNAVAILABLE, -r->ws_fd,
				  "workspace_setup_failed",
				  "cannot open the workspace");
	return rc;
}

/* The build and run commands of the language's toolchain. */
static int sb_plan(sb_run *r, al_error **setup_err)
{
	const al_request *req = r->req;
	snprintf(r->script, sizeof(r->script), "/code/%s",
		 al_bundle_item_at(r->bu.bundle, 0)->path);
	if (req->exec != NULL)
		return 0;
	al_limits blim;
	al_request_build_limits(req, &blim);
	al_plan_opts popts = {
		/* java's heap follows the memory the run really gets */
		.run_memory_bytes = req->limits.memory_bytes
					    ? req->limits.memory_bytes
					    : AL_SB_DEFAULT_MEMORY_BYTES,
		.build_memory_bytes = blim.memory_bytes,
		.flags = req->build_flags,
		.n_flags = req->n_build_flags,
	};
	return al_toolchain_plan_with(r->tc, r->script, "/build", req->argv,
				      req->argc, &popts, &r->plan, setup_err);
}

/* The run directory and the plan; a failure is the run's outcome. */
static int sb_setup(sb_run *r)
{
	al_error *setup_err = NULL;
	r->bounded = al_sb_workspace_bytes(&r->h->ctx.cfg, r->req) > 0;
	int rc = sb_prepare_rundir(r, &setup_err);
	if (rc == 0)
		rc = sb_plan(r, &setup_err);
	if (rc == 0)
		return SB_GO;
	const char *why = al_error_get_reason(setup_err);
	rc = al_result_set_outcome(r->res, AL_OUTCOME_UNAVAILABLE,
				   why[0] ? why : "workspace_setup_failed");
	al_error_free(setup_err);
	return rc;
}

static int sb_build_env(sb_run *r)
{
	const al_exec *exec = r->exec;
	r->path_env = r->tc != NULL ? al_env_path_for(r->tc->path)
				    : strdup(AL_EXEC_SHAPE_PATH);
	bool inbox = exec->inbox_dir != NULL && exec->inbox_acks_dir != NULL;
	al_env_base base = {.path = r->path_env, .home = "/workspace",
			    .tmpdir = "/tmp",
			    .inbox = inbox ? "/inbox" : NULL,
			    .inbox_acks = inbox ? "/inbox-acks" : NULL,
			    .tool_dir = exec->tool_dir ? AL_TOOL_SANDBOX_DIR : NULL,
			    .tool_bin_dir = exec->tool_dir ? AL_TOOL_SANDBOX_BIN
							   : NULL};
	if (r->path_env == NULL || al_env_build(&base, exec, &r->envp) < 0)
		return -ENOMEM;
	return SB_GO;
}

static void sb_name_cgroup(sb_run *r, const char *suffix)
{
	char tag[24];
	snprintf(tag, sizeof(tag), "%u%s", atomic_fetch_add(&r->h->seq, 1),
		 suffix);
	al_sb_cgrun_name(r->cg_name, sizeof(r->cg_name), tag);
}

/* A streamed run learns that its build ended (the result's "build"
 * object) before the program's output: a live reader then shows the
 * build stage first.  A build object past one record is not sent; the
 * reader then has it from the result. */
static void sb_announce_build(sb_run *r, const al_sb_step *step)
{
	if (step->on_output == NULL || r->res->build == NULL)
		return;
	json_t *root = json_object();
	char *text = root != NULL && al_build_result_emit(root, r->res) == 0
			     ? json_dumps(json_object_get(root, "build"),
					  JSON_COMPACT)
			     : NULL;
	json_decref(root);
	if (text != NULL && strlen(text) <= AL_OUTLOG_MAX_CHUNK)
		step->on_output(step->on_output_ctx, AL_OUTLOG_BUILD,
				(const unsigned char *)text, strlen(text));
	free(text);
}

/* The build step, when the language has one: SB_GO when the run goes
 * on. */
static int sb_run_build(sb_run *r, al_sb_step *step, al_error **err)
{
	if (r->plan.build_argv == NULL)
		return SB_GO;
	sb_name_cgroup(r, "-b");
	int rc = al_sb_build(step, &r->plan, r->envp, r->tc,
			     r->bu.manifest ? r->bu.manifest->digest : NULL,
			     r->res, err);
	if (rc > 0) /* res holds the run's outcome */
		return 0;
	if (rc < 0)
		return rc;
	clear_output(r->res);
	sb_announce_build(r, step);
	return SB_GO;
}

/* Runs the program in the warm member taken for it, which is gone after
 * this whatever happened.  true when it must run cold instead: no member,
 * or one found dead before it was told to start. */
static bool sb_needs_cold(sb_run *r, al_sb_step *step, int *rc,
			  al_error **err)
{
	if (r->member == NULL)
		return true;
	*rc = al_sb_member_run(&r->h->ctx, r->member, step, r->script, r->res,
			       err);
	r->member = NULL;
	al_sb_pool_done(r->h->pool, r->req->language);
	return *rc == SB_MEMBER_FOUND_DEAD;
}

/* The program's step, in the member or cold; its combined output is kept
 * as the "log" artifact. */
static int sb_run_program(sb_run *r, al_sb_step *step, al_error **err)
{
	const al_request *req = r->req;
	al_output_fn stream = req->grant.streaming ? r->exec->on_output : NULL;
	sb_name_cgroup(r, "");
	step->argv = r->plan.run_argv;
	step->build = false;
	step->with_stdin = true;
	r->store_fd = al_artifacts_open_dir(r->exec->artifact_dir);
	al_runlog_open(&r->log, r->store_fd, req->limits.output_bytes, stream,
		       r->exec->on_output_ctx);
	step->on_output = al_runlog_output;
	step->on_output_ctx = &r->log;
	if (r->bounded)
		step->ws_fd = &r->ws_fd;
	int rc = 0;
	if (sb_needs_cold(r, step, &rc, err)) {
		if (step->ws_fd != NULL && r->ws_fd >= 0) {
			/* a dead member's tmpfs: the cold init fills its own */
			close(r->ws_fd);
			r->ws_fd = -1;
		}
		rc = al_sb_run_step(step, r->res, err);
	}
	al_runlog_close(&r->log);
	return rc;
}

/* Everything of the run is gone (its pid namespace with it); the
 * workspace — RUN/workspace, or the tmpfs held by ws_fd — is read from
 * here, beneath its descriptor and never through a link. */
static int sb_collect(sb_run *r)
{
	const al_request *req = r->req;
	int rc = 0;
	if (req->n_outputs > 0 && r->ws_fd >= 0 &&
	    al_outcome_ran(r->res->outcome)) {
		al_outputs_spec os = {
			.ws_dirfd = r->ws_fd,
			.store_dirfd = r->store_fd,
			.patterns = req->outputs,
			.n_patterns = req->n_outputs,
		};
		rc = al_outputs_collect(&os, r->res);
	}
	if (rc == 0) {
		uint64_t wsb = al_sb_workspace_bytes(&r->h->ctx.cfg, req);
		al_run_report rep = {.where = wsb > 0 ? "tmpfs at /workspace"
						      : "directory at /workspace",
				     .ws_bytes = wsb,
				     .store_dirfd = r->store_fd};
		rc = al_run_report_fill(r->res, req, &rep);
	}
	return rc;
}

/* The build (if any), the run, then its outputs and report. */
static int sb_run_steps(sb_run *r, al_error **err)
{
	al_sb_step step = {
		.ctx = &r->h->ctx,
		.uid = r->uid,
		.rd = &r->rd,
		.extra_roots = r->tc != NULL ? r->tc->extra_roots : NULL,
		.envp = r->envp,
		.exec = r->exec,
		.has_build_dir = r->plan.build_argv != NULL,
		.cg_name = r->cg_name,
		.bundle = r->bu.bundle,
		.manifest = r->bu.manifest,
		.on_output = r->req->grant.streaming ? r->exec->on_output : NULL,
		.on_output_ctx = r->exec->on_output_ctx,
		.netns_ahead = &r->h->netns,
		.cg_ahead = &r->h->cgroups,
		.uid_slot = &r->slot,
	};
	int rc = sb_run_build(r, &step, err);
	if (rc != SB_GO)
		return rc;
	rc = sb_run_program(r, &step, err);
	if (rc == 0)
		rc = sb_collect(r);
	return rc;
}

/* Releases everything of the run; rc is the run's, returned unless the
 * run directory cannot be removed. */
static int sb_run_end(sb_run *r, int rc, al_error **err)
{
	al_provider_handle *h = r->h;
	al_result *res = r->res;
	if (r->member != NULL) {
		al_sb_member_destroy(r->member);
		al_sb_pool_done(h->pool, r->req->language);
	}
	if (h->facts->available && res->outcome == AL_OUTCOME_UNAVAILABLE &&
	    res->reason != NULL &&
	    strcmp(res->reason, "sandbox_unavailable") == 0)
		mechanism_missing(h);
	al_run_registry_remove(&h->runs, &r->entry);
	/* removed by the helper (or now, where none is kept) */
	if (r->rd.root != NULL &&
	    al_sb_cg_ahead_give_dir(&h->cgroups, &r->rd) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_IO, EIO, NULL,
				  "cannot remove the run directory");
	al_sb_uid_give(&r->slot);
	res->finished_at_ms = al_now_ms();
	if (r->ws_fd >= 0)
		close(r->ws_fd);
	if (r->member_ws >= 0)
		close(r->member_ws);
	if (r->store_fd >= 0)
		close(r->store_fd);
	al_bundle_use_clear(&r->bu);
	al_env_free(r->envp);
	free(r->path_env);
	al_plan_free(&r->plan);
	al_toolchain_free(r->tc);
	return rc;
}

static int sb_execute(al_provider_handle *h, const al_exec *exec,
		      al_result *res, al_error **err)
{
	sb_run r = {.h = h, .exec = exec, .req = exec->request, .res = res,
		    .slot = {.fd = -1}, .log = {.fd = -1},
		    .ws_fd = -1, .store_fd = -1, .member_ws = -1};
	snprintf(res->run_id, sizeof(res->run_id), "%s", exec->run_id);
	res->started_at_ms = al_now_ms();
	if (res->provider == NULL)
		res->provider = al_facts_dup(h->facts);
	al_run_registry_add(&h->runs, &r.entry, exec->run_id, exec->cancel);

	int rc = sb_refusals(&r);
	if (rc == SB_GO)
		rc = sb_find_toolchain(&r);
	if (rc == SB_GO)
		rc = sb_open_bundle(&r);
	if (rc == SB_GO)
		rc = sb_choose_uid(&r);
	if (rc == SB_GO)
		rc = sb_setup(&r);
	if (rc == SB_GO)
		rc = sb_build_env(&r);
	if (rc == SB_GO)
		rc = sb_run_steps(&r, err);
	rc = sb_run_end(&r, rc, err);
	/* the next cold run's network namespace, made while none runs here
	 * (the run's descriptors are closed by now); the cgroup helper
	 * starts it, off the run's path, where there is one */
	if (!h->one_run && !al_sb_cg_ahead_enabled(&h->cgroups))
		al_sb_netns_ahead_refill(&h->netns);
	/* the run's cgroups removed and the next made, off its path */
	al_sb_cg_ahead_refill(&h->cgroups);
	return rc;
}

void al_sb_provider_pool_stats(al_provider_handle *h, al_sb_pool_stats *out)
{
	al_sb_pool_get_stats(h != NULL ? h->pool : NULL, out);
}

void al_sb_provider_netns_stats(al_provider_handle *h,
				unsigned long long *taken,
				unsigned long long *missed)
{
	pthread_mutex_lock(&h->netns.lock);
	*taken = h->netns.taken;
	*missed = h->netns.missed;
	pthread_mutex_unlock(&h->netns.lock);
}

void al_sb_provider_cgroups_stats(al_provider_handle *h,
				  unsigned long long *taken,
				  unsigned long long *missed, bool *ready)
{
	al_sb_cg_ahead_counts(&h->cgroups, taken, missed, ready);
}

int al_sandbox_pool_renew(al_provider_handle *h, int timeout_ms)
{
	/* The namespace the last run's end started is made by now (while
	 * its result was recorded): joined before the members are made,
	 * so that no descriptor of its opens among theirs. */
	if (h != NULL)
		al_sb_netns_ahead_wait(&h->netns);
	int rc = al_sb_pool_renew(h != NULL ? h->pool : NULL, timeout_ms);
	/* After the members, which are made while nothing else opens a
	 * descriptor (their numbers are compared between runs too). */
	if (h != NULL) {
		al_sb_netns_ahead_settle(&h->netns);
		al_sb_cg_ahead_settle(&h->cgroups);
	}
	return rc;
}

size_t al_sandbox_pool_cgroups(al_provider_handle *h,
			       char (*names)[AL_SANDBOX_CG_NAME_MAX],
			       size_t max)
{
	return al_sb_pool_cgroups(h != NULL ? h->pool : NULL, names, max);
}

/* AIRLOCK_SANDBOX_POOL_STATS=<file>: one JSON line per released handle
 * with a pool (docs/sandbox.md, "Warm pools": how the tests see that
 * runs really went through the pool). */
static void log_pool_stats(al_sb_pool *p)
{
	const char *path = getenv("AIRLOCK_SANDBOX_POOL_STATS");
	if (p == NULL || path == NULL || path[0] != '/')
		return;
	al_sb_pool_stats st;
	al_sb_pool_get_stats(p, &st);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		      0600);
	if (fd < 0)
		return;
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "{\"prepared\": %llu, \"failed\": %llu, \"taken\": %llu, "
			 "\"cold\": %llu, \"idle\": %llu}\n",
			 (unsigned long long)st.prepared,
			 (unsigned long long)st.failed,
			 (unsigned long long)st.taken,
			 (unsigned long long)st.cold,
			 (unsigned long long)st.idle);
	/* a debugging aid: a failed write has no one to tell */
	ssize_t w = n > 0 ? write(fd, line, (size_t)n) : 0;
	(void)w;
	close(fd);
}

static int sb_interrupt(al_provider_handle *h, const char *run_id,
			al_error **err)
{
	return al_run_registry_interrupt_run(&h->runs, run_id, err);
}

static int sb_release(al_provider_handle *h, al_error **err)
{
	if (h == NULL)
		return 0;
	int busy = al_run_registry_check_idle(&h->runs, err);
	if (busy < 0)
		return busy;
	log_pool_stats(h->pool);
	int rc = al_sb_pool_stop(h->pool);
	h->pool = NULL;
	al_sb_netns_ahead_clear(&h->netns);
	al_sb_cg_ahead_clear(&h->cgroups);
	al_run_registry_destroy(&h->runs);
	al_facts_free(h->facts);
	al_sb_context_clear(&h->ctx);
	free(h);
	if (rc < 0)
		return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL,
				    "a warm member could not be removed");
	return 0;
}

const al_provider_ops al_sandbox_provider = {
	AL_ABI_HEADER(al_provider_ops),
	.id = "sandbox",
	.probe = sb_probe,
	.ensure = sb_ensure,
	.health = sb_health,
	.execute = sb_execute,
	.interrupt = sb_interrupt,
	.release = sb_release,
};
