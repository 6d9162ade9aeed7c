/* SHA-256 through GNU Nettle, not OpenSSL: OpenSSL 3 initialises its
 * provider machinery on a process's first digest, which every CLI run that
 * hashes a request or extends the audit chain would pay
 * (docs/performance.md); Nettle's sha256 has no global state.
 * tests/unit/test_sha256.c checks it against OpenSSL. */
#include <stddef.h>

#include <nettle/sha2.h>

#include <airlock/json.h>

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
