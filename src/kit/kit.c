/* The conformance kit's driver: probe, run every registered case in order,
 * collect the report; and the report's printers. */

#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/contract_kit.h>
#include <airlock/error.h>

#include "core/util.h"
#include "kit/kit.h"

const char *al_kit_status_name(al_kit_status status)
{
	switch (status) {
	case AL_KIT_PASS: return "pass";
	case AL_KIT_FAIL: return "fail";
	case AL_KIT_SKIP: return "skip";
	}
	return "?";
}

bool kit_case_registered(const char *name)
{
	for (const kit_case_def *d = kit_case_defs; d->name != NULL; d++)
		if (strcmp(d->name, name) == 0)
			return true;
	return false;
}

/* ---- report ---------------------------------------------------------- */

void al_kit_report_free(al_kit_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_cases; i++) {
		free(r->cases[i].name);
		free(r->cases[i].reason);
	}
	free(r->cases);
	free(r->provider);
	free(r);
}

size_t al_kit_report_failures(const al_kit_report *r)
{
	size_t n = 0;
	for (size_t i = 0; r != NULL && i < r->n_cases; i++)
		n += r->cases[i].status == AL_KIT_FAIL;
	return n;
}

const al_kit_case_result *al_kit_report_find(const al_kit_report *r,
					     const char *name)
{
	for (size_t i = 0; r != NULL && i < r->n_cases; i++)
		if (strcmp(r->cases[i].name, name) == 0)
			return &r->cases[i];
	return NULL;
}

static void count(const al_kit_report *r, size_t n[3])
{
	n[0] = n[1] = n[2] = 0;
	for (size_t i = 0; i < r->n_cases; i++)
		n[r->cases[i].status]++;
}

char *al_kit_report_to_json(const al_kit_report *r)
{
	char *text = NULL;
	size_t n[3];
	json_t *root = json_object(), *cases = json_array();
	if (root == NULL || cases == NULL)
		goto out;
	for (size_t i = 0; i < r->n_cases; i++) {
		const al_kit_case_result *c = &r->cases[i];
		json_t *o = json_pack(
			"{s:s, s:s, s:o, s:I}", "name", c->name, "status",
			al_kit_status_name(c->status), "reason",
			c->reason != NULL ? json_string(c->reason) : json_null(),
			"elapsed_ms", (json_int_t)c->elapsed_ms);
		if (o == NULL || json_array_append_new(cases, o) < 0)
			goto out;
	}
	count(r, n);
	if (json_object_set_new(root, "provider", json_string(r->provider)) < 0 ||
	    json_object_set(root, "cases", cases) < 0 ||
	    json_object_set_new(root, "passed", json_integer((json_int_t)n[0])) < 0 ||
	    json_object_set_new(root, "failed", json_integer((json_int_t)n[1])) < 0 ||
	    json_object_set_new(root, "skipped", json_integer((json_int_t)n[2])) < 0)
		goto out;
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
out:
	json_decref(cases);
	json_decref(root);
	return text;
}

static void print_case(const al_kit_case_result *c, FILE *fp)
{
	static const char *const tag[] = {"PASS", "FAIL", "SKIP"};
	fprintf(fp, "%s  %-36s %5llu ms", tag[c->status], c->name,
		(unsigned long long)c->elapsed_ms);
	if (c->reason != NULL)
		fprintf(fp, "  %s", c->reason);
	fputc('\n', fp);
}

void al_kit_report_print(const al_kit_report *r, FILE *fp)
{
	size_t n[3];
	fprintf(fp, "conformance kit: provider %s\n", r->provider);
	for (size_t i = 0; i < r->n_cases; i++)
		print_case(&r->cases[i], fp);
	count(r, n);
	fprintf(fp, "%zu passed, %zu failed, %zu skipped\n", n[0], n[1], n[2]);
}

/* ---- driver ------------------------------------------------------------ */

static bool selected(const char *only, const char *name)
{
	if (only == NULL || *only == '\0')
		return true;
	/* Ensure and release frame every run: always reported. */
	if (strcmp(name, "provider.ensure") == 0 ||
	    strcmp(name, "provider.release") == 0)
		return true;
	const char *p = only;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		if (len > 0 && strncmp(name, p, len) == 0)
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* The generic language and grant, chosen from the facts only. */
static void choose_from_facts(kit_ctx *k)
{
	static const char *const order[] = {"sh", "python", "bash"};
	const al_facts *f = k->facts;
	k->lang = NULL;
	for (size_t i = 0; f != NULL && i < 3; i++) {
		if (al_facts_find_language(f, order[i]) != NULL) {
			k->lang = order[i];
			break;
		}
	}
	k->lang_is_python = k->lang != NULL && strcmp(k->lang, "python") == 0;
	/* Least network and the most useful workspace the provider offers. */
	k->network = AL_NETWORK_NONE;
	unsigned net = f != NULL ? f->network : 0;
	for (int m = AL_NETWORK_NONE; m <= AL_NETWORK_HOST; m++)
		if (net & (1u << m)) {
			k->network = (al_network)m;
			break;
		}
	k->workspace = AL_WORKSPACE_RW;
	unsigned ws = f != NULL ? f->workspace : 0;
	if (ws != 0 && !(ws & (1u << AL_WORKSPACE_RW)))
		k->workspace = (ws & (1u << AL_WORKSPACE_RO)) ? AL_WORKSPACE_RO
							      : AL_WORKSPACE_NONE;
}

static int append_case(al_kit_report *rep, kit_case *c, uint64_t ms)
{
	al_kit_case_result *grown =
		realloc(rep->cases, (rep->n_cases + 1) * sizeof(*grown));
	if (grown == NULL)
		return -ENOMEM;
	rep->cases = grown;
	al_kit_case_result *cr = &rep->cases[rep->n_cases];
	cr->name = strdup(c->name);
	if (cr->name == NULL)
		return -ENOMEM;
	cr->status = c->status;
	cr->reason = c->reason;
	c->reason = NULL;
	cr->elapsed_ms = ms;
	rep->n_cases++;
	return 0;
}

int al_kit_run(const al_provider_ops *ops, const char *config_json,
	       const al_kit_options *opts, al_kit_report **out, al_error **err)
{
	static const al_kit_options no_opts;
	int ret = 0;
	char *old_marker = NULL;
	bool marker_set = false;
	kit_ctx k;
	al_kit_report *rep = NULL;

	*out = NULL;
	if (ops == NULL || ops->id == NULL || ops->probe == NULL ||
	    ops->ensure == NULL || ops->health == NULL ||
	    ops->execute == NULL || ops->interrupt == NULL ||
	    ops->release == NULL)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL,
				    "ops", "the operations table is incomplete");
	if (opts == NULL)
		opts = &no_opts;

	memset(&k, 0, sizeof(k));
	pthread_mutex_init(&k.lock, NULL);
	k.ops = ops;
	k.config_json = config_json;
	rep = calloc(1, sizeof(*rep));
	if (rep == NULL || (rep->provider = strdup(ops->id)) == NULL) {
		ret = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				   "out of memory");
		goto out;
	}
	k.report = rep;

	/* A host directory for markers and planted files; /var/tmp is not
	 * a tmpfs a sandbox would mount over. */
	snprintf(k.hostdir, sizeof(k.hostdir), "/var/tmp/alkit-XXXXXX");
	if (mkdtemp(k.hostdir) == NULL) {
		snprintf(k.hostdir, sizeof(k.hostdir), "/tmp/alkit-XXXXXX");
		if (mkdtemp(k.hostdir) == NULL) {
			k.hostdir[0] = '\0';
			ret = al_error_set(err, AL_ERR_IO, errno, NULL,
					   "cannot create the kit's directory");
			goto out;
		}
	}
	chmod(k.hostdir, 0755);

	/* A variable only the kit's process has: it must never reach a
	 * program. */
	snprintf(k.marker_name, sizeof(k.marker_name),
		 "AIRLOCK_KIT_HOST_MARKER");
	kit_token(&k, k.marker_value, sizeof(k.marker_value));
	const char *prev = getenv(k.marker_name);
	if (prev != NULL)
		old_marker = strdup(prev);
	if (setenv(k.marker_name, k.marker_value, 1) == 0)
		marker_set = true;

	al_error *perr = NULL;
	k.probe_rc = ops->probe(config_json, &k.facts, &perr);
	if (k.probe_rc < 0)
		k.probe_error = strdup(al_error_get_message(perr));
	al_error_free(perr);
	if (k.probe_rc < 0) {
		al_facts_free(k.facts);
		k.facts = NULL;
	}
	choose_from_facts(&k);

	for (const kit_case_def *d = kit_case_defs; d->name != NULL; d++) {
		if (!selected(opts->only, d->name))
			continue;
		kit_case c = {.name = d->name};
		uint64_t t0 = al_mono_ms();
		d->fn(&k, &c, d->arg);
		if (!c.decided)
			kit_fail(&c, "kit bug: the case reached no verdict");
		uint64_t ms = al_mono_ms() - t0;
		if (append_case(rep, &c, ms) < 0) {
			free(c.reason);
			ret = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					   "out of memory");
			goto out;
		}
		if (opts->progress != NULL) {
			print_case(&rep->cases[rep->n_cases - 1],
				   opts->progress);
			fflush(opts->progress);
		}
	}
out:
	if (k.handle != NULL) {
		/* Only reached when the release case did not run. */
		al_error *rerr = NULL;
		ops->release(k.handle, &rerr);
		al_error_free(rerr);
	}
	if (marker_set) {
		if (old_marker != NULL)
			setenv(k.marker_name, old_marker, 1);
		else
			unsetenv(k.marker_name);
	}
	free(old_marker);
	if (k.hostdir[0] != '\0')
		nftw(k.hostdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	al_facts_free(k.facts);
	free(k.ensure_error);
	free(k.shape_problems);
	free(k.probe_error);
	pthread_mutex_destroy(&k.lock);
	if (ret < 0) {
		al_kit_report_free(rep);
		return al_error_wrap(err, ret, NULL);
	}
	*out = rep;
	return 0;
}
