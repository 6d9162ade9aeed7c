/* Streaming SHA-256 (see digest.h). */
#include "bundle/digest.h"

#include <errno.h>

#include <openssl/evp.h>

int al_digest_init(al_digest *d)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	d->ctx = c;
	if (c == NULL)
		return -ENOMEM;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		al_digest_clear(d);
		return -EIO;
	}
	return 0;
}

int al_digest_update(al_digest *d, const void *data, size_t len)
{
	if (d->ctx == NULL)
		return -EINVAL;
	if (len == 0)
		return 0;
	return EVP_DigestUpdate(d->ctx, data, len) == 1 ? 0 : -EIO;
}

int al_digest_final(al_digest *d, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	hex[0] = '\0';
	if (d->ctx == NULL)
		return -EINVAL;
	int ok = EVP_DigestFinal_ex(d->ctx, md, &n) == 1 && n == 32;
	al_digest_clear(d);
	if (!ok)
		return -EIO;
	for (unsigned int i = 0; i < n; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

void al_digest_clear(al_digest *d)
{
	EVP_MD_CTX_free(d->ctx);
	d->ctx = NULL;
}
