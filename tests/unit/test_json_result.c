/* Results and facts in JSON, and the primitives under them: UTF-8
 * validation, SHA-256 and strict base64. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/json.h>

#include "json/base64.h"

static void set_bytes(al_bytes *b, const void *data, size_t len)
{
	free(b->data);
	b->data = malloc(len + 1);
	assert_non_null(b->data);
	memcpy(b->data, data, len);
	b->data[len] = '\0';
	b->len = len;
}

static al_result *sample_result(void)
{
	al_result *r = al_result_new();
	assert_non_null(r);
	strcpy(r->run_id, "run-0123456789abcdef");
	assert_int_equal(al_result_set_outcome(r, AL_OUTCOME_FAILED, NULL), 0);
	r->has_exit_code = true;
	r->exit_code = 3;
	set_bytes(&r->output[AL_STDOUT], "h\xc3\xa9llo\n", 7);
	set_bytes(&r->output[AL_STDERR], "", 0);
	r->output_seen[AL_STDOUT] = 70000;
	r->truncated[AL_STDOUT] = true;
	r->usage.wall_ms = 14;
	r->usage.cpu_user_ms = 9;
	r->usage.cpu_sys_ms = 3;
	r->usage.peak_memory_bytes = 9437184;
	r->provider = al_facts_new("sandbox", AL_SAFETY_SANDBOXED);
	r->provider->available = true;
	r->provider->isolation.process_contained = true;
	r->provider->isolation.network_restricted = true;
	r->outputs = calloc(2, sizeof(*r->outputs));
	r->n_outputs = 2;
	r->outputs[0].path = strdup("out/report.json");
	r->outputs[0].size = 120;
	al_sha256_hex("x", 1, r->outputs[0].sha256);
	r->outputs[0].artifact = strdup("artifact-1");
	r->outputs[1].path = strdup("out/link");
	r->outputs[1].refused_reason = strdup("symlink");
	r->started_at_ms = 1795996800000; /* 2026-11-30T00:00:00.000Z */
	r->finished_at_ms = 1795996800123;
	return r;
}

static al_result *reparse(const char *text)
{
	al_result *r = NULL;
	al_error *err = NULL;
	if (al_result_from_json(text, strlen(text), &r, &err) != 0) {
		print_error("refused (%s): %s\n", al_error_get_reason(err),
			    al_error_get_message(err));
		al_error_free(err);
		fail();
	}
	return r;
}

static void test_result_shape(void **state)
{
	(void)state;
	al_result *r = sample_result();
	char *text = al_result_to_json(r, 0);
	assert_non_null(text);
	json_t *j = json_loads(text, 0, NULL);
	assert_non_null(j);
	/* exactly the documented keys */
	static const char *const keys[] = {
		"run_id", "outcome", "reason", "exit_code", "signal", "stdout",
		"stderr", "stdout_truncated", "stderr_truncated",
		"stdout_bytes", "stderr_bytes", "usage", "provider", "outputs",
		"started_at", "finished_at", "permanent"};
	assert_int_equal(json_object_size(j), sizeof(keys) / sizeof(keys[0]));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(j, keys[i]));
	assert_string_equal(json_string_value(json_object_get(j, "outcome")),
			    "failed");
	assert_true(json_is_null(json_object_get(j, "reason")));
	assert_true(json_is_null(json_object_get(j, "signal")));
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
	assert_string_equal(json_string_value(json_object_get(j, "stdout")),
			    "h\xc3\xa9llo\n");
	assert_int_equal(json_integer_value(json_object_get(j, "stdout_bytes")),
			 70000);
	assert_true(json_is_true(json_object_get(j, "stdout_truncated")));
	assert_string_equal(json_string_value(json_object_get(j, "started_at")),
			    "2026-11-30T00:00:00.000Z");
	assert_string_equal(json_string_value(json_object_get(j, "finished_at")),
			    "2026-11-30T00:00:00.123Z");
	json_t *p = json_object_get(j, "provider");
	assert_int_equal(json_object_size(p), 3);
	assert_string_equal(json_string_value(json_object_get(p, "id")),
			    "sandbox");
	assert_string_equal(json_string_value(json_object_get(p, "safety_class")),
			    "sandboxed");
	json_t *iso = json_object_get(p, "isolation");
	assert_int_equal(json_object_size(iso), 5);
	assert_true(json_is_true(json_object_get(iso, "process_contained")));
	assert_true(json_is_false(json_object_get(iso, "syscalls_restricted")));
	json_t *usage = json_object_get(j, "usage");
	assert_int_equal(json_object_size(usage), 4);
	assert_int_equal(
		json_integer_value(json_object_get(usage, "peak_memory_bytes")),
		9437184);
	json_t *outs = json_object_get(j, "outputs");
	assert_int_equal(json_array_size(outs), 2);
	json_t *o0 = json_array_get(outs, 0), *o1 = json_array_get(outs, 1);
	assert_int_equal(json_object_size(o0), 4);
	assert_int_equal(json_string_length(json_object_get(o0, "sha256")), 64);
	assert_string_equal(json_string_value(json_object_get(o1, "refused")),
			    "symlink");
	assert_true(json_is_null(json_object_get(o1, "sha256")));
	assert_true(json_is_null(json_object_get(o1, "artifact")));
	json_decref(j);

	/* and back, field for field */
	al_result *b = reparse(text);
	assert_string_equal(b->run_id, r->run_id);
	assert_int_equal(b->outcome, AL_OUTCOME_FAILED);
	assert_null(b->reason);
	assert_true(b->has_exit_code);
	assert_int_equal(b->exit_code, 3);
	assert_false(b->has_signal);
	assert_int_equal(b->output_seen[0], 70000);
	assert_true(b->truncated[0]);
	assert_int_equal(b->usage.cpu_sys_ms, 3);
	assert_non_null(b->provider);
	assert_string_equal(b->provider->provider, "sandbox");
	assert_true(b->provider->isolation.network_restricted);
	assert_false(b->provider->isolation.syscalls_restricted);
	assert_int_equal(b->n_outputs, 2);
	assert_string_equal(b->outputs[0].sha256, r->outputs[0].sha256);
	assert_string_equal(b->outputs[1].refused_reason, "symlink");
	assert_int_equal(b->started_at_ms, r->started_at_ms);
	assert_int_equal(b->finished_at_ms, r->finished_at_ms);
	char *again = al_result_to_json(b, 0);
	assert_string_equal(text, again);
	free(again);
	/* pretty output parses to the same result */
	char *pretty = al_result_to_json(r, 1);
	assert_non_null(strchr(pretty, '\n'));
	al_result *c = reparse(pretty);
	again = al_result_to_json(c, 0);
	assert_string_equal(text, again);
	free(again);
	free(pretty);
	al_result_free(c);
	al_result_free(b);
	free(text);
	al_result_free(r);
}

static void test_refusal_shape(void **state)
{
	(void)state;
	al_result *r = al_result_new();
	strcpy(r->run_id, "r1");
	al_result_set_outcome(r, AL_OUTCOME_INVALID_REQUEST, "limits.pids");
	char *text = al_result_to_json(r, 0);
	json_t *j = json_loads(text, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "reason")),
			    "limits.pids");
	assert_true(json_is_null(json_object_get(j, "exit_code")));
	assert_true(json_is_null(json_object_get(j, "provider")));
	assert_true(json_is_null(json_object_get(j, "started_at")));
	assert_true(json_is_true(json_object_get(j, "permanent")));
	assert_int_equal(json_array_size(json_object_get(j, "outputs")), 0);
	json_decref(j);
	al_result *b = reparse(text);
	assert_null(b->provider);
	assert_true(b->permanent);
	assert_int_equal(b->started_at_ms, 0);
	assert_string_equal(b->reason, "limits.pids");
	al_result_free(b);
	free(text);

	/* killed: a signal number, no exit code */
	al_result_set_outcome(r, AL_OUTCOME_KILLED, "memory_limit");
	r->has_signal = true;
	r->signal = 9;
	text = al_result_to_json(r, 0);
	assert_non_null(strstr(text, "\"signal\":9"));
	assert_non_null(strstr(text, "\"exit_code\":null"));
	b = reparse(text);
	assert_true(b->has_signal);
	assert_int_equal(b->signal, 9);
	assert_false(b->has_exit_code);
	assert_int_equal(al_result_check_shape(b), 0);
	al_result_free(b);
	free(text);
	al_result_free(r);
}

/* Text when the bytes are UTF-8 without NUL, base64 otherwise; either way
 * the bytes come back exactly. */
static void test_stream_encoding(void **state)
{
	(void)state;
	static const struct {
		const char *bytes;
		size_t len;
		bool text;
	} cases[] = {
		{"plain\n", 6, true},
		{"", 0, true},
		{"\xf0\x9f\x98\x80 emoji", 10, true},
		{"nul\0byte", 8, false},
		{"\0", 1, false},
		{"bad \xff byte", 10, false},
		{"overlong \xc0\xaf", 11, false},
		{"surrogate \xed\xa0\x80", 13, false},
		{"truncated \xe2\x82", 12, false},
		{"\xf4\x90\x80\x80 above max", 14, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int s = 0; s < 2; s++) {
			const char *key = s ? "stderr" : "stdout";
			const char *key64 = s ? "stderr_b64" : "stdout_b64";
			al_result *r = al_result_new();
			strcpy(r->run_id, "r");
			al_result_set_outcome(r, AL_OUTCOME_COMPLETED, NULL);
			r->has_exit_code = true;
			set_bytes(&r->output[s], cases[i].bytes, cases[i].len);
			char *text = al_result_to_json(r, 0);
			assert_non_null(text);
			json_t *j = json_loads(text, 0, NULL);
			assert_non_null(j);
			assert_int_equal(json_object_get(j, key) != NULL,
					 cases[i].text);
			assert_int_equal(json_object_get(j, key64) != NULL,
					 !cases[i].text);
			json_decref(j);
			al_result *b = reparse(text);
			assert_int_equal(b->output[s].len, cases[i].len);
			assert_memory_equal(b->output[s].data, cases[i].bytes,
					    cases[i].len);
			assert_int_equal(b->output[s].data[cases[i].len], 0);
			assert_int_equal(b->output[1 - s].len, 0);
			free(text);
			al_result_free(b);
			al_result_free(r);
		}
	}
}

static void test_result_from_json_strict(void **state)
{
	(void)state;
	static const struct {
		const char *json, *reason;
	} cases[] = {
		{"{\"outcome\":\"completed\"}", "run_id"},
		{"{\"run_id\":\"r\"}", "outcome"},
		{"{\"run_id\":\"r\",\"outcome\":\"S3CRETVALUE\"}", "outcome"},
		{"{\"run_id\":\"a b\",\"outcome\":\"failed\"}", "run_id"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"S3CRETVALUE\":1}",
		 "result"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"exit_code\":\"1\"}",
		 "exit_code"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"exit_code\":256}",
		 "exit_code"},
		{"{\"run_id\":\"r\",\"outcome\":\"killed\",\"signal\":0}",
		 "signal"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"stdout\":\"a\","
		 "\"stdout_b64\":\"YQ==\"}",
		 "stdout"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"stderr_b64\":\"YQ\"}",
		 "stderr_b64"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"stdout_bytes\":-1}",
		 "stdout_bytes"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"usage\":{\"S3CRET\":1}}",
		 "usage"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"usage\":{\"wall_ms\":1.5}}",
		 "usage.wall_ms"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"provider\":{\"id\":\"x\"}}",
		 "provider.safety_class"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"provider\":{\"id\":\"x\","
		 "\"safety_class\":\"remote\",\"isolation\":{\"S3CRET\":true}}}",
		 "provider.isolation"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"outputs\":[{\"size\":1}]}",
		 "outputs[0].path"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"outputs\":[{\"path\":\"a\","
		 "\"sha256\":\"ABC\"}]}",
		 "outputs[0].sha256"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"started_at\":"
		 "\"2026-02-30T00:00:00.000Z\"}",
		 "started_at"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"finished_at\":"
		 "\"2026-11-30T00:00:00Z\"}",
		 "finished_at"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\",\"permanent\":1}",
		 "permanent"},
		{"{\"run_id\":\"r\",\"outcome\":\"failed\"} x", "body"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		al_result *r = (al_result *)1;
		al_error *err = NULL;
		int rc = al_result_from_json(cases[i].json,
					     strlen(cases[i].json), &r, &err);
		if (rc >= 0 || r != NULL ||
		    strcmp(al_error_get_reason(err), cases[i].reason) != 0) {
			print_error("case %zu: rc %d reason '%s' want '%s'\n", i,
				    rc, al_error_get_reason(err),
				    cases[i].reason);
			fail();
		}
		assert_int_equal(al_error_get_code(err),
				 AL_ERR_INVALID_ARGUMENT);
		assert_null(strstr(al_error_get_message(err), "S3CRET"));
		al_error_free(err);
	}
	/* Missing optional fields are fine. */
	al_result *r = reparse("{\"run_id\":\"r\",\"outcome\":\"timed_out\"}");
	assert_int_equal(r->outcome, AL_OUTCOME_TIMED_OUT);
	assert_int_equal(r->output[0].len, 0);
	assert_non_null(r->output[0].data);
	al_result_free(r);
}

static al_facts *sample_facts(void)
{
	al_facts *f = al_facts_new("sandbox", AL_SAFETY_SANDBOXED);
	f->available = true;
	f->isolation = (al_isolation_axes){true, true, true, false, true};
	assert_int_equal(al_facts_add_language(f, "python", "python", "3.11.2",
					       "/usr/bin/python3"),
			 0);
	assert_int_equal(al_facts_add_language(f, "sh", "sh", NULL, "/bin/sh"),
			 0);
	f->limits = AL_LIMIT_WALL_MS | AL_LIMIT_MEMORY_BYTES | AL_LIMIT_PIDS;
	f->network = 1u << AL_NETWORK_NONE | 1u << AL_NETWORK_LOOPBACK;
	f->workspace = 1u << AL_WORKSPACE_NONE | 1u << AL_WORKSPACE_RW;
	f->streaming = true;
	f->mechanism_json = strdup("{\"kernel\":\"6.18.44\",\"cgroup\":"
				   "{\"memory\":\"v1\",\"kill\":\"v2\"},"
				   "\"seccomp\":true,\"landlock_abi\":7}");
	return f;
}

static void test_facts_round_trip(void **state)
{
	(void)state;
	al_facts *f = sample_facts();
	char *text = al_facts_to_json(f, 0);
	assert_non_null(text);
	json_t *j = json_loads(text, 0, NULL);
	assert_int_equal(json_object_size(j), 12);
	assert_string_equal(json_string_value(json_object_get(j, "provider")),
			    "sandbox");
	assert_true(json_is_null(json_object_get(j, "unavailable_reason")));
	json_t *lim = json_object_get(j, "limits");
	assert_int_equal(json_array_size(lim), 3);
	assert_string_equal(json_string_value(json_array_get(lim, 0)),
			    "wall_ms");
	assert_string_equal(json_string_value(json_array_get(lim, 2)), "pids");
	json_t *net = json_object_get(j, "network");
	assert_int_equal(json_array_size(net), 2);
	assert_string_equal(json_string_value(json_array_get(net, 1)),
			    "loopback");
	json_t *mech = json_object_get(j, "mechanism");
	assert_true(json_is_object(mech));
	assert_int_equal(
		json_integer_value(json_object_get(mech, "landlock_abi")), 7);
	json_t *l1 = json_array_get(json_object_get(j, "languages"), 1);
	assert_true(json_is_null(json_object_get(l1, "version")));
	json_decref(j);

	al_facts *b = NULL;
	al_error *err = NULL;
	assert_int_equal(al_facts_from_json(text, strlen(text), &b, &err), 0);
	assert_string_equal(b->provider, "sandbox");
	assert_true(b->available);
	assert_int_equal(b->safety_class, AL_SAFETY_SANDBOXED);
	assert_false(b->isolation.syscalls_restricted);
	assert_true(b->isolation.network_restricted);
	assert_int_equal(b->n_languages, 2);
	assert_string_equal(b->languages[0].path, "/usr/bin/python3");
	assert_null(b->languages[1].version);
	assert_int_equal(b->limits, f->limits);
	assert_int_equal(b->network, f->network);
	assert_int_equal(b->workspace, f->workspace);
	assert_true(b->streaming);
	char *again = al_facts_to_json(b, 0);
	assert_string_equal(text, again);
	free(again);
	al_facts_free(b);
	free(text);

	/* An unparsable mechanism text becomes null, not a broken document. */
	free(f->mechanism_json);
	f->mechanism_json = strdup("{not json");
	f->available = false;
	f->unavailable_reason = strdup("no user namespaces");
	text = al_facts_to_json(f, 1);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_null(json_object_get(j, "mechanism")));
	assert_string_equal(
		json_string_value(json_object_get(j, "unavailable_reason")),
		"no user namespaces");
	json_decref(j);
	assert_int_equal(al_facts_from_json(text, strlen(text), &b, NULL), 0);
	assert_null(b->mechanism_json);
	assert_string_equal(b->unavailable_reason, "no user namespaces");
	al_facts_free(b);
	free(text);
	al_facts_free(f);
}

static void test_facts_strict(void **state)
{
	(void)state;
	static const struct {
		const char *json, *reason;
	} cases[] = {
		{"{\"available\":true,\"safety_class\":\"remote\"}", "provider"},
		{"{\"provider\":\"x\",\"available\":true}", "safety_class"},
		{"{\"provider\":\"x\",\"safety_class\":\"remote\"}", "available"},
		{"{\"provider\":\"x\",\"available\":true,\"safety_class\":"
		 "\"S3CRET\"}",
		 "safety_class"},
		{"{\"provider\":\"x\",\"available\":true,\"safety_class\":"
		 "\"remote\",\"S3CRET\":1}",
		 "facts"},
		{"{\"provider\":\"x\",\"available\":true,\"safety_class\":"
		 "\"remote\",\"limits\":[\"wall_ms\",\"S3CRET\"]}",
		 "limits[1]"},
		{"{\"provider\":\"x\",\"available\":true,\"safety_class\":"
		 "\"remote\",\"network\":[\"none\",\"none\"]}",
		 "network[1]"},
		{"{\"provider\":\"x\",\"available\":true,\"safety_class\":"
		 "\"remote\",\"languages\":[{\"language\":\"sh\"}]}",
		 "languages[0].toolchain"},
		{"{\"provider\":\"x\",\"available\":true,\"safety_class\":"
		 "\"remote\",\"mechanism\":[1]}",
		 "mechanism"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		al_facts *f = (al_facts *)1;
		al_error *err = NULL;
		int rc = al_facts_from_json(cases[i].json, strlen(cases[i].json),
					    &f, &err);
		if (rc >= 0 || f != NULL ||
		    strcmp(al_error_get_reason(err), cases[i].reason) != 0) {
			print_error("case %zu: rc %d reason '%s' want '%s'\n", i,
				    rc, al_error_get_reason(err),
				    cases[i].reason);
			fail();
		}
		assert_null(strstr(al_error_get_message(err), "S3CRET"));
		al_error_free(err);
	}
}

static void test_utf8_validator(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t len;
		bool ok;
	} cases[] = {
		{"", 0, true},
		{"ascii", 5, true},
		{"\0", 1, true}, /* U+0000 is valid UTF-8 */
		{"\x7f", 1, true},
		{"\xc2\x80", 2, true},		   /* U+0080, smallest 2-byte */
		{"\xdf\xbf", 2, true},		   /* U+07FF */
		{"\xe0\xa0\x80", 3, true},	   /* U+0800 */
		{"\xed\x9f\xbf", 3, true},	   /* U+D7FF, below surrogates */
		{"\xee\x80\x80", 3, true},	   /* U+E000, above surrogates */
		{"\xef\xbf\xbf", 3, true},	   /* U+FFFF */
		{"\xf0\x90\x80\x80", 4, true},	   /* U+10000 */
		{"\xf4\x8f\xbf\xbf", 4, true},	   /* U+10FFFF, the maximum */
		{"\xc0\x80", 2, false},		   /* overlong NUL */
		{"\xc1\xbf", 2, false},		   /* overlong */
		{"\xe0\x9f\xbf", 3, false},	   /* overlong 3-byte */
		{"\xf0\x8f\xbf\xbf", 4, false},	   /* overlong 4-byte */
		{"\xed\xa0\x80", 3, false},	   /* U+D800 surrogate */
		{"\xed\xbf\xbf", 3, false},	   /* U+DFFF surrogate */
		{"\xf4\x90\x80\x80", 4, false},	   /* U+110000 */
		{"\xf5\x80\x80\x80", 4, false},	   /* lead byte too high */
		{"\xff", 1, false},
		{"\x80", 1, false},		   /* lone continuation */
		{"\xc2", 1, false},		   /* truncated 2-byte */
		{"\xe2\x82", 2, false},		   /* truncated 3-byte */
		{"\xf0\x9f\x98", 3, false},	   /* truncated 4-byte */
		{"\xe2\x28\xa1", 3, false},	   /* bad continuation */
		{"ok\xf0\x9f\x98\x80ok", 8, true},
		{"ok\xf0\x9f\x98\x80o\x80", 8, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (al_utf8_valid((const unsigned char *)cases[i].s,
				  cases[i].len) != cases[i].ok) {
			print_error("utf8 case %zu\n", i);
			fail();
		}
	}
	/* Agrees with jansson's own check over every 2-byte and some 3-byte
	 * sequences. */
	for (unsigned a = 0x80; a < 0x100; a++) {
		for (unsigned b = 0; b < 0x100; b++) {
			unsigned char s[3] = {(unsigned char)a, (unsigned char)b,
					      0x80};
			for (size_t len = 2; len <= 3; len++) {
				json_t *j = json_stringn((const char *)s, len);
				bool ok = al_utf8_valid(s, len);
				if ((j != NULL) != ok) {
					print_error("disagree %02x %02x len %zu\n",
						    a, b, len);
					fail();
				}
				json_decref(j);
			}
		}
	}
}

static void test_sha256_vectors(void **state)
{
	(void)state;
	char hex[65];
	al_sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
				 "649b934ca495991b7852b855");
	al_sha256_hex(NULL, 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
				 "649b934ca495991b7852b855");
	al_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a3"
				 "96177a9cb410ff61f20015ad");
	static const char two_blocks[] =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	al_sha256_hex(two_blocks, strlen(two_blocks), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce459"
				 "64ff2167f6ecedd419db06c1");
	char *million = malloc(1000000);
	memset(million, 'a', 1000000);
	al_sha256_hex(million, 1000000, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48"
				 "a497200e046d39ccc7112cd0");
	free(million);
	/* bytes after a NUL count */
	char h2[65];
	al_sha256_hex("a\0b", 3, hex);
	al_sha256_hex("a", 1, h2);
	assert_string_not_equal(hex, h2);
}

static void test_base64_vectors(void **state)
{
	(void)state;
	static const char *const rfc[][2] = {
		{"", ""},	  {"f", "Zg=="},	{"fo", "Zm8="},
		{"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
		{"foobar", "Zm9vYmFy"},
	};
	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		char *enc = al_base64_encode(rfc[i][0], strlen(rfc[i][0]));
		assert_string_equal(enc, rfc[i][1]);
		free(enc);
		unsigned char *dec;
		size_t len;
		assert_int_equal(al_base64_decode(rfc[i][1], strlen(rfc[i][1]),
						  &dec, &len),
				 0);
		assert_int_equal(len, strlen(rfc[i][0]));
		assert_memory_equal(dec, rfc[i][0], len);
		assert_int_equal(dec[len], 0);
		free(dec);
	}
	static const char *const bad[] = {
		"Zg",	    "Zg=",	"Zh==",	  "Zm9=",     "Zm9v\n",
		"Zm=v",	    "====",	"Z===",	  "Zm9vY===", "Zm 9",
		"Zm9v-_==", "Zg==Zg==", "=Zg=",	  "Zm8=\0\0\0\0"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned char *dec = (unsigned char *)1;
		size_t len = 7;
		size_t tl = i == sizeof(bad) / sizeof(bad[0]) - 1 ? 8
								  : strlen(bad[i]);
		if (al_base64_decode(bad[i], tl, &dec, &len) != -EINVAL ||
		    dec != NULL || len != 0) {
			print_error("bad base64 case %zu accepted\n", i);
			fail();
		}
	}
	/* every byte value, every length mod 3 */
	unsigned char all[258];
	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(i * 7 + 3);
	for (size_t n = 255; n <= 258; n++) {
		char *enc = al_base64_encode(all, n);
		unsigned char *dec;
		size_t len;
		assert_int_equal(al_base64_decode(enc, strlen(enc), &dec, &len),
				 0);
		assert_int_equal(len, n);
		assert_memory_equal(dec, all, n);
		free(dec);
		free(enc);
	}
}

/* workspace, timeout_ms, log_artifact and inbox_pending: written only
 * when known, read back exactly, refused when malformed. */
static void test_run_report_fields(void **state)
{
	(void)state;
	al_result *r = al_result_new();
	assert_non_null(r);
	snprintf(r->run_id, sizeof(r->run_id), "r-1");
	assert_int_equal(al_result_set_outcome(r, AL_OUTCOME_COMPLETED, NULL), 0);
	r->has_exit_code = true;
	char *bare = al_result_to_json(r, 0);
	assert_null(strstr(bare, "workspace"));
	assert_null(strstr(bare, "timeout_ms"));
	assert_null(strstr(bare, "inbox_pending"));
	r->workspace_kind = strdup("scratch");
	r->workspace_summary = strdup("a private tmpfs");
	r->workspace_bytes = 1024;
	r->timeout_ms = 7000;
	r->log_artifact = strdup("log");
	r->inbox_pending = calloc(2, sizeof(char *));
	r->inbox_pending[0] = strdup("p-2");
	r->inbox_pending[1] = strdup("p-3");
	r->n_inbox_pending = 2;
	char *text = al_result_to_json(r, 0);
	al_result *back = NULL;
	assert_int_equal(al_result_from_json(text, strlen(text), &back, NULL), 0);
	assert_string_equal(back->workspace_kind, "scratch");
	assert_string_equal(back->workspace_summary, "a private tmpfs");
	assert_int_equal(back->workspace_bytes, 1024);
	assert_int_equal(back->timeout_ms, 7000);
	assert_string_equal(back->log_artifact, "log");
	assert_int_equal(back->n_inbox_pending, 2);
	assert_string_equal(back->inbox_pending[1], "p-3");
	char *again = al_result_to_json(back, 0);
	assert_string_equal(text, again);
	static const char *const bad[] = {
		"{\"run_id\":\"x\",\"outcome\":\"completed\",\"workspace\":{}}",
		"{\"run_id\":\"x\",\"outcome\":\"completed\",\"workspace\":"
		"{\"kind\":\"s\",\"extra\":1}}",
		"{\"run_id\":\"x\",\"outcome\":\"completed\",\"timeout_ms\":-1}",
		"{\"run_id\":\"x\",\"outcome\":\"completed\",\"inbox_pending\":"
		"[\"bad id\"]}",
		"{\"run_id\":\"x\",\"outcome\":\"completed\",\"log_artifact\":7}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		al_result *x = NULL;
		al_error *err = NULL;
		assert_true(al_result_from_json(bad[i], strlen(bad[i]), &x,
						&err) < 0);
		assert_null(x);
		al_error_free(err);
	}
	free(bare);
	free(text);
	free(again);
	al_result_free(back);
	al_result_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_result_shape),
		cmocka_unit_test(test_refusal_shape),
		cmocka_unit_test(test_stream_encoding),
		cmocka_unit_test(test_result_from_json_strict),
		cmocka_unit_test(test_facts_round_trip),
		cmocka_unit_test(test_facts_strict),
		cmocka_unit_test(test_utf8_validator),
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_base64_vectors),
		cmocka_unit_test(test_run_report_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
