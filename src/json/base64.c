/* Strict RFC 4648 base64; see base64.h for the accepted form. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "json/base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *al_base64_encode(const void *data, size_t len)
{
	const unsigned char *in = data;
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	size_t out_len = (len + 2) / 3 * 4;
	char *out = malloc(out_len + 1);
	if (out == NULL)
		return NULL;
	size_t o = 0;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
			     in[i + 2];
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

size_t al_base64_decoded_max(size_t text_len)
{
	return text_len / 4 * 3;
}

/* 0..63 for an alphabet symbol, -1 otherwise. */
static int symbol_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int al_base64_decode(const char *text, size_t text_len, unsigned char **out,
		     size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (text_len % 4 != 0)
		return -EINVAL;
	size_t pad = 0;
	if (text_len >= 4 && text[text_len - 1] == '=')
		pad = text[text_len - 2] == '=' ? 2 : 1;
	size_t n = al_base64_decoded_max(text_len) - pad;
	unsigned char *buf = malloc(n + 1);
	if (buf == NULL)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < text_len; i += 4) {
		int last = i + 4 == text_len;
		int v[4];
		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)text[i + k];
			if (last && c == '=' && k >= 4 - (int)pad) {
				v[k] = 0;
				continue;
			}
			v[k] = symbol_value(c);
			if (v[k] < 0)
				goto bad;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
			     (uint32_t)v[2] << 6 | (uint32_t)v[3];
		/* Non-zero bits under the padding would make a second text
		 * for the same bytes. */
		if (last && pad == 2 && (w & 0xffff) != 0)
			goto bad;
		if (last && pad == 1 && (w & 0xff) != 0)
			goto bad;
		size_t take = last ? 3 - pad : 3;
		buf[o++] = (unsigned char)(w >> 16);
		if (take > 1)
			buf[o++] = (unsigned char)(w >> 8);
		if (take > 2)
			buf[o++] = (unsigned char)w;
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}
