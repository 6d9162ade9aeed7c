/* Bearer tokens → tenants, stored as SHA-256 hashes. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <nettle/memops.h>

#include <airlock/json.h>

#include "core/util.h"
#include "host/config.h"
#include "server/auth.h"

#define TOKEN_RAW_BYTES 32u
#define TOKEN_HEX_BYTES (2u * TOKEN_RAW_BYTES)
/* Longer presented tokens are refused before hashing. */
#define TOKEN_MAX_BYTES 4096u

typedef struct auth_entry {
	unsigned char hash[32];
	char *tenant;
} auth_entry;

struct al_auth {
	auth_entry *entries;
	size_t n;
};

static bool hex_decode32(const char *hex, unsigned char out[32])
{
	if (strlen(hex) != 64)
		return false;
	for (size_t i = 0; i < 32; i++) {
		int hi = al_hex_digit(hex[2 * i]);
		int lo = al_hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

static int auth_add(al_auth *a, const unsigned char hash[32],
		    const char *tenant)
{
	auth_entry *e = realloc(a->entries, (a->n + 1) * sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	a->entries = e;
	e = &a->entries[a->n];
	memcpy(e->hash, hash, 32);
	if ((e->tenant = strdup(tenant)) == NULL)
		return -ENOMEM;
	a->n++;
	return 0;
}

void al_auth_free(al_auth *auth)
{
	if (auth == NULL)
		return;
	for (size_t i = 0; i < auth->n; i++)
		free(auth->entries[i].tenant);
	if (auth->entries != NULL)
		explicit_bzero(auth->entries, auth->n * sizeof(*auth->entries));
	free(auth->entries);
	free(auth);
}

int al_auth_from_config(const char *json, size_t len, const al_config *cfg,
			al_auth **out, al_error **err)
{
	json_error_t jerr;
	json_t *root = NULL, *tokens;
	al_auth *a = NULL;
	int rc = 0;

	*out = NULL;
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL || !json_is_object(root)) {
		rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "$",
				  "configuration is not a JSON object");
		goto out;
	}
	tokens = json_object_get(root, "tokens");
	if (tokens == NULL)
		goto out;
	if (!json_is_object(tokens) || json_object_size(tokens) == 0) {
		rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "tokens",
				  "tokens: expected a non-empty object of "
				  "sha256 hex -> tenant");
		goto out;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	size_t idx = 0;
	const char *key;
	json_t *val;
	json_object_foreach(tokens, key, val)
	{
		unsigned char hash[32];
		char path[48];
		/* Entries are named by position: a key is a token's hash and is
		 * not repeated in diagnostics. */
		snprintf(path, sizeof(path), "tokens.<%zu>", idx);
		if (!hex_decode32(key, hash)) {
			rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					  path,
					  "%s: key is not a sha256 hex digest",
					  path);
			goto out;
		}
		if (!json_is_string(val) ||
		    al_config_tenant(cfg, json_string_value(val)) == NULL) {
			rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					  path,
					  "%s: value must name a configured "
					  "tenant",
					  path);
			goto out;
		}
		if ((rc = auth_add(a, hash, json_string_value(val))) < 0)
			goto out;
		idx++;
	}
	*out = a;
	a = NULL;
out:
	al_auth_free(a);
	json_decref(root);
	return rc;
}

/* Reads an existing token file: a regular file of ours, not readable by
 * others, holding a token of the generated shape. */
static int read_token_file(int fd, char hex[TOKEN_HEX_BYTES + 1],
			   al_error **err)
{
	struct stat st;
	char buf[TOKEN_HEX_BYTES + 2];
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return al_error_set(err, AL_ERR_IO, errno, "token_file",
				    "cannot stat the token file");
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 ||
	    st.st_uid != geteuid())
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM,
				    "token_file",
				    "the token file must be a regular file "
				    "owned by this user with mode 0600");
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return al_error_set(err, AL_ERR_IO, errno, "token_file",
				    "cannot read the token file");
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if ((size_t)n != TOKEN_HEX_BYTES)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
				    "token_file",
				    "the token file does not hold a token");
	memcpy(hex, buf, TOKEN_HEX_BYTES);
	hex[TOKEN_HEX_BYTES] = '\0';
	explicit_bzero(buf, sizeof(buf));
	for (size_t i = 0; i < TOKEN_HEX_BYTES; i++)
		if (al_hex_digit(hex[i]) < 0)
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "token_file",
					    "the token file does not hold a "
					    "token");
	return 0;
}

static int create_token_file(int fd, char hex[TOKEN_HEX_BYTES + 1],
			     al_error **err)
{
	unsigned char raw[TOKEN_RAW_BYTES];
	static const char digits[] = "0123456789abcdef";
	size_t got = 0;
	int rc = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = al_error_set(err, AL_ERR_IO, errno, "getrandom",
					  "cannot draw random bytes");
			goto out;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		hex[2 * i] = digits[raw[i] >> 4];
		hex[2 * i + 1] = digits[raw[i] & 15];
	}
	hex[TOKEN_HEX_BYTES] = '\n';
	if (write(fd, hex, TOKEN_HEX_BYTES + 1) != TOKEN_HEX_BYTES + 1 ||
	    fsync(fd) < 0) {
		rc = al_error_set(err, AL_ERR_IO, errno, "token_file",
				  "cannot write the token file");
		goto out;
	}
	hex[TOKEN_HEX_BYTES] = '\0';
out:
	explicit_bzero(raw, sizeof(raw));
	return rc;
}

int al_auth_default_token(const char *state_dir, al_auth **out,
			  char **path_out, al_error **err)
{
	char hex[TOKEN_HEX_BYTES + 2] = {0};
	char *path = NULL;
	al_auth *a = NULL;
	int fd = -1, rc;

	*out = NULL;
	*path_out = NULL;
	if ((path = al_strdup_printf("%s/token", state_dir)) == NULL)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd >= 0) {
		rc = create_token_file(fd, hex, err);
		if (rc < 0)
			unlink(path); /* never leave a half-written token */
	} else if (errno == EEXIST) {
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		rc = fd < 0 ? al_error_set(err, AL_ERR_IO, errno, "token_file",
					   "cannot open the token file")
			    : read_token_file(fd, hex, err);
	} else {
		rc = al_error_set(err, AL_ERR_IO, errno, "token_file",
				  "cannot create the token file");
	}
	if (rc < 0)
		goto out;
	unsigned char hash[32];
	char hash_hex[65];
	al_sha256_hex(hex, TOKEN_HEX_BYTES, hash_hex);
	hex_decode32(hash_hex, hash);
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    auth_add(a, hash, "default") < 0) {
		rc = -ENOMEM;
		goto out;
	}
	*out = a;
	a = NULL;
	*path_out = path;
	path = NULL;
out:
	explicit_bzero(hex, sizeof(hex));
	if (fd >= 0)
		close(fd);
	al_auth_free(a);
	free(path);
	return rc;
}

const char *al_auth_tenant(const al_auth *auth, const char *authorization,
			   char principal[AL_AUTH_PRINCIPAL_LEN])
{
	static const char scheme[] = "Bearer ";
	unsigned char hash[32];
	char hash_hex[65];
	const char *token, *found = NULL;
	size_t len;

	if (auth == NULL || authorization == NULL ||
	    strncasecmp(authorization, scheme, sizeof(scheme) - 1) != 0)
		return NULL;
	token = authorization + sizeof(scheme) - 1;
	while (*token == ' ')
		token++;
	len = strlen(token);
	while (len > 0 && token[len - 1] == ' ')
		len--;
	if (len == 0 || len > TOKEN_MAX_BYTES)
		return NULL;
	al_sha256_hex(token, len, hash_hex);
	hex_decode32(hash_hex, hash);
	/* Every entry is compared, so timing does not tell which matched. */
	for (size_t i = 0; i < auth->n; i++)
		if (memeql_sec(hash, auth->entries[i].hash, 32))
			found = auth->entries[i].tenant;
	if (found != NULL && principal != NULL)
		snprintf(principal, AL_AUTH_PRINCIPAL_LEN, "token:%.12s",
			 hash_hex);
	explicit_bzero(hash, sizeof(hash));
	return found;
}

const char *al_auth_any_tenant(const al_auth *auth)
{
	return auth != NULL && auth->n > 0 ? auth->entries[0].tenant : NULL;
}
