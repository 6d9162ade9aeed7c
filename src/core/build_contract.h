/* Internal: helpers of the contract's build and judged-test parts. */
#ifndef AL_CORE_BUILD_CONTRACT_H
#define AL_CORE_BUILD_CONTRACT_H

#include <stdbool.h>

#include <airlock/contract.h>

/* The limits of the build step: the run's, with the five build limits
 * (and no file-size bound: the compiler writes the artifact). */
void al_request_build_limits(const al_request *req, al_limits *out);
/* The limits of one judged case: the request's, with the case's own. */
void al_case_limits(const al_request *req, const al_test_case *tc,
		    al_limits *out);
int al_verdict_from_name(const char *name, al_verdict *out);

void al_test_cases_free(al_test_case *t, size_t n);
int al_test_cases_dup(const al_test_case *src, size_t n, al_test_case **out);
void al_case_results_free(al_case_result *c, size_t n);

/* The build/test fields of a request and a result. */
void al_request_build_free(al_request *req);
int al_request_build_dup(const al_request *src, al_request *dst);
void al_result_build_free(al_result *r);

/* The judged comparison of a case's stdout with its expected_stdout. */
bool al_output_matches(const al_bytes *got, const al_bytes *want,
		       al_compare c);

#endif
