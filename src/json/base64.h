/* Internal: RFC 4648 base64 (standard alphabet, '=' padding).
 *
 * Decoding is strict so one byte string has exactly one accepted text:
 * the length must be a multiple of 4, padding is required, no whitespace
 * or line breaks, '=' only at the end, and the unused bits of the last
 * symbol must be zero.
 */
#ifndef AL_JSON_BASE64_H
#define AL_JSON_BASE64_H

#include <stddef.h>

/* Encodes len bytes; returns a new NUL-terminated string or NULL (ENOMEM,
 * or a length whose encoding would overflow). */
char *al_base64_encode(const void *data, size_t len);

/* Decoded length of a text of text_len characters, an upper bound before
 * padding is considered. */
size_t al_base64_decoded_max(size_t text_len);

/* Decodes text[0..text_len).  On success *out is a new buffer of *out_len
 * bytes plus a terminating NUL (not counted).  Returns 0, -EINVAL for a
 * text that is not canonical base64, or -ENOMEM. */
int al_base64_decode(const char *text, size_t text_len, unsigned char **out,
		     size_t *out_len);

#endif
