/* The container provider's runtime variants: each owns only what is its
 * own — the executable, its global options, whether it applies the OCI
 * seccomp section — and inherits the lifecycle (docs/containers.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/container.h"
#include "core/util.h"

static const char *const no_args[] = {NULL};
/* gVisor: the ptrace platform (KVM is not available everywhere), its
 * own network stack with loopback only, and the spec's seccomp filter
 * applied inside its kernel. */
static const char *const runsc_args[] = {"--platform=ptrace", "--network=none",
					 "--oci-seccomp", NULL};

static const al_ct_variant variants[] = {
	{.name = "runc", .binary = "runc", .global_args = no_args,
	 .oci_seccomp = true, .preserve_fds = true, .proc_paths = true,
	 .seccomp_errno = true},
	{.name = "crun", .binary = "crun", .global_args = no_args,
	 .oci_seccomp = true, .preserve_fds = true, .proc_paths = true,
	 .seccomp_errno = true},
	{.name = "runsc", .binary = "runsc", .global_args = runsc_args,
	 .oci_seccomp = true, .preserve_fds = false,
	 .unenforced = AL_LIMIT_CPU_MS | AL_LIMIT_MEMORY_BYTES | AL_LIMIT_PIDS},
	/* the spec's seccomp section goes to the Engine as the profile */
	{.name = "docker", .binary = "dockerd", .global_args = no_args,
	 .engine = true, .oci_seccomp = true, .seccomp_errno = true},
};

const al_ct_variant *al_ct_variant_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(variants) / sizeof(variants[0]);
	     i++)
		if (strcmp(variants[i].name, name) == 0)
			return &variants[i];
	return NULL;
}

const char *al_ct_variant_names(void)
{
	return "runc, crun, runsc, docker";
}

static char *in_dir(const char *dir, size_t len, const char *binary)
{
	char *p = al_strdup_printf("%.*s/%s", (int)len, dir, binary);
	if (p != NULL && access(p, X_OK) == 0)
		return p;
	free(p);
	return NULL;
}

char *al_ct_variant_locate(const al_ct_variant *v)
{
	const char *path = getenv("PATH");
	for (const char *s = path; s != NULL && *s != '\0';) {
		const char *e = strchr(s, ':');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len > 0 && s[0] == '/') {
			char *p = in_dir(s, len, v->binary);
			if (p != NULL)
				return p;
		}
		s = e ? e + 1 : NULL;
	}
	/* root's runtimes live in sbin, which a user's PATH may lack */
	static const char *const fixed[] = {"/usr/local/sbin", "/usr/sbin",
					    "/usr/bin", "/sbin"};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		char *p = in_dir(fixed[i], strlen(fixed[i]), v->binary);
		if (p != NULL)
			return p;
	}
	return NULL;
}

char **al_ct_variant_argv(const al_ct_variant *v, const char *binary,
			  const char *root, const char *const *sub)
{
	size_t n = 3;
	for (const char *const *a = v->global_args; *a; a++)
		n++;
	for (const char *const *a = sub; *a; a++)
		n++;
	char **argv = calloc(n + 1, sizeof(*argv));
	if (argv == NULL)
		return NULL;
	size_t i = 0;
	argv[i++] = strdup(binary);
	argv[i++] = strdup("--root");
	argv[i++] = strdup(root);
	for (const char *const *a = v->global_args; *a; a++)
		argv[i++] = strdup(*a);
	for (const char *const *a = sub; *a; a++)
		argv[i++] = strdup(*a);
	for (size_t j = 0; j < i; j++)
		if (argv[j] == NULL) {
			al_ct_strv_free(argv);
			return NULL;
		}
	return argv;
}
