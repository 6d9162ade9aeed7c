/* Internal: SHA-256 over data that arrives in pieces (a file being read
 * or copied), through GNU Nettle like al_sha256_hex (src/core/hash.c:
 * no global state to initialise in every process). */
#ifndef AL_CORE_HASH_H
#define AL_CORE_HASH_H

#include <stdbool.h>
#include <stddef.h>

#include <nettle/sha2.h>

typedef struct al_digest {
	struct sha256_ctx ctx;
	bool active;
} al_digest;

/* 0 (kept as int so callers need not change if a failing backend
 * returns). */
int al_digest_init(al_digest *d);
/* 0, or -EINVAL when not initialised. */
int al_digest_update(al_digest *d, const void *data, size_t len);
/* Writes 64 lower-case hex digits and ends the digest. */
int al_digest_final(al_digest *d, char hex[65]);
/* Ends the digest without a result (safe after final). */
void al_digest_clear(al_digest *d);

#endif
