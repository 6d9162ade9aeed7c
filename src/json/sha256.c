/* SHA-256 through OpenSSL's EVP interface. */
#include <stddef.h>

#include <openssl/evp.h>

#include <airlock/json.h>

void al_sha256_hex(const void *data, size_t len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	if (data == NULL)
		data = "";
	/* On an OpenSSL failure the digest is the empty string, which never
	 * equals a pinned 64-digit hash: a pin check then fails closed. */
	if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1 ||
	    md_len != 32) {
		hex[0] = '\0';
		return;
	}
	for (unsigned int i = 0; i < md_len; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}
