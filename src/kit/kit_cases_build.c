/* Kit cases for languages with a build step (docs/languages.md): a
 * program builds and runs with a build object in its result, and a
 * compile error is the typed failed/build_failed with the compiler's
 * message and no run step.  Each runs for the first compiled language the
 * facts list, and is skipped when they list none. */
#include <stdio.h>
#include <string.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

static const struct {
	const char *language, *hello, *broken;
} programs[] = {
	{"c", "#include <stdio.h>\nint main(void) { puts(\"kit-hello\"); return 0; }\n",
	 "int main(void) { return kit_undeclared; }\n"},
	{"cpp", "#include <cstdio>\nint main() { std::puts(\"kit-hello\"); }\n",
	 "int main() { return kit_undeclared; }\n"},
	{"go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"kit-hello\") }\n",
	 "package main\n\nfunc main() { kit_undeclared }\n"},
	{"rust", "fn main() { println!(\"kit-hello\"); }\n",
	 "fn main() { kit_undeclared; }\n"},
	{"java", "public class Main { public static void main(String[] a) { "
		 "System.out.println(\"kit-hello\"); } }\n",
	 "public class Main { public static void main(String[] a) { kit_undeclared(); } }\n"},
};

/* The first compiled language of the facts, or -1 (skipped). */
static int pick(kit_ctx *k, kit_case *c)
{
	if (!kit_need_runner(k, c))
		return -1;
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		if (al_facts_find_language(k->facts, programs[i].language))
			return (int)i;
	kit_skip(c, "facts: no language with a build step");
	return -1;
}

void kit_case_build_runs(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	int i = pick(k, c);
	if (i < 0)
		return;
	al_request *req = kit_req_lang(k, c, programs[i].language, programs[i].hello);
	if (req == NULL)
		return;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (strcmp(kit_out(r.res, AL_STDOUT), "kit-hello\n") != 0)
		kit_fail(c, "%s: expected \"kit-hello\"; saw %s", programs[i].language,
			 kit_describe(r.res));
	else if (r.res->build == NULL || r.res->build->outcome != AL_OUTCOME_COMPLETED)
		kit_fail(c, "%s: the result has no completed build object",
			 programs[i].language);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_build_failed(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	int i = pick(k, c);
	if (i < 0)
		return;
	al_request *req = kit_req_lang(k, c, programs[i].language, programs[i].broken);
	if (req == NULL)
		return;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_FAILED))
		goto out;
	const al_build_result *b = r.res->build;
	if (r.res->reason == NULL || strcmp(r.res->reason, "build_failed") != 0)
		kit_fail(c, "%s: a compile error should be failed/build_failed; saw %s",
			 programs[i].language, kit_describe(r.res));
	else if (b == NULL || b->outcome == AL_OUTCOME_COMPLETED)
		kit_fail(c, "%s: build_failed without a failed build object",
			 programs[i].language);
	else if (b->output[AL_STDERR].len + b->output[AL_STDOUT].len == 0)
		kit_fail(c, "%s: the build object holds no compiler message",
			 programs[i].language);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}
