/* Internal: the documented maximum of each limit and where it lives in
 * al_limits.  Names come from the core's table (al_limit_name). */
#ifndef AL_JSON_LIMITS_TABLE_H
#define AL_JSON_LIMITS_TABLE_H

#include <stdint.h>

#include <airlock/contract.h>

typedef struct al_limit_row {
	unsigned bit; /* AL_LIMIT_*; 0 ends the table */
	const char *name;
	uint64_t max;
} al_limit_row;

extern const al_limit_row al_limit_rows[];

/* The field of l holding the limit `bit` (a single AL_LIMIT_* bit). */
uint64_t *al_limit_slot(al_limits *l, unsigned bit);
uint64_t al_limit_get(const al_limits *l, unsigned bit);

#endif
