/* Requests in JSON: the strict parser refuses every malformed form with the
 * right field path and never echoes the value; valid requests round-trip;
 * describe() leaks no code, stdin, env values or file contents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/json.h>

#define MARK "S3CRETVALUE"
#define BASE "\"language\":\"python\",\"code\":\"print(1)\""

typedef struct bad_case {
	const char *json;
	size_t len;	    /* 0: strlen(json) */
	const char *reason; /* expected field path */
	const char *secret; /* must not appear in reason or message; NULL: MARK */
} bad_case;

static const bad_case bad_cases[] = {
	/* body: syntax, encoding, shape, depth */
	{MARK, 0, "body", NULL},
	{"", 0, "body", NULL},
	{"{" BASE "} " MARK, 0, "body", NULL},
	{"{" BASE "}{}", 0, "body", NULL},
	{"{\"language\":\"" MARK "\",\"language\":\"python\",\"code\":\"\"}", 0,
	 "body", NULL},
	{"[\"" MARK "\"]", 0, "body", NULL},
	{"\"" MARK "\"", 0, "body", NULL},
	{"{" BASE ",\"stdin\":\"\xff" MARK "\"}", 0, "body", NULL},
	{"{" BASE ",\"stdin\":\"\xc0\xaf" MARK "\"}", 0, "body", NULL},
	{"{" BASE ",\"stdin\":\"\xed\xa0\x80" MARK "\"}", 0, "body", NULL},
	{"{" BASE ",\"stdin\":\"\\ud800" MARK "\"}", 0, "body", NULL},
	{"{\"" MARK "\\u0000\":1," BASE "}", 0, "body", NULL},
	{"{" BASE ",\"stdin\":\"a\0" MARK "\"}", sizeof("{" BASE ",\"stdin\":\"a\0" MARK "\"}") - 1,
	 "body", NULL},
	{"{" BASE ",\"argv\":[[[[[[[[\"" MARK "\"]]]]]]]]}", 0, "body", NULL},
	{"{" BASE ",\"limits\":{\"wall_ms\":99999999999999999999999}}", 0,
	 "body", "99999999999999999999999"},
	{"{" BASE ",\"code\":\"" MARK "\"}", 0, "body", NULL},
	/* top level */
	{"{" BASE ",\"" MARK "\":1}", 0, "request", NULL},
	{"{" BASE ",\"//\":\"" MARK "\"}", 0, "request", NULL},
	{"{\"code\":\"" MARK "\"}", 0, "language", NULL},
	{"{\"language\":\"python\",\"stdin\":\"" MARK "\"}", 0, "code", NULL},
	{"{\"language\":31337,\"code\":\"\"}", 0, "language", "31337"},
	{"{\"language\":\"" MARK "\",\"code\":\"\"}", 0, "language", NULL},
	{"{\"language\":\"py thon" MARK "\",\"code\":\"\"}", 0, "language", NULL},
	{"{\"language\":\"abcdefghijklmnopqrstuvwxyz" MARK "\",\"code\":\"\"}", 0,
	 "language", NULL},
	{"{\"language\":\"py\\u0000" MARK "\",\"code\":\"\"}", 0, "language",
	 NULL},
	{"{\"language\":\"\",\"code\":\"\"}", 0, "language", NULL},
	{"{\"language\":\"python\",\"code\":[\"" MARK "\"]}", 0, "code", NULL},
	{"{\"language\":\"python\",\"code\":\"x\\u0000" MARK "\"}", 0, "code",
	 NULL},
	{"{" BASE ",\"code_sha256\":\"" MARK "\"}", 0, "code_sha256", NULL},
	{"{" BASE ",\"code_sha256\":"
	 "\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\"}",
	 0, "code_sha256", "E3B0C442"},
	{"{" BASE ",\"code_sha256\":"
	 "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}",
	 0, "code_sha256", "e3b0c442"},
	{"{" BASE ",\"code_sha256\":4242}", 0, "code_sha256", "4242"},
	{"{" BASE ",\"argv\":\"" MARK "\"}", 0, "argv", NULL},
	{"{" BASE ",\"argv\":[\"ok\",31337]}", 0, "argv[1]", "31337"},
	{"{" BASE ",\"argv\":[\"a\\u0000" MARK "\"]}", 0, "argv[0]", NULL},
	{"{" BASE ",\"argv\":null}", 0, "argv", NULL},
	{"{" BASE ",\"stdin\":\"x\",\"stdin_b64\":\"" MARK "\"}", 0, "stdin",
	 NULL},
	{"{" BASE ",\"stdin_b64\":\"" MARK "\"}", 0, "stdin_b64", NULL},
	{"{" BASE ",\"stdin_b64\":\"S3CRETVALU=A\"}", 0, "stdin_b64", "S3CR"},
	{"{" BASE ",\"stdin_b64\":\"S3CR ETVA\"}", 0, "stdin_b64", "S3CR"},
	{"{" BASE ",\"stdin_b64\":\"Zh==\"}", 0, "stdin_b64", "Zh=="},
	{"{" BASE ",\"stdin\":true}", 0, "stdin", NULL},
	/* files */
	{"{" BASE ",\"files\":{\"" MARK "\":1}}", 0, "files", NULL},
	{"{" BASE ",\"files\":[\"" MARK "\"]}", 0, "files[0]", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"" MARK
	 "\":1}]}",
	 0, "files[0]", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"/etc/" MARK "\",\"content\":\"\"}]}",
	 0, "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"../" MARK "\",\"content\":\"\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a/../" MARK "\",\"content\":\"\"}]}",
	 0, "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"./" MARK "\",\"content\":\"\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a//" MARK "\",\"content\":\"\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"" MARK "/\",\"content\":\"\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\\u0000" MARK "\",\"content\":\"\"}]}",
	 0, "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"\",\"content\":\"" MARK "\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\\n" MARK "\",\"content\":\"\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"" MARK "*\",\"content\":\"\"}]}", 0,
	 "files[0].path", NULL},
	{"{" BASE ",\"files\":[{\"content\":\"" MARK "\"}]}", 0, "files[0].path",
	 NULL},
	{"{" BASE ",\"files\":[{\"path\":\"" MARK "\",\"content\":\"\"},"
	 "{\"path\":\"" MARK "\",\"content\":\"\"}]}",
	 0, "files[1].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"" MARK "\",\"content\":\"\"},"
	 "{\"path\":\"" MARK "/x\",\"content\":\"\"}]}",
	 0, "files[1].path", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":\"" MARK
	 "\",\"content_b64\":\"\"}]}",
	 0, "files[0].content", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"" MARK "\"}]}", 0, "files[0].content",
	 NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":31337}]}", 0,
	 "files[0].content", "31337"},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content_b64\":\"" MARK "\"}]}",
	 0, "files[0].content_b64", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":\"" MARK
	 "\"}]}",
	 0, "files[0].mode", NULL},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":"
	 "\"4755\"}]}",
	 0, "files[0].mode", "4755"},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":"
	 "\"0648\"}]}",
	 0, "files[0].mode", "0648"},
	{"{" BASE ",\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":420}]}",
	 0, "files[0].mode", "420"},
	/* outputs */
	{"{" BASE ",\"outputs\":\"" MARK "\"}", 0, "outputs", NULL},
	{"{" BASE ",\"outputs\":[\"/" MARK "\"]}", 0, "outputs[0]", NULL},
	{"{" BASE ",\"outputs\":[\"ok\",\"**/" MARK "\"]}", 0, "outputs[1]", NULL},
	{"{" BASE ",\"outputs\":[\"[" MARK "]\"]}", 0, "outputs[0]", NULL},
	{"{" BASE ",\"outputs\":[\"../" MARK "\"]}", 0, "outputs[0]", NULL},
	{"{" BASE ",\"outputs\":[\"" MARK "\",\"" MARK "\"]}", 0, "outputs[1]",
	 NULL},
	{"{" BASE ",\"outputs\":[31337]}", 0, "outputs[0]", "31337"},
	/* enums */
	{"{" BASE ",\"purpose\":\"" MARK "\"}", 0, "purpose", NULL},
	{"{" BASE ",\"purpose\":\"SCRIPT\"}", 0, "purpose", "SCRIPT"},
	{"{" BASE ",\"isolation\":\"" MARK "\"}", 0, "isolation", NULL},
	{"{" BASE ",\"isolation\":true}", 0, "isolation", NULL},
	/* limits */
	{"{" BASE ",\"limits\":[\"" MARK "\"]}", 0, "limits", NULL},
	{"{" BASE ",\"limits\":{\"" MARK "\":1}}", 0, "limits", NULL},
	{"{" BASE ",\"limits\":{\"wall_ms\":-31337}}", 0, "limits.wall_ms",
	 "31337"},
	{"{" BASE ",\"limits\":{\"wall_ms\":0}}", 0, "limits.wall_ms", NULL},
	{"{" BASE ",\"limits\":{\"wall_ms\":1.5}}", 0, "limits.wall_ms", "1.5"},
	{"{" BASE ",\"limits\":{\"wall_ms\":1e3}}", 0, "limits.wall_ms", "1e3"},
	{"{" BASE ",\"limits\":{\"wall_ms\":\"31337\"}}", 0, "limits.wall_ms",
	 "31337"},
	{"{" BASE ",\"limits\":{\"wall_ms\":86400001}}", 0, "limits.wall_ms",
	 "86400001"},
	{"{" BASE ",\"limits\":{\"cpu_ms\":null}}", 0, "limits.cpu_ms", NULL},
	{"{" BASE ",\"limits\":{\"memory_bytes\":1099511627777}}", 0,
	 "limits.memory_bytes", "1099511627777"},
	{"{" BASE ",\"limits\":{\"pids\":true}}", 0, "limits.pids", NULL},
	{"{" BASE ",\"limits\":{\"output_bytes\":67108865}}", 0,
	 "limits.output_bytes", "67108865"},
	{"{" BASE ",\"limits\":{\"open_files\":9223372036854775807}}", 0,
	 "limits.open_files", "9223372036854775807"},
	/* grant */
	{"{" BASE ",\"grant\":\"" MARK "\"}", 0, "grant", NULL},
	{"{" BASE ",\"grant\":{\"" MARK "\":true}}", 0, "grant", NULL},
	{"{" BASE ",\"grant\":{\"network\":\"" MARK "\"}}", 0, "grant.network",
	 NULL},
	{"{" BASE ",\"grant\":{\"workspace\":\"" MARK "\"}}", 0,
	 "grant.workspace", NULL},
	{"{" BASE ",\"grant\":{\"streaming\":\"" MARK "\"}}", 0,
	 "grant.streaming", NULL},
	{"{" BASE ",\"grant\":{\"secrets\":\"" MARK "\"}}", 0, "grant.secrets",
	 NULL},
	{"{" BASE ",\"grant\":{\"secrets\":[\"OK\",\"" MARK "/X\"]}}", 0,
	 "grant.secrets[1]", NULL},
	{"{" BASE ",\"grant\":{\"secrets\":[\"" MARK "\",\"" MARK "\"]}}", 0,
	 "grant.secrets[1]", NULL},
	/* a secret that would become a reserved variable */
	{"{" BASE ",\"grant\":{\"secrets\":[\"PATH\"]}}", 0,
	 "grant.secrets[0]", NULL},
	{"{" BASE ",\"grant\":{\"secrets\":[\"OK\",\"airlock-run-id\"]}}", 0,
	 "grant.secrets[1]", NULL},
	{"{" BASE ",\"grant\":{\"secrets\":[\"ld_preload\"]}}", 0,
	 "grant.secrets[0]", NULL},
	/* name: a plain file name */
	{"{" BASE ",\"name\":\"a/" MARK "\"}", 0, "name", NULL},
	{"{" BASE ",\"name\":\"..\"}", 0, "name", NULL},
	{"{" BASE ",\"name\":\"\"}", 0, "name", NULL},
	{"{" BASE ",\"name\":\"x\\u0001\"}", 0, "name", NULL},
	{"{" BASE ",\"name\":7}", 0, "name", NULL},
	/* env: always reason "env", never the name */
	{"{" BASE ",\"env\":[\"" MARK "\"]}", 0, "env", NULL},
	{"{" BASE ",\"env\":{\"1" MARK "\":\"v\"}}", 0, "env", NULL},
	{"{" BASE ",\"env\":{\"" MARK "-X\":\"v\"}}", 0, "env", NULL},
	{"{" BASE ",\"env\":{\"\":\"" MARK "\"}}", 0, "env", NULL},
	{"{" BASE ",\"env\":{\"LD_PRELOAD\":\"/tmp/" MARK ".so\"}}", 0, "env",
	 "LD_PRELOAD"},
	{"{" BASE ",\"env\":{\"AIRLOCK_RUN_ID\":\"" MARK "\"}}", 0, "env",
	 "AIRLOCK_RUN_ID"},
	{"{" BASE ",\"env\":{\"PATH\":\"/" MARK "\"}}", 0, "env", NULL},
	{"{" BASE ",\"env\":{\"" MARK "\":31337}}", 0, "env", "31337"},
	{"{" BASE ",\"env\":{\"" MARK "\":\"a\\u0000b\"}}", 0, "env", NULL},
	/* idempotency key */
	{"{" BASE ",\"idempotency_key\":\"\"}", 0, "idempotency_key", NULL},
	{"{" BASE ",\"idempotency_key\":\"" MARK "\\u00e9\"}", 0,
	 "idempotency_key", NULL},
	{"{" BASE ",\"idempotency_key\":\"\\t" MARK "\"}", 0, "idempotency_key",
	 NULL},
	{"{" BASE ",\"idempotency_key\":31337}", 0, "idempotency_key", "31337"},
	/* toolchain: keys are request data, so the reason is "toolchain" */
	{"{" BASE ",\"toolchain\":[\"" MARK "\"]}", 0, "toolchain", NULL},
	{"{" BASE ",\"toolchain\":{\"Py " MARK "\":\">=3\"}}", 0, "toolchain",
	 NULL},
	{"{" BASE ",\"toolchain\":{\"python\":\">=" MARK "\"}}", 0, "toolchain",
	 NULL},
	{"{" BASE ",\"toolchain\":{\"python\":\"=>3.10\"}}", 0, "toolchain",
	 "=>3.10"},
	{"{" BASE ",\"toolchain\":{\"python\":\">=3.10,\"}}", 0, "toolchain",
	 ">=3.10,"},
	{"{" BASE ",\"toolchain\":{\"python\":\"3..1\"}}", 0, "toolchain",
	 "3..1"},
	{"{" BASE ",\"toolchain\":{\"python\":310}}", 0, "toolchain", "310"},
	/* image: a name, never a path */
	{"{" BASE ",\"image\":\"../" MARK "\"}", 0, "image", NULL},
	{"{" BASE ",\"image\":\"/usr/" MARK "\"}", 0, "image", NULL},
	{"{" BASE ",\"image\":\"" MARK "\"}", 0, "image", NULL},
	{"{" BASE ",\"image\":\".x\"}", 0, "image", NULL},
	{"{" BASE ",\"image\":31337}", 0, "image", "31337"},
};

static void check_refused(const char *json, size_t len, const char *reason,
			  const char *secret, size_t index)
{
	al_request *req = (al_request *)1;
	al_error *err = NULL;
	int rc = al_request_from_json(json, len, &req, &err);
	if (rc >= 0 || req != NULL || err == NULL) {
		print_error("case %zu was accepted\n", index);
		fail();
	}
	if (al_error_get_code(err) != AL_ERR_INVALID_REQUEST ||
	    strcmp(al_error_get_reason(err), reason) != 0) {
		print_error("case %zu: code %d reason '%s' (want '%s'): %s\n",
			    index, al_error_get_code(err),
			    al_error_get_reason(err), reason,
			    al_error_get_message(err));
		fail();
	}
	const char *msg = al_error_get_message(err);
	assert_true(msg[0] != '\0');
	if (strstr(msg, secret) != NULL ||
	    strstr(al_error_get_reason(err), secret) != NULL) {
		print_error("case %zu echoes the value: %s\n", index, msg);
		fail();
	}
	/* The marker may be split by an escape; its start must not leak
	 * either. */
	assert_null(strstr(msg, "S3CR"));
	al_error_free(err);
}

static void test_malformed_table(void **state)
{
	(void)state;
	size_t n = sizeof(bad_cases) / sizeof(bad_cases[0]);
	assert_true(n >= 40);
	for (size_t i = 0; i < n; i++) {
		const bad_case *c = &bad_cases[i];
		check_refused(c->json, c->len ? c->len : strlen(c->json),
			      c->reason, c->secret ? c->secret : MARK, i);
	}
}

/* Builds '{BASE, <prefix><n copies of fill><suffix>}'. */
static char *build(const char *prefix, const char *fill, size_t n,
		   const char *suffix)
{
	size_t fl = strlen(fill);
	size_t len = strlen(prefix) + fl * n + strlen(suffix) + 64;
	char *s = malloc(len);
	assert_non_null(s);
	char *p = s + sprintf(s, "{%s,%s", BASE, prefix);
	for (size_t i = 0; i < n; i++, p += fl)
		memcpy(p, fill, fl);
	sprintf(p, "%s}", suffix);
	return s;
}

static void test_oversize_fields(void **state)
{
	(void)state;
	struct {
		const char *prefix, *fill;
		size_t n;
		const char *suffix, *reason;
	} cases[] = {
		{"\"argv\":[\"x\"", ",\"x\"", AL_MAX_ARGS, "]", "argv"},
		{"\"argv\":[\"", "S", AL_MAX_ARG_BYTES + 1, "\"]", "argv[0]"},
		{"\"stdin\":\"", "S", AL_MAX_STDIN_BYTES + 1, "\"", "stdin"},
		{"\"stdin_b64\":\"", "UzNDUkVU", AL_MAX_STDIN_BYTES / 6 + 1,
		 "\"", "stdin_b64"},
		{"\"files\":[{\"path\":\"", "S", AL_MAX_FILE_PATH_BYTES + 1,
		 "\",\"content\":\"\"}]", "files[0].path"},
		{"\"files\":[{\"path\":\"a\",\"content\":\"", "S",
		 AL_MAX_FILES_TOTAL_BYTES + 1, "\"}]", "files[0].content"},
		{"\"files\":[{\"path\":\"a\",\"content\":\"\"}",
		 ",{\"path\":\"b\",\"content\":\"\"}", AL_MAX_FILES, "]",
		 "files"},
		{"\"outputs\":[\"a\"", ",\"a\"", AL_MAX_OUTPUTS, "]", "outputs"},
		{"\"env\":{\"", "S", AL_MAX_ENV_NAME_BYTES + 1, "\":\"\"}",
		 "env"},
		{"\"env\":{\"A\":\"", "S", AL_MAX_ENV_VALUE_BYTES + 1, "\"}",
		 "env"},
		{"\"idempotency_key\":\"", "S", AL_MAX_KEY_BYTES + 1, "\"",
		 "idempotency_key"},
		{"\"grant\":{\"secrets\":[\"A\"", ",\"A\"", AL_MAX_SECRETS,
		 "]}", "grant.secrets"},
		{"\"toolchain\":{\"python\":\"", "1.", 100, "1\"}",
		 "toolchain"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *json = build(cases[i].prefix, cases[i].fill, cases[i].n,
				   cases[i].suffix);
		check_refused(json, strlen(json), cases[i].reason, "SSSS", i);
		free(json);
	}

	/* Two files each within bounds, together beyond the total. */
	size_t half = AL_MAX_FILES_TOTAL_BYTES / 2 + 1;
	char *inner = build("\"path\":\"b\",\"content\":\"", "S", half, "\"");
	/* inner is '{BASE,"path":"b","content":"SSS..."}': reuse its tail */
	char *second = strstr(inner, "\"path\":\"b\"");
	size_t cap2 = strlen(inner) + half + 128;
	char *two = malloc(cap2);
	assert_non_null(two);
	char *p = two + sprintf(two, "{%s,\"files\":[{\"path\":\"a\",\"content\":\"",
				BASE);
	memset(p, 'S', half);
	p += half;
	sprintf(p, "\"},{%s]}", second);
	check_refused(two, strlen(two), "files", "SSSS", 100);
	free(two);
	free(inner);

	/* Over AL_MAX_ENV variables, each valid. */
	size_t cap = 64 + 16 * (AL_MAX_ENV + 1);
	char *env = malloc(cap);
	assert_non_null(env);
	int off = sprintf(env, "{%s,\"env\":{", BASE);
	for (unsigned i = 0; i <= AL_MAX_ENV; i++)
		off += sprintf(env + off, "%s\"V%u\":\"\"", i ? "," : "", i);
	sprintf(env + off, "}}");
	check_refused(env, strlen(env), "env", "SSSS", 101);
	free(env);

	/* The whole body beyond AL_MAX_REQUEST_BYTES is refused unparsed. */
	size_t big = AL_MAX_REQUEST_BYTES + 1;
	char *body = malloc(big);
	assert_non_null(body);
	memset(body, ' ', big);
	body[0] = '{';
	body[big - 1] = '}';
	check_refused(body, big, "body", "SSSS", 102);
	free(body);
}

static void test_code_size_bound(void **state)
{
	(void)state;
	char *json = malloc(AL_MAX_CODE_BYTES + 64);
	assert_non_null(json);
	int off = sprintf(json, "{\"language\":\"sh\",\"code\":\"");
	memset(json + off, 'S', AL_MAX_CODE_BYTES + 1);
	strcpy(json + off + AL_MAX_CODE_BYTES + 1, "\"}");
	check_refused(json, strlen(json), "code", "SSSS", 0);
	/* Exactly at the bound is accepted. */
	strcpy(json + off + AL_MAX_CODE_BYTES, "\"}");
	al_request *req = NULL;
	assert_int_equal(al_request_from_json(json, strlen(json), &req, NULL),
			 0);
	assert_int_equal(req->code.len, AL_MAX_CODE_BYTES);
	al_request_free(req);
	free(json);
}

static al_request *parse_ok(const char *json)
{
	al_request *req = NULL;
	al_error *err = NULL;
	int rc = al_request_from_json(json, strlen(json), &req, &err);
	if (rc != 0) {
		print_error("refused (%s): %s\n", al_error_get_reason(err),
			    al_error_get_message(err));
		al_error_free(err);
		fail();
	}
	assert_null(err);
	return req;
}

/* to_json(from_json(x)) is a fixed point and equal requests print equally. */
static void assert_round_trip(const char *json)
{
	al_request *a = parse_ok(json);
	char *ta = al_request_to_json(a);
	assert_non_null(ta);
	al_request *b = parse_ok(ta);
	char *tb = al_request_to_json(b);
	assert_non_null(tb);
	assert_string_equal(ta, tb);
	/* The deep copy prints the same too. */
	al_request *c = al_request_dup(b);
	assert_non_null(c);
	char *tc = al_request_to_json(c);
	assert_string_equal(ta, tc);
	free(ta);
	free(tb);
	free(tc);
	al_request_free(a);
	al_request_free(b);
	al_request_free(c);
}

static const char full_request[] =
	"{\"language\":\"python\",\"code\":\"import sys; print(sys.stdin.read())\","
	"\"argv\":[\"--flag\",\"\"],\"stdin\":\"text\","
	"\"files\":[{\"path\":\"data/in.csv\",\"content\":\"a,b\\n\",\"mode\":"
	"\"0644\"},{\"path\":\"bin/tool\",\"content_b64\":\"AAEC/w==\",\"mode\":"
	"\"755\"}],"
	"\"outputs\":[\"out/report.json\",\"out/*.png\",\"logs/day?.txt\"],"
	"\"purpose\":\"plugin\","
	"\"limits\":{\"wall_ms\":5000,\"cpu_ms\":5000,\"memory_bytes\":268435456,"
	"\"pids\":64,\"output_bytes\":65536,\"file_bytes\":16777216,"
	"\"workspace_bytes\":67108864,\"open_files\":256,"
	"\"socket_bytes\":4194304,\"stack_bytes\":8388608},"
	"\"grant\":{\"network\":\"loopback\",\"workspace\":\"rw\",\"secrets\":"
	"[\"TOKEN_B\",\"TOKEN_A\"],\"streaming\":true},"
	"\"env\":{\"MODE\":\"fast\",\"A_FIRST\":\"1\",\"EMPTY\":\"\"},"
	"\"idempotency_key\":\"order-1234\",\"isolation\":\"required\","
	"\"toolchain\":{\"python\":\">=3.10, <4\",\"node\":\"==20\"}}";

static void test_full_request(void **state)
{
	(void)state;
	al_request *r = parse_ok(full_request);
	assert_string_equal(r->language, "python");
	assert_int_equal(r->argc, 2);
	assert_string_equal(r->argv[0], "--flag");
	assert_string_equal(r->argv[1], "");
	assert_null(r->argv[2]);
	assert_true(r->has_stdin);
	assert_int_equal(r->stdin_data.len, 4);
	assert_int_equal(r->n_files, 2);
	assert_string_equal(r->files[0].path, "data/in.csv");
	assert_int_equal(r->files[0].mode, 0644);
	assert_int_equal(r->files[1].mode, 0755);
	assert_int_equal(r->files[1].content.len, 4);
	assert_memory_equal(r->files[1].content.data, "\x00\x01\x02\xff", 4);
	assert_int_equal(r->n_outputs, 3);
	assert_int_equal(r->purpose, AL_PURPOSE_PLUGIN);
	assert_int_equal(r->limits.set, AL_LIMIT__ALL);
	assert_int_equal(r->limits.memory_bytes, 268435456);
	assert_int_equal(r->limits.stack_bytes, 8388608);
	assert_int_equal(r->grant.network, AL_NETWORK_LOOPBACK);
	assert_int_equal(r->grant.workspace, AL_WORKSPACE_RW);
	assert_true(r->grant.streaming);
	assert_int_equal(r->grant.n_secrets, 2);
	assert_string_equal(r->grant.secrets[0], "TOKEN_A"); /* sorted */
	assert_int_equal(r->n_env, 3);
	assert_string_equal(r->env[0].name, "A_FIRST"); /* sorted */
	assert_string_equal(r->env[2].name, "MODE");
	assert_string_equal(r->env[2].value, "fast");
	assert_string_equal(r->idempotency_key, "order-1234");
	assert_int_equal(r->isolation, AL_ISOLATION_REQUIRED);
	assert_int_equal(r->n_toolchain, 2);
	assert_string_equal(r->toolchain[0].toolchain, "node");
	assert_string_equal(r->toolchain[1].constraint, ">=3.10, <4");

	char *text = al_request_to_json(r);
	assert_non_null(text);
	/* binary content travels as base64, text as text */
	assert_non_null(strstr(text, "\"content_b64\":\"AAEC/w==\""));
	assert_non_null(strstr(text, "\"content\":\"a,b\\n\""));
	assert_non_null(strstr(text, "\"mode\":\"0755\""));
	assert_non_null(strstr(text, "\"stdin\":\"text\""));
	free(text);
	al_request_free(r);
	assert_round_trip(full_request);
}

static void test_defaults(void **state)
{
	(void)state;
	al_request *r = parse_ok("{\"language\":\"sh\",\"code\":\"\"}");
	assert_int_equal(r->code.len, 0);
	assert_non_null(r->code.data);
	assert_null(r->code_sha256);
	assert_false(r->has_stdin);
	assert_int_equal(r->argc, 0);
	assert_int_equal(r->n_files, 0);
	assert_int_equal(r->limits.set, 0);
	assert_int_equal(r->limits.wall_ms, AL_DEFAULT_WALL_MS);
	assert_int_equal(r->limits.output_bytes, AL_DEFAULT_OUTPUT_BYTES);
	assert_int_equal(r->limits.open_files, AL_DEFAULT_OPEN_FILES);
	assert_int_equal(r->limits.memory_bytes, 0);
	assert_int_equal(r->grant.network, AL_NETWORK_NONE);
	assert_int_equal(r->grant.workspace, AL_WORKSPACE_NONE);
	assert_false(r->grant.streaming);
	assert_int_equal(r->purpose, AL_PURPOSE_SCRIPT);
	assert_int_equal(r->isolation, AL_ISOLATION_PREFERRED);
	assert_null(r->idempotency_key);

	/* Only explicit limits are emitted, and survive as explicit. */
	char *text = al_request_to_json(r);
	assert_non_null(strstr(text, "\"limits\":{}"));
	assert_non_null(strstr(text, "\"stdin\":null"));
	free(text);
	al_request_free(r);

	r = parse_ok("{\"language\":\"sh\",\"code\":\"\",\"limits\":"
		     "{\"memory_bytes\":1048576}}");
	assert_int_equal(r->limits.set, AL_LIMIT_MEMORY_BYTES);
	assert_int_equal(r->limits.wall_ms, AL_DEFAULT_WALL_MS);
	text = al_request_to_json(r);
	assert_non_null(strstr(text, "\"limits\":{\"memory_bytes\":1048576}"));
	free(text);
	al_request_free(r);
}

static void test_accepted_forms(void **state)
{
	(void)state;
	static const char *const ok[] = {
		/* unknown but well-formed languages are left to the
		 * language check (unsupported_language) */
		"{\"language\":\"cobol-85+gnu_x\",\"code\":\"\"}",
		/* nulls mean absent for optional scalars */
		"{" BASE ",\"code_sha256\":null,\"idempotency_key\":null,"
		"\"stdin\":null,\"stdin_b64\":null}",
		"{" BASE ",\"stdin\":\"x\",\"stdin_b64\":null}",
		"{" BASE ",\"stdin_b64\":\"\"}",
		"{" BASE ",\"files\":[{\"path\":\"a b/c.d-e\",\"content\":\"\","
		"\"mode\":\"0\"},{\"path\":\"ab\",\"content_b64\":\"\"}]}",
		"{" BASE ",\"files\":[{\"path\":\"...x/..y\",\"content\":\"\"}]}",
		"{" BASE ",\"outputs\":[\"*\",\"a/*.json\",\"?x/y*z\"]}",
		"{" BASE ",\"toolchain\":{\"python\":\"3\",\"node\":\"< 21 , >= 18.1\","
		"\"ruby\":\"==3.1.2\",\"bash\":\">5\",\"c\":\"<=14\"}}",
		"{" BASE ",\"env\":{\"_\":\"\",\"PATHX\":\"y\",\"LANGUAGE\":\"x\"}}",
		"{" BASE ",\"idempotency_key\":\" ~!printable ascii\"}",
		"{" BASE ",\"limits\":{\"wall_ms\":86400000,\"memory_bytes\":"
		"1099511627776,\"pids\":1}}",
		"{" BASE ",\"argv\":[],\"files\":[],\"outputs\":[],\"env\":{},"
		"\"toolchain\":{},\"grant\":{},\"limits\":{}}",
		"{" BASE ",\"stdin\":\"nul\\u0000inside\"}",
		"{\"language\":\"python\",\"code\":\"print('\\u00e9\\ud83d\\ude00')\"}",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_round_trip(ok[i]);
}

/* A container image's name survives the canonical form (a durable run's
 * record) and the copy. */
static void test_image_round_trip(void **state)
{
	(void)state;
	const char *json = "{" BASE ",\"image\":\"deb-12.x_1\"}";
	al_request *req = NULL, *again = NULL;
	assert_int_equal(al_request_from_json(json, strlen(json), &req, NULL),
			 0);
	assert_string_equal(req->image, "deb-12.x_1");
	char *text = al_request_to_json(req);
	assert_non_null(text);
	assert_int_equal(al_request_from_json(text, strlen(text), &again, NULL),
			 0);
	assert_string_equal(again->image, "deb-12.x_1");
	al_request *copy = al_request_dup(req);
	assert_non_null(copy);
	assert_string_equal(copy->image, "deb-12.x_1");
	al_request_free(copy);
	al_request_free(again);
	al_request_free(req);
	free(text);
}

static void test_code_pin(void **state)
{
	(void)state;
	/* sha256("print(1)") */
	char hex[65];
	al_sha256_hex("print(1)", 8, hex);
	char json[256];
	snprintf(json, sizeof(json), "{" BASE ",\"code_sha256\":\"%s\"}", hex);
	al_request *r = parse_ok(json);
	assert_string_equal(r->code_sha256, hex);
	al_request_free(r);
	assert_round_trip(json);
}

static void test_binary_round_trip(void **state)
{
	(void)state;
	/* Bytes with NUL and invalid UTF-8 survive byte for byte. */
	static const unsigned char bytes[] = {'a', 0, 0xff, 0xc0, 0xaf, '\n',
					      0xed, 0xa0, 0x80, 'z'};
	al_request *r = parse_ok("{" BASE ",\"files\":[{\"path\":\"f\","
				 "\"content\":\"\"}]}");
	free(r->stdin_data.data);
	r->stdin_data.data = malloc(sizeof(bytes) + 1);
	memcpy(r->stdin_data.data, bytes, sizeof(bytes));
	r->stdin_data.len = sizeof(bytes);
	r->has_stdin = true;
	free(r->files[0].content.data);
	r->files[0].content.data = malloc(sizeof(bytes) + 1);
	memcpy(r->files[0].content.data, bytes, sizeof(bytes));
	r->files[0].content.len = sizeof(bytes);
	char *text = al_request_to_json(r);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"stdin_b64\":"));
	assert_null(strstr(text, "\"stdin\":"));
	assert_non_null(strstr(text, "\"content_b64\":"));
	al_request *back = parse_ok(text);
	assert_true(back->has_stdin);
	assert_int_equal(back->stdin_data.len, sizeof(bytes));
	assert_memory_equal(back->stdin_data.data, bytes, sizeof(bytes));
	assert_int_equal(back->files[0].content.len, sizeof(bytes));
	assert_memory_equal(back->files[0].content.data, bytes, sizeof(bytes));
	char *again = al_request_to_json(back);
	assert_string_equal(text, again);
	free(text);
	free(again);
	al_request_free(r);
	al_request_free(back);
}

static void test_canonical_equal(void **state)
{
	(void)state;
	/* Same meaning, different order and encoding: same canonical text. */
	al_request *a = parse_ok(
		"{\"env\":{\"B\":\"2\",\"A\":\"1\"},\"language\":\"sh\","
		"\"grant\":{\"secrets\":[\"Y\",\"X\"]},\"code\":\"echo\","
		"\"stdin\":\"abc\",\"toolchain\":{\"sh\":\">=1\",\"bash\":\"5\"}}");
	al_request *b = parse_ok(
		"{\"code\":\"echo\",\"language\":\"sh\",\"stdin_b64\":\"YWJj\","
		"\"toolchain\":{\"bash\":\"5\",\"sh\":\">=1\"},"
		"\"grant\":{\"secrets\":[\"X\",\"Y\"],\"network\":\"none\"},"
		"\"env\":{\"A\":\"1\",\"B\":\"2\"},\"purpose\":\"script\"}");
	char *ta = al_request_to_json(a);
	char *tb = al_request_to_json(b);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	al_request_free(a);
	al_request_free(b);
}

static void test_describe_hides_values(void **state)
{
	(void)state;
	al_request *r = parse_ok(
		"{\"language\":\"python\",\"code\":\"CODEMARKER = 1\","
		"\"stdin\":\"STDINMARKER\",\"argv\":[\"ARGVMARKER\"],"
		"\"files\":[{\"path\":\"in/data.csv\",\"content\":\"FILEMARKER\"},"
		"{\"path\":\"bin.dat\",\"content_b64\":\"RklMRU1BUktFUg==\"}],"
		"\"env\":{\"API_MODE\":\"ENVMARKER\"},"
		"\"grant\":{\"secrets\":[\"DB_PASSWORD\"],\"network\":\"loopback\"},"
		"\"limits\":{\"wall_ms\":1234},\"idempotency_key\":\"order-77\"}");
	char *d = al_request_describe(r);
	assert_non_null(d);
	static const char *const hidden[] = {"CODEMARKER", "STDINMARKER",
					     "ARGVMARKER", "FILEMARKER",
					     "ENVMARKER", "RklMRU1B"};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (strstr(d, hidden[i]) != NULL) {
			print_error("describe leaks %s: %s\n", hidden[i], d);
			fail();
		}
	char hex[65];
	al_sha256_hex("CODEMARKER = 1", 14, hex);
	static const char *const shown[] = {
		"language=\"python\"", "code_bytes=14", "stdin_bytes=11",
		"argc=1", "\"in/data.csv\":10:0644", "\"bin.dat\":10:0644",
		"env=[\"API_MODE\"]", "\"DB_PASSWORD\"", "network=loopback",
		"wall_ms=1234,", "cpu_ms=0(default)",
		"idempotency_key=\"order-77\""};
	assert_non_null(strstr(d, hex));
	for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
		if (strstr(d, shown[i]) == NULL) {
			print_error("describe lacks %s: %s\n", shown[i], d);
			fail();
		}
	assert_null(strchr(d, '\n'));
	free(d);

	/* A request built in code cannot inject a log line. */
	free(r->files[0].path);
	r->files[0].path = strdup("evil\nFORGED LINE");
	d = al_request_describe(r);
	assert_null(strchr(d, '\n'));
	assert_non_null(strstr(d, "evil\\x0aFORGED"));
	free(d);
	al_request_free(r);
}

/* exec, name and continues survive the canonical form; a copy keeps
 * them; describe shows exec's length only. */
static void test_shape_fields_round_trip(void **state)
{
	(void)state;
	al_request *r = parse_ok("{\"exec\":[\"/bin/echo\",\"" MARK "\"],"
				 "\"name\":\"job.sh\",\"continues\":\"r-1\"}");
	assert_string_equal(r->language, "exec");
	assert_int_equal(r->n_exec, 2);
	assert_string_equal(r->exec[1], MARK);
	assert_int_equal(r->code.len, 0);
	char *text = al_request_to_json(r);
	assert_non_null(text);
	assert_null(strstr(text, "\"code\""));
	assert_null(strstr(text, "\"argv\""));
	al_request *back = parse_ok(text);
	char *again = al_request_to_json(back);
	assert_string_equal(text, again);
	al_request *copy = al_request_dup(back);
	assert_non_null(copy);
	assert_string_equal(copy->exec[0], "/bin/echo");
	assert_string_equal(copy->name, "job.sh");
	assert_string_equal(copy->continues, "r-1");
	char *line = al_request_describe(copy);
	assert_non_null(strstr(line, "exec_argc=2"));
	assert_null(strstr(line, MARK));
	/* a code request without them keeps its old canonical text */
	al_request *plain = parse_ok("{" BASE "}");
	char *pt = al_request_to_json(plain);
	assert_null(strstr(pt, "\"name\""));
	assert_null(strstr(pt, "\"exec\""));
	assert_null(strstr(pt, "\"continues\""));
	free(pt);
	free(line);
	free(text);
	free(again);
	al_request_free(plain);
	al_request_free(copy);
	al_request_free(back);
	al_request_free(r);
}

static void test_null_and_missing_input(void **state)
{
	(void)state;
	al_request *r = NULL;
	al_error *err = NULL;
	assert_true(al_request_from_json(NULL, 0, &r, &err) < 0);
	assert_null(r);
	assert_string_equal(al_error_get_reason(err), "body");
	al_error_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_table),
		cmocka_unit_test(test_oversize_fields),
		cmocka_unit_test(test_code_size_bound),
		cmocka_unit_test(test_full_request),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_accepted_forms),
		cmocka_unit_test(test_code_pin),
		cmocka_unit_test(test_image_round_trip),
		cmocka_unit_test(test_binary_round_trip),
		cmocka_unit_test(test_canonical_equal),
		cmocka_unit_test(test_describe_hides_values),
		cmocka_unit_test(test_null_and_missing_input),
		cmocka_unit_test(test_shape_fields_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
