/* Internal: SHA-256 over data that arrives in pieces (a file being read
 * or copied), through OpenSSL's EVP interface. */
#ifndef AL_BUNDLE_DIGEST_H
#define AL_BUNDLE_DIGEST_H

#include <stddef.h>

typedef struct al_digest {
	void *ctx; /* EVP_MD_CTX */
} al_digest;

/* 0 or -ENOMEM / -EIO. */
int al_digest_init(al_digest *d);
int al_digest_update(al_digest *d, const void *data, size_t len);
/* Writes 64 lower-case hex digits and releases the context. */
int al_digest_final(al_digest *d, char hex[65]);
/* Releases the context without a result (safe after final). */
void al_digest_clear(al_digest *d);

#endif
