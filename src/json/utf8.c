/* Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates,
 * nothing above U+10FFFF, no truncated sequences. */
#include <stdbool.h>
#include <stddef.h>

#include <airlock/json.h>

bool al_utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t need;
		unsigned char lo = 0x80, hi = 0xbf; /* bounds of the 2nd byte */
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0; /* overlong below U+0800 */
			else if (c == 0xed)
				hi = 0x9f; /* surrogates U+D800..DFFF */
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90; /* overlong below U+10000 */
			else if (c == 0xf4)
				hi = 0x8f; /* above U+10FFFF */
		} else {
			return false; /* continuation byte, 0xc0/0xc1, >= 0xf5 */
		}
		if (len - i <= need)
			return false;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t k = 2; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		i += need + 1;
	}
	return true;
}
