/* Judge0's additional_files (docs/compat.md): a zip archive unpacked
 * with libzip into /v1 request files, refusing what could escape or
 * exhaust: absolute names, "..", empty or "." segments, links and other
 * non-regular entries, more than AL_COMPAT_ZIP_MAX_FILES entries, more
 * than AL_COMPAT_ZIP_MAX_BYTES unpacked (checked on the declared sizes
 * before a byte is inflated, then on the bytes actually read). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zip.h>

#include "json/base64.h"
#include "server/compat.h"

/* libzip is opened on the first archive, not linked: it brings OpenSSL's
 * libcrypto, bzip2 and zlib into every daemon for a field few requests
 * use (the daemon's idle RSS, docs/performance.md). */
#define ZIP_FUNCTIONS(X)                                                      \
	X(zip_discard) X(zip_error_fini) X(zip_error_init) X(zip_fclose)      \
	X(zip_file_get_external_attributes) X(zip_fopen_index) X(zip_fread)   \
	X(zip_get_name) X(zip_get_num_entries) X(zip_open_from_source)        \
	X(zip_source_buffer_create) X(zip_source_free) X(zip_stat_index)

static struct {
#define ZIP_FIELD(name) __typeof__(name) *(name);
	ZIP_FUNCTIONS(ZIP_FIELD)
#undef ZIP_FIELD
} zl;

static pthread_once_t zl_once = PTHREAD_ONCE_INIT;
static bool zl_ok;

static void zl_load(void)
{
	void *lib = dlopen("libzip.so.4", RTLD_NOW | RTLD_LOCAL);
	bool ok = lib != NULL;
#define ZIP_RESOLVE(name)                                                    \
	if (ok)                                                               \
		ok = (zl.name = (__typeof__(zl.name))dlsym(lib, #name)) != NULL;
	ZIP_FUNCTIONS(ZIP_RESOLVE)
#undef ZIP_RESOLVE
	zl_ok = ok;
}

/* From here on every libzip call goes through the loaded library. */
#define zip_discard (zl.zip_discard)
#define zip_error_fini (zl.zip_error_fini)
#define zip_error_init (zl.zip_error_init)
#define zip_fclose (zl.zip_fclose)
#define zip_file_get_external_attributes (zl.zip_file_get_external_attributes)
#define zip_fopen_index (zl.zip_fopen_index)
#define zip_fread (zl.zip_fread)
#define zip_get_name (zl.zip_get_name)
#define zip_get_num_entries (zl.zip_get_num_entries)
#define zip_open_from_source (zl.zip_open_from_source)
#define zip_source_buffer_create (zl.zip_source_buffer_create)
#define zip_source_free (zl.zip_source_free)
#define zip_stat_index (zl.zip_stat_index)

/* A clean relative path: no leading '/', no empty, "." or ".."
 * segment, no control bytes or backslash. */
static bool clean_name(const char *n)
{
	if (n[0] == '\0' || n[0] == '/')
		return false;
	for (const char *p = n; *p != '\0';) {
		size_t k = strcspn(p, "/");
		if (k == 0 || (k == 1 && p[0] == '.') ||
		    (k == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < k; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f ||
			    p[i] == '\\')
				return false;
		p += k;
		if (*p == '/')
			p++;
	}
	return true;
}

/* The entry's Unix mode when the archive records one (0: none). */
static unsigned unix_mode(zip_t *z, zip_uint64_t i)
{
	zip_uint8_t os = 0;
	zip_uint32_t attr = 0;
	if (zip_file_get_external_attributes(z, i, 0, &os, &attr) < 0 ||
	    os != ZIP_OPSYS_UNIX)
		return 0;
	return attr >> 16;
}

int al_compat_unzip(const unsigned char *data, size_t len, json_t **out,
		    const char **why)
{
	zip_error_t zerr;
	*out = NULL;
	pthread_once(&zl_once, zl_load);
	if (!zl_ok) {
		*why = "cannot be unpacked here: libzip4 is not installed";
		return -ENOSYS;
	}
	zip_error_init(&zerr);
	zip_source_t *src = zip_source_buffer_create(data, len, 0, &zerr);
	zip_t *z = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS,
					      &zerr)
		       : NULL;
	zip_error_fini(&zerr);
	if (z == NULL) {
		zip_source_free(src);
		*why = "is not a zip archive";
		return -EINVAL;
	}
	json_t *files = json_array();
	unsigned char *buf = NULL;
	int rc = 0;
	zip_int64_t n = zip_get_num_entries(z, 0);
	uint64_t total = 0;
	size_t kept = 0;
	for (zip_int64_t i = 0; files != NULL && i < n && rc == 0; i++) {
		zip_stat_t st;
		const char *name = zip_get_name(z, (zip_uint64_t)i, 0);
		if (name == NULL || zip_stat_index(z, (zip_uint64_t)i, 0, &st) < 0 ||
		    !(st.valid & ZIP_STAT_SIZE)) {
			*why = "holds an unreadable entry";
			rc = -EINVAL;
			break;
		}
		size_t nl = strlen(name);
		unsigned mode = unix_mode(z, (zip_uint64_t)i);
		if (nl > 0 && name[nl - 1] == '/') {
			/* A directory: implied by the files' paths. */
			if ((mode & S_IFMT) != 0 && !S_ISDIR(mode)) {
				*why = "holds a special entry";
				rc = -EINVAL;
			}
			continue;
		}
		if (!clean_name(name) || nl > 1024) {
			*why = "holds an entry named outside the working "
			       "directory (absolute, .. or unclean)";
			rc = -EINVAL;
			break;
		}
		/* No file type recorded (some archivers write permission
		 * bits only): a regular file. */
		if ((mode & S_IFMT) != 0 && !S_ISREG(mode)) {
			*why = "holds a link or special file";
			rc = -EINVAL;
			break;
		}
		if (++kept > AL_COMPAT_ZIP_MAX_FILES) {
			*why = "holds too many files";
			rc = -EINVAL;
			break;
		}
		if (st.size > AL_COMPAT_ZIP_MAX_BYTES - total) {
			*why = "unpacks to too many bytes";
			rc = -EINVAL;
			break;
		}
		zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)i, 0);
		free(buf);
		buf = malloc(st.size + 1);
		if (f == NULL || buf == NULL) {
			if (f != NULL)
				zip_fclose(f);
			*why = "holds an entry that cannot be read";
			rc = f == NULL ? -EINVAL : -ENOMEM;
			break;
		}
		/* Read one byte past the declared size: an entry that
		 * inflates to more than it declared is refused. */
		zip_int64_t got = 0, r;
		while ((uint64_t)got <= st.size &&
		       (r = zip_fread(f, buf + got, st.size + 1 - (uint64_t)got)) > 0)
			got += r;
		zip_fclose(f);
		if ((uint64_t)got != st.size) {
			*why = "holds an entry whose size is not what it declares";
			rc = -EINVAL;
			break;
		}
		total += st.size;
		char *b64 = al_base64_encode(buf, st.size);
		json_t *fo = b64 ? json_pack("{s:s, s:s}", "path", name,
					     "content_b64", b64)
				 : NULL;
		free(b64);
		if (fo == NULL || json_array_append_new(files, fo) < 0) {
			rc = -ENOMEM;
			break;
		}
		if (mode & 0111)
			json_object_set_new(fo, "mode", json_string("0755"));
	}
	free(buf);
	zip_discard(z);
	if (rc < 0 || files == NULL) {
		json_decref(files);
		return rc < 0 ? rc : -ENOMEM;
	}
	*out = files;
	return 0;
}
