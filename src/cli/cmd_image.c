/* airlock image: the container provider's images (docs/containers.md,
 * "Images").
 *
 *   image build NAME --packages P[,P...]   a Debian root (mmdebstrap)
 *   image import NAME SOURCE               an OCI layout (umoci), or a
 *                                          docker-archive tar (skopeo)
 *   image list [--json]                    names and digests */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "container/container.h"
#include "core/util.h"
#include "child/rundir.h"

static const char image_usage[] =
	"usage: airlock image build NAME [--packages P[,P...]] [--suite S]\n"
	"                           [--mirror URL] [--variant V]\n"
	"       airlock image import NAME SOURCE\n"
	"       airlock image list [--json]\n"
	"\n"
	"build: a Debian root filesystem (minbase and the packages) made\n"
	"  with mmdebstrap from the host's configured mirror and suite;\n"
	"  --variant: mmdebstrap's (extract, custom, essential, apt,\n"
	"  required, minbase, buildd, important, standard).\n"
	"import: SOURCE is an OCI image layout directory (DIR or DIR:TAG,\n"
	"  unpacked with umoci), or a docker-archive tarball (`docker save`;\n"
	"  converted with skopeo first).\n"
	"Images live under STATE_DIR/images, named by the SHA-256 of their\n"
	"tree, never changed once stored; a name points at one digest.\n"
	"\n"
	"exit status: 0, 2 on a usage error, 125 when the image could not be\n"
	"made or stored.\n";

static char *find_tool(const char *name)
{
	const char *dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
			      "/usr/bin", "/sbin", "/bin"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *p = al_strdup_printf("%s/%s", dirs[i], name);
		if (p != NULL && access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

/* Runs a tool; its output is shown only when it fails. */
static int tool(char **argv, const char *what)
{
	char *tool_path = find_tool(argv[0]);
	if (tool_path == NULL) {
		cli_error("%s is not installed (scripts/install-deps.sh)",
			  argv[0]);
		return -ENOENT;
	}
	char *given = argv[0];
	argv[0] = tool_path;
	char *out = NULL;
	int rc = al_ct_run_quiet(argv, &out, 4000);
	argv[0] = given;
	free(tool_path);
	if (rc != 0) {
		cli_error("%s failed (%d)%s%s", what, rc, out ? ":\n" : "",
			  out ? out : "");
		rc = rc < 0 ? rc : -EIO;
	}
	free(out);
	return rc;
}

static void remove_tmp(const char *tmp)
{
	char *copy = strdup(tmp);
	char *slash = copy ? strrchr(copy, '/') : NULL;
	if (slash == NULL) {
		free(copy);
		return;
	}
	*slash = '\0';
	int fd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		al_remove_tree_at(fd, slash + 1);
		close(fd);
	}
	free(copy);
}

/* The host's Debian suite and mirror: VERSION_CODENAME and the first
 * URIs (deb822) or deb line. */
static void host_debian(char *suite, size_t slen, char *mirror, size_t mlen)
{
	snprintf(suite, slen, "stable");
	snprintf(mirror, mlen, "http://deb.debian.org/debian");
	FILE *f = fopen("/etc/os-release", "re");
	char line[512];
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VERSION_CODENAME=", 17) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(suite, slen, "%.63s", line + 17);
		}
	if (f)
		fclose(f);
	const char *files[] = {"/etc/apt/sources.list.d/debian.sources",
			       "/etc/apt/sources.list"};
	for (size_t i = 0; i < 2; i++) {
		f = fopen(files[i], "re");
		while (f && fgets(line, sizeof(line), f)) {
			char url[400];
			if (sscanf(line, "URIs: %399s", url) == 1 ||
			    sscanf(line, "deb %399s", url) == 1) {
				if (strncmp(url, "http", 4) == 0) {
					snprintf(mirror, mlen, "%s", url);
					fclose(f);
					return;
				}
			}
		}
		if (f)
			fclose(f);
	}
}

static int finish(const char *store, const char *name, const char *rootfs,
		  const char *source)
{
	char digest[65];
	al_error *err = NULL;
	if (al_ct_image_store(store, name, rootfs, source, digest, &err) < 0) {
		cli_error("%s", al_error_get_message(err));
		al_error_free(err);
		return CLI_EXIT_REFUSED;
	}
	printf("%s sha256:%s\n", name, digest);
	return 0;
}

static int image_build(const char *store, int argc, char **argv)
{
	const char *name = NULL, *suite_opt = NULL, *mirror_opt = NULL;
	const char *variant = "minbase";
	char packages[2048] = "";
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--packages") == 0 && i + 1 < argc) {
			const char *p = argv[++i];
			size_t n = strlen(packages);
			snprintf(packages + n, sizeof(packages) - n, "%s%s",
				 n ? "," : "", p);
		} else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc)
			suite_opt = argv[++i];
		else if (strcmp(argv[i], "--mirror") == 0 && i + 1 < argc)
			mirror_opt = argv[++i];
		else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc)
			variant = argv[++i];
		else if (name == NULL && argv[i][0] != '-')
			name = argv[i];
		else {
			fputs(image_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (!al_ct_image_name_ok(name)) {
		cli_error("an image name is [a-z0-9._-], 1 to 64 bytes");
		return CLI_EXIT_USAGE;
	}
	for (const char *p = packages; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      strchr(",.+-:", *p))) {
			cli_error("--packages: a Debian package name is "
				  "[a-z0-9.+-]");
			return CLI_EXIT_USAGE;
		}
	static const char *const variants[] = {
		"extract", "custom",   "essential", "apt",	"required",
		"minbase", "buildd",   "important", "standard", NULL};
	bool known = false;
	for (const char *const *v = variants; *v && !known; v++)
		known = strcmp(*v, variant) == 0;
	if (!known) {
		cli_error("--variant: one of mmdebstrap's variants");
		return CLI_EXIT_USAGE;
	}
	char variant_opt[32];
	snprintf(variant_opt, sizeof(variant_opt), "--variant=%s", variant);
	char suite[64], mirror[400];
	host_debian(suite, sizeof(suite), mirror, sizeof(mirror));
	if (suite_opt)
		snprintf(suite, sizeof(suite), "%s", suite_opt);
	if (mirror_opt)
		snprintf(mirror, sizeof(mirror), "%s", mirror_opt);
	char *tmp = NULL;
	if (al_ct_image_tmpdir(store, &tmp) < 0) {
		cli_error("cannot create a directory under %s", store);
		return CLI_EXIT_REFUSED;
	}
	char *rootfs = al_strdup_printf("%s/rootfs", tmp);
	char *include = al_strdup_printf("--include=%s", packages);
	char *argv2[] = {"mmdebstrap", "--quiet", variant_opt,
			 suite, rootfs, mirror, NULL, NULL};
	if (packages[0]) {
		/* the packages go before the positional arguments */
		memmove(argv2 + 4, argv2 + 3, 4 * sizeof(argv2[0]));
		argv2[3] = include;
	}
	int rc = rootfs && include ? tool(argv2, "mmdebstrap") : -ENOMEM;
	char *source = al_strdup_printf("mmdebstrap %s %s %s %s", variant,
					suite, mirror, packages);
	int ret = rc == 0 ? finish(store, name, rootfs, source ? source : "")
			  : CLI_EXIT_REFUSED;
	remove_tmp(tmp);
	free(source);
	free(include);
	free(rootfs);
	free(tmp);
	return ret;
}

static int image_import(const char *store, int argc, char **argv)
{
	if (argc != 2 || !al_ct_image_name_ok(argv[0])) {
		fputs(image_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	const char *name = argv[0];
	char src[PATH_MAX];
	snprintf(src, sizeof(src), "%s", argv[1]);
	char *tag = "latest";
	char *colon = strrchr(src, ':');
	struct stat st;
	if (colon != NULL && stat(src, &st) < 0) {
		*colon = '\0';
		tag = colon + 1;
	}
	if (stat(src, &st) < 0) {
		cli_error("%s: %s", src, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	char *tmp = NULL;
	if (al_ct_image_tmpdir(store, &tmp) < 0) {
		cli_error("cannot create a directory under %s", store);
		return CLI_EXIT_REFUSED;
	}
	char *layout = NULL;
	int rc = 0;
	char marker[PATH_MAX + 16];
	snprintf(marker, sizeof(marker), "%s/oci-layout", src);
	if (S_ISDIR(st.st_mode) && access(marker, F_OK) == 0) {
		layout = al_strdup_printf("%s:%s", src, tag);
	} else {
		/* another format: skopeo makes an OCI layout of it */
		char *from = al_strdup_printf("docker-archive:%s", src);
		char *to = al_strdup_printf("oci:%s/layout:latest", tmp);
		char *argv2[] = {"skopeo", "copy", "--quiet", from, to, NULL};
		rc = from && to ? tool(argv2, "skopeo copy") : -ENOMEM;
		layout = al_strdup_printf("%s/layout:latest", tmp);
		free(from);
		free(to);
	}
	char *bundle = al_strdup_printf("%s/bundle", tmp);
	char *rootfs = al_strdup_printf("%s/bundle/rootfs", tmp);
	if (rc == 0) {
		char *argv3[] = {"umoci", "unpack", "--image", layout, bundle,
				 NULL};
		rc = layout && bundle ? tool(argv3, "umoci unpack") : -ENOMEM;
	}
	char *source = al_strdup_printf("import %s:%s", src, tag);
	int ret = rc == 0 ? finish(store, name, rootfs, source ? source : "")
			  : CLI_EXIT_REFUSED;
	remove_tmp(tmp);
	free(source);
	free(layout);
	free(bundle);
	free(rootfs);
	free(tmp);
	return ret;
}

static int image_list(const char *store, int argc, char **argv)
{
	bool as_json = argc == 1 && strcmp(argv[0], "--json") == 0;
	if (argc > 1 || (argc == 1 && !as_json)) {
		fputs(image_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	json_t *a = NULL;
	if (al_ct_image_list(store, &a) < 0)
		return CLI_EXIT_REFUSED;
	if (as_json) {
		char *s = json_dumps(a, JSON_INDENT(2));
		if (s)
			puts(s);
		free(s);
	} else {
		for (size_t i = 0; i < json_array_size(a); i++) {
			const json_t *v = json_array_get(a, i);
			printf("%s\tsha256:%s\n",
			       json_string_value(json_object_get(v, "name")),
			       json_string_value(json_object_get(v, "digest")));
		}
	}
	json_decref(a);
	return 0;
}

int cmd_image(const cli_globals *g, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		fputs(image_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	if (mkdir(g->state_dir, 0700) < 0 && errno != EEXIST) {
		cli_error("cannot create %s: %s", g->state_dir, strerror(errno));
		return CLI_EXIT_REFUSED;
	}
	char *store = al_strdup_printf("%s/images", g->state_dir);
	if (store == NULL)
		return CLI_EXIT_REFUSED;
	int rc;
	if (strcmp(argv[1], "build") == 0)
		rc = image_build(store, argc - 2, argv + 2);
	else if (strcmp(argv[1], "import") == 0)
		rc = image_import(store, argc - 2, argv + 2);
	else if (strcmp(argv[1], "list") == 0)
		rc = image_list(store, argc - 2, argv + 2);
	else {
		fputs(image_usage, stderr);
		rc = CLI_EXIT_USAGE;
	}
	free(store);
	return rc;
}
