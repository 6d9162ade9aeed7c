/* The sandbox provider's observation cache: key, file, in-process copy.
 * See observation_cache.h. */
#include "sandbox/observation_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/cache_files.h"
#include "core/code_file.h"
#include "core/util.h"

#define CACHE_PREFIX "sandbox-facts-"
/* The single document of every key that format 1 was. */
#define CACHE_OLD_NAME "sandbox-facts.json"
#define CACHE_FORMAT 2
#define CACHE_MAX (1024 * 1024)

/* ---- key ------------------------------------------------------------- */

/* Appends a small file's text (or "-" when unreadable). */
static void put_file(FILE *m, const char *label, const char *path)
{
	char buf[4096];
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	fprintf(m, "%s=%s\n", label, n >= 0 ? buf : "-");
}

void al_sb_key_put_stat(FILE *m, const char *label, const char *path)
{
	struct stat st;
	if (path == NULL || stat(path, &st) < 0) {
		fprintf(m, "%s=-\n", label);
		return;
	}
	fprintf(m, "%s=%s %ju:%ju %ju %ju %ju:%ju %o %jd.%09ld\n", label, path,
		(uintmax_t)major(st.st_dev), (uintmax_t)minor(st.st_dev),
		(uintmax_t)st.st_ino, (uintmax_t)st.st_size,
		(uintmax_t)st.st_uid, (uintmax_t)st.st_gid,
		(unsigned)st.st_mode, (intmax_t)st.st_mtim.tv_sec,
		st.st_mtim.tv_nsec);
}

/* What cannot change while this process lives, read once: the boot's
 * id and the identity of the file holding this code (the trials' meaning
 * changes with it; a replaced file does not change the code running). */
static pthread_once_t lasting_once = PTHREAD_ONCE_INIT;
static char *lasting_text;

static void read_lasting(void)
{
	size_t len = 0;
	FILE *m = open_memstream(&lasting_text, &len);
	if (m == NULL)
		return;
	put_file(m, "boot_id", "/proc/sys/kernel/random/boot_id");
	al_sb_key_put_stat(m, "code",
		 al_code_file((const void *)(uintptr_t)al_sb_observations_keys));
	if (fclose(m) != 0) {
		free(lasting_text);
		lasting_text = NULL;
	}
}

/* A key's inputs that are read from the system, each read once for both
 * keys. */
typedef struct key_reads {
	char *cgroups; /* where our cgroups are (the mechanisms' key only) */
	char *host;    /* the sysctls the trials depend on */
} key_reads;

static char *text_of(void (*fill)(FILE *m, const al_sb_key_input *in),
		     const al_sb_key_input *in)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m == NULL)
		return NULL;
	fill(m, in);
	if (fclose(m) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static void fill_cgroups(FILE *m, const al_sb_key_input *in)
{
	put_file(m, "self_cgroup", "/proc/self/cgroup");
	al_sb_key_put_stat(m, "cg_v2", in->cg->v2_base);
	fprintf(m, "cg_v2_enabled=%s\n", in->cg->v2_enabled);
	for (int i = 0; i < AL_CG__N; i++)
		al_sb_key_put_stat(m, "cg_v1", in->cg->v1_base[i]);
}

static void fill_host(FILE *m, const al_sb_key_input *in)
{
	(void)in;
	put_file(m, "max_userns", "/proc/sys/user/max_user_namespaces");
	put_file(m, "userns_clone", "/proc/sys/kernel/unprivileged_userns_clone");
	put_file(m, "apparmor_userns",
		 "/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	put_file(m, "seccomp_actions", "/proc/sys/kernel/seccomp/actions_avail");
}

/* The text of a key: the boot and euid first, then (mechanisms only)
 * the cgroups, then the configuration, the kernel's abilities, the
 * sysctls and the code. */
static int key_of(const al_sb_key_input *in, const key_reads *r,
		  bool languages, char key[AL_SB_KEY_LEN])
{
	al_sb_keytext k;
	char first[64];
	snprintf(first, sizeof(first), "airlock-sandbox-observations %d%s",
		 CACHE_FORMAT, languages ? " languages" : "");
	if (al_sb_key_begin(&k, first) < 0)
		return -ENOMEM;
	FILE *m = k.m;
	/* the boot's id, then (below) the code's identity */
	const char *lasting = lasting_text;
	const char *code = strstr(lasting, "\ncode=");
	fprintf(m, "%.*s\n", (int)(code - lasting), lasting);
	fprintf(m, "euid=%u egid=%u\n", (unsigned)geteuid(),
		(unsigned)getegid());
	/* What an interpreter does inside the sandbox does not depend on
	 * where the run's cgroups live; every durable run's supervisor sits in
	 * a cgroup of its own, and would otherwise re-observe every
	 * language on every run. */
	if (!languages)
		fputs(r->cgroups, m);
	fprintf(m, "config=%s\n", in->config);
	fprintf(m, "landlock_abi=%d cap_last=%d\n", in->landlock_abi,
		in->cap_last);
	fputs(r->host, m);
	fputs(code + 1, m);
	return al_sb_key_end(&k, key);
}

int al_sb_observations_keys(const al_sb_key_input *in,
			    char key[AL_SB_KEY_LEN],
			    char lang_key[AL_SB_KEY_LEN])
{
	(void)pthread_once(&lasting_once, read_lasting);
	if (lasting_text == NULL || strstr(lasting_text, "\ncode=") == NULL)
		return -ENOMEM;
	key_reads r = {.cgroups = text_of(fill_cgroups, in),
		       .host = text_of(fill_host, in)};
	int rc = r.cgroups == NULL || r.host == NULL ? -ENOMEM : 0;
	if (rc == 0)
		rc = key_of(in, &r, false, key);
	if (rc == 0)
		rc = key_of(in, &r, true, lang_key);
	free(r.cgroups);
	free(r.host);
	return rc;
}

int al_sb_key_begin(al_sb_keytext *k, const char *first_line)
{
	struct utsname u;
	k->text = NULL;
	k->len = 0;
	if ((k->m = open_memstream(&k->text, &k->len)) == NULL)
		return -ENOMEM;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	fprintf(k->m, "%s\n", first_line);
	fprintf(k->m, "kernel=%s %s %s\n", u.release, u.version, u.machine);
	return 0;
}

int al_sb_key_end(al_sb_keytext *k, char key[AL_SB_KEY_LEN])
{
	int rc = 0;
	if (fclose(k->m) != 0 || k->text == NULL)
		rc = -ENOMEM;
	else
		al_sha256_hex(k->text, k->len, key);
	free(k->text);
	k->text = NULL;
	k->m = NULL;
	return rc;
}

/* ---- files ----------------------------------------------------------- */

/* One file per key and kind, so that a process reads only the entries it
 * asks for: a directory shared by several builds, configurations and
 * every daemon supervisor's cgroup holds many keys, and one document of
 * them all was parsed whole by every CLI run. */
enum kind { KIND_MECH, KIND_INSIDE, KIND__N };
static const char *const kind_prefix[KIND__N] = {
	[KIND_MECH] = CACHE_PREFIX "m-",
	[KIND_INSIDE] = CACHE_PREFIX "l-",
};

/* The in-process copies: a process asks for one or two keys. */
#define MEMO_SLOTS 4
typedef struct memo_slot {
	json_t *doc; /* the file's entry */
	char *dir;
	char key[AL_SB_KEY_LEN];
	enum kind kind;
	struct stat st; /* of the file it came from; zeroed when not stored */
	unsigned used;	/* when last asked for (a counter) */
} memo_slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static memo_slot memo[MEMO_SLOTS];
static unsigned memo_clock;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Only a directory and file that no one else can write are trusted. */
static bool dir_is_ours(const char *dir)
{
	struct stat st;
	return dir != NULL && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

static bool key_valid(const char *key)
{
	size_t n = strspn(key, "0123456789abcdef");
	return n == AL_SB_KEY_LEN - 1 && key[n] == '\0';
}

static char *file_path(const char *dir, enum kind kind, const char *key)
{
	return al_strdup_printf("%s/%s%s.json", dir, kind_prefix[kind], key);
}

/* The file's entry for key, or NULL (absent, not ours, not this key). */
static json_t *read_doc(const char *path, const char *key, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	json_t *doc = NULL;
	char *buf = NULL;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
	    st->st_uid != geteuid() || (st->st_mode & 077) != 0 ||
	    st->st_size <= 0 || st->st_size > CACHE_MAX)
		goto out;
	buf = malloc((size_t)st->st_size);
	if (buf == NULL)
		goto out;
	size_t got = 0;
	while (got < (size_t)st->st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st->st_size - got);
		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	doc = json_loadb(buf, got, JSON_REJECT_DUPLICATES, NULL);
	/* A file renamed to another key's name is not that key's. */
	if (doc != NULL &&
	    (!json_is_object(doc) ||
	     json_integer_value(json_object_get(doc, "format")) !=
		     CACHE_FORMAT ||
	     json_string_value(json_object_get(doc, "key")) == NULL ||
	     strcmp(json_string_value(json_object_get(doc, "key")), key) !=
		     0)) {
		json_decref(doc);
		doc = NULL;
	}
out:
	free(buf);
	close(fd);
	return doc;
}

static void slot_clear(memo_slot *m)
{
	json_decref(m->doc);
	free(m->dir);
	memset(m, 0, sizeof(*m));
}

/* Writes the slot's entry atomically (lock held). */
static void write_doc(memo_slot *m)
{
	static atomic_uint seq;
	char *path = file_path(m->dir, m->kind, m->key);
	char *tmp = al_strdup_printf("%s/.%s%s.%d.%u.tmp", m->dir,
				     kind_prefix[m->kind], m->key,
				     (int)getpid(), atomic_fetch_add(&seq, 1));
	int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					 O_CLOEXEC,
			    0600)
		     : -1;
	/* One write, not jansson's byte-at-a-time json_dumpfd. */
	char *text = fd >= 0 ? json_dumps(m->doc, JSON_COMPACT) : NULL;
	bool ok = text != NULL && al_write_all(fd, text, strlen(text)) == 0 &&
		  fstat(fd, &m->st) == 0;
	free(text);
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (ok && path != NULL && rename(tmp, path) == 0)
		tmp[0] = '\0';
	else
		memset(&m->st, 0, sizeof(m->st));
	if (tmp != NULL && tmp[0] != '\0' && fd >= 0)
		unlink(tmp);
	free(tmp);
	free(path);
}

/* Several builds or configs may share one cache dir: it keeps the most
 * recently stored few keys of each kind.  The kinds are kept apart: every
 * durable run's supervisor stores a mechanism entry of its own (its
 * cgroup differs) and those must not push out the languages' entries all
 * of them share, while many builds' language entries must not push out
 * the mechanism entry just stored (which made every run re-probe). */
#define MAX_ENTRIES_PER_KIND 8

/* The slot holding key's entry (lock held): the in-process copy while its
 * file is unchanged, else the file's; created (empty) when absent. */
static memo_slot *slot_for(const char *dir, enum kind kind, const char *key)
{
	if (!key_valid(key))
		return NULL;
	char *path = file_path(dir, kind, key);
	if (path == NULL)
		return NULL;
	struct stat st;
	bool have = stat(path, &st) == 0;
	memo_slot *m = NULL, *victim = &memo[0];
	for (size_t i = 0; i < MEMO_SLOTS && m == NULL; i++) {
		memo_slot *c = &memo[i];
		if (c->dir != NULL && c->kind == kind &&
		    strcmp(c->key, key) == 0 && strcmp(c->dir, dir) == 0)
			m = c;
		else if (c->dir == NULL || (victim->dir != NULL &&
					    c->used < victim->used))
			victim = c;
	}
	if (m != NULL && (!have || !same_file(&st, &m->st)))
		slot_clear(m);
	if (m == NULL || m->dir == NULL) {
		m = m != NULL ? m : victim;
		slot_clear(m);
		m->doc = have ? read_doc(path, key, &m->st) : NULL;
		if (m->doc == NULL) {
			m->doc = json_pack("{s:i, s:s}", "format", CACHE_FORMAT,
					   "key", key);
			memset(&m->st, 0, sizeof(m->st));
		}
		m->dir = strdup(dir);
		m->kind = kind;
		memcpy(m->key, key, AL_SB_KEY_LEN);
		if (m->doc == NULL || m->dir == NULL)
			slot_clear(m);
	}
	free(path);
	if (m->dir == NULL)
		return NULL;
	m->used = ++memo_clock;
	return m;
}

static json_t *entry_for(const char *dir, enum kind kind, const char *key)
{
	memo_slot *m = slot_for(dir, kind, key);
	return m != NULL ? m->doc : NULL;
}

/* Marks the slot's entry just stored, writes its file and trims each
 * kind (lock held). */
static void touch_and_write(memo_slot *m)
{
	json_object_set_new(m->doc, "at", json_integer((json_int_t)time(NULL)));
	write_doc(m);
	for (int k = 0; k < KIND__N; k++)
		al_cache_files_prune(m->dir, kind_prefix[k],
				     MAX_ENTRIES_PER_KIND);
	char *old = al_strdup_printf("%s/" CACHE_OLD_NAME, m->dir);
	if (old != NULL)
		(void)unlink(old);
	free(old);
}

/* ---- observations ---------------------------------------------------- */

static const char *const mech_names[] = {
	"user_namespaces", "namespaces", "no_new_privs",
	"seccomp",	   "landlock",	 "caps_dropped",
};

static bool *mech_field(al_sb_mechanisms *m, size_t i)
{
	bool *f[] = {&m->user_namespaces, &m->namespaces, &m->no_new_privs,
		     &m->seccomp,	  &m->landlock,	  &m->caps_dropped};
	return f[i];
}

static const char *const ctrl_names[AL_CG__N] = {"memory", "pids", "cpu"};

static bool parse_ver(json_t *v, al_sb_cgver *out)
{
	const char *s = json_string_value(v);
	if (s == NULL)
		return false;
	*out = strcmp(s, "v2") == 0   ? AL_CG_V2
	       : strcmp(s, "v1") == 0 ? AL_CG_V1
				      : AL_CG_NONE;
	return true;
}

bool al_sb_observations_load(const char *cache_dir, const char *key,
		    al_sb_observed *obs)
{
	memset(obs, 0, sizeof(*obs));
	if (!dir_is_ours(cache_dir))
		return false;
	bool ok = false;
	pthread_mutex_lock(&lock);
	json_t *e = entry_for(cache_dir, KIND_MECH, key);
	json_t *mech = json_object_get(e, "mechanisms");
	json_t *cg = json_object_get(e, "cgroups");
	if (!json_is_object(mech) || !json_is_object(cg))
		goto out;
	for (size_t i = 0; i < sizeof(mech_names) / sizeof(mech_names[0]);
	     i++) {
		json_t *v = json_object_get(mech, mech_names[i]);
		if (!json_is_boolean(v))
			goto out;
		*mech_field(&obs->mech, i) = json_is_true(v);
	}
	json_t *v2 = json_object_get(cg, "v2"), *kill = json_object_get(cg, "kill");
	if (!json_is_boolean(v2) || !json_is_boolean(kill))
		goto out;
	obs->cg.v2_ok = json_is_true(v2);
	obs->cg.v2_kill = json_is_true(kill);
	json_t *sock = json_object_get(cg, "v1_socket");
	if (!json_is_boolean(sock))
		goto out;
	obs->cg.v1_socket = json_is_true(sock);
	for (int i = 0; i < AL_CG__N; i++)
		if (!parse_ver(json_object_get(cg, ctrl_names[i]),
			       &obs->cg.ver[i]))
			goto out;
	ok = true;
out:
	pthread_mutex_unlock(&lock);
	if (!ok)
		memset(obs, 0, sizeof(*obs));
	return ok;
}

void al_sb_observations_store(const char *cache_dir, const char *key,
		     const al_sb_observed *obs)
{
	if (!dir_is_ours(cache_dir))
		return;
	pthread_mutex_lock(&lock);
	memo_slot *slot = slot_for(cache_dir, KIND_MECH, key);
	json_t *mech = json_object();
	json_t *cg = json_pack("{s:b, s:b, s:b}", "v2", obs->cg.v2_ok, "kill",
			       obs->cg.v2_kill, "v1_socket", obs->cg.v1_socket);
	al_sb_mechanisms m = obs->mech;
	for (size_t i = 0; mech && i < sizeof(mech_names) / sizeof(mech_names[0]);
	     i++)
		json_object_set_new(mech, mech_names[i],
				    json_boolean(*mech_field(&m, i)));
	for (int i = 0; cg && i < AL_CG__N; i++)
		json_object_set_new(cg, ctrl_names[i],
				    json_string(al_sb_cgver_name(obs->cg.ver[i])));
	if (slot != NULL && mech != NULL && cg != NULL) {
		json_object_set_new(slot->doc, "mechanisms", mech);
		json_object_set_new(slot->doc, "cgroups", cg);
		touch_and_write(slot);
	} else {
		json_decref(mech);
		json_decref(cg);
	}
	pthread_mutex_unlock(&lock);
}

int al_sb_observations_inside_get(const char *cache_dir, const char *key,
			 const char *toolchain_id)
{
	if (!dir_is_ours(cache_dir))
		return -1;
	pthread_mutex_lock(&lock);
	json_t *e = entry_for(cache_dir, KIND_INSIDE, key);
	json_t *v = json_object_get(json_object_get(e, "inside"),
				    toolchain_id);
	int r = json_is_true(v) ? 1 : -1;
	pthread_mutex_unlock(&lock);
	return r;
}

void al_sb_observations_inside_put(const char *cache_dir, const char *key,
			  const char *toolchain_id)
{
	if (!dir_is_ours(cache_dir))
		return;
	pthread_mutex_lock(&lock);
	memo_slot *slot = slot_for(cache_dir, KIND_INSIDE, key);
	json_t *inside = slot != NULL ? json_object_get(slot->doc, "inside")
				      : NULL;
	if (slot != NULL && !json_is_object(inside)) {
		inside = json_object();
		if (json_object_set_new(slot->doc, "inside", inside) < 0)
			inside = NULL;
	}
	if (slot != NULL && inside != NULL &&
	    json_object_set_new(inside, toolchain_id, json_true()) == 0)
		touch_and_write(slot);
	pthread_mutex_unlock(&lock);
}

void al_sb_observations_invalidate(const char *cache_dir)
{
	if (cache_dir == NULL)
		return;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < MEMO_SLOTS; i++)
		slot_clear(&memo[i]);
	al_cache_files_remove(cache_dir, CACHE_PREFIX);
	char *old = al_strdup_printf("%s/" CACHE_OLD_NAME, cache_dir);
	if (old != NULL)
		unlink(old);
	free(old);
	pthread_mutex_unlock(&lock);
}
