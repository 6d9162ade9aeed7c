/* al_sha256_hex (GNU Nettle) against OpenSSL's SHA-256 over every length
 * that exercises the padding's one- and two-block cases, and the FIPS
 * 180-4 examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include <airlock/json.h>

static void openssl_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	assert_int_equal(EVP_Digest(data, len, md, &n, EVP_sha256(), NULL), 1);
	assert_int_equal(n, 32);
	for (unsigned i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static void test_known_vectors(void **state)
{
	(void)state;
	char hex[65];
	al_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223"
				 "b00361a396177a9cb410ff61f20015ad");
	al_sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb924"
				 "27ae41e4649b934ca495991b7852b855");
	al_sha256_hex(NULL, 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb924"
				 "27ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	al_sha256_hex(two, strlen(two), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039"
				 "a33ce45964ff2167f6ecedd419db06c1");
}

static void test_every_length_matches_openssl(void **state)
{
	(void)state;
	static unsigned char buf[4096 + 7];
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (unsigned char)x;
	}
	char mine[65], ref[65];
	for (size_t len = 0; len <= 300; len++) {
		al_sha256_hex(buf, len, mine);
		openssl_hex(buf, len, ref);
		assert_string_equal(mine, ref);
	}
	al_sha256_hex(buf, sizeof(buf), mine);
	openssl_hex(buf, sizeof(buf), ref);
	assert_string_equal(mine, ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_vectors),
		cmocka_unit_test(test_every_length_matches_openssl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
