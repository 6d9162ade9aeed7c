/* SHA-256, the one place for hashing: streaming (al_digest_*, see
 * hash.h) and one-shot (al_sha256_hex, declared in airlock/json.h). */
#include "core/hash.h"

#include <stddef.h>
#include <nettle/sha2.h>
#include <airlock/json.h>

#include <errno.h>
#include <string.h>

int al_digest_init(al_digest *d)
{
	sha256_init(&d->ctx);
	d->active = true;
	return 0;
}

int al_digest_update(al_digest *d, const void *data, size_t len)
{
	if (!d->active)
		return -EINVAL;
	if (len > 0)
		sha256_update(&d->ctx, len, data);
	return 0;
}

int al_digest_final(al_digest *d, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_SIZE];
	hex[0] = '\0';
	if (!d->active)
		return -EINVAL;
	sha256_digest(&d->ctx, sizeof(md), md);
	al_digest_clear(d);
	for (size_t i = 0; i < sizeof(md); i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

void al_digest_clear(al_digest *d)
{
	memset(&d->ctx, 0, sizeof(d->ctx));
	d->active = false;
}

/* al_sha256_hex: through GNU Nettle, not OpenSSL: OpenSSL 3 initialises its
 * provider machinery on a process's first digest, which every CLI run that
 * hashes a request or extends the audit chain would pay
 * (docs/performance.md); Nettle's sha256 has no global state.
 * tests/unit/test_sha256.c checks it against OpenSSL. */
void al_sha256_hex(const void *data, size_t len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;

	if (data == NULL)
		data = "";
	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof(md), md);
	for (size_t i = 0; i < sizeof(md); i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}
