/* Internal: syntax rules of request fields (docs/contract.md).  Each
 * returns NULL when the text is acceptable, else a short English phrase
 * saying what is wrong — never quoting the text. */
#ifndef AL_JSON_SYNTAX_H
#define AL_JSON_SYNTAX_H

#include <stdbool.h>
#include <stddef.h>

#define AL_MAX_TOKEN_BYTES 32u	     /* language and toolchain ids */
#define AL_MAX_TOOLCHAIN 16u	     /* entries in "toolchain" */
#define AL_MAX_CONSTRAINT_BYTES 128u /* one toolchain constraint */

/* Language or toolchain id: [a-z0-9_+-]{1,32}. */
const char *al_syntax_token(const char *s, size_t len);
/* Relative clean path: no leading '/', no empty, "." or ".." segment, no
 * trailing '/', no control bytes, at most AL_MAX_FILE_PATH_BYTES.  With
 * glob, '*' and '?' may appear inside a segment ("**" and the bracket,
 * brace and backslash characters are refused so matching has one meaning). */
const char *al_syntax_path(const char *s, size_t len, bool glob);
/* Environment or secret name: [A-Za-z_][A-Za-z0-9_]*, bounded. */
const char *al_syntax_env_name(const char *s, size_t len);
/* Names the host sets or that steer the dynamic loader. */
bool al_env_name_reserved(const char *s);
/* Secret name: [A-Za-z_][A-Za-z0-9_.-]*, at most AL_MAX_ENV_NAME_BYTES. */
const char *al_syntax_secret_name(const char *s, size_t len);
/* The variable a secret becomes unless the configuration maps it
 * (secret_env): its name upper-cased, every other character than A-Z,
 * 0-9 and '_' replaced by '_'.  out holds AL_SECRET_VAR_BYTES. */
#define AL_SECRET_VAR_BYTES 129u
void al_secret_default_var(const char *name, char out[AL_SECRET_VAR_BYTES]);
/* true when the secret's default variable is reserved
 * (al_env_name_reserved): such a secret is refused everywhere. */
bool al_secret_name_reserved(const char *name);
/* A plain file name (the request's "name"): 1..255 printable ASCII
 * bytes, no '/', not ".", no "..". */
const char *al_syntax_file_name(const char *s, size_t len);
/* Toolchain constraint: clause ("," clause)*, clause = [op] version,
 * op in == >= > <= <, version = digits ("." digits)*; spaces around
 * operators and commas are allowed. */
const char *al_syntax_constraint(const char *s, size_t len);
/* File mode: 1 to 4 octal digits, value at most 0777. */
const char *al_syntax_mode(const char *s, size_t len, unsigned *mode);
/* 64 lower-case hex digits. */
bool al_syntax_sha256(const char *s, size_t len);
/* 1..max printable ASCII bytes (0x20..0x7e). */
bool al_syntax_printable(const char *s, size_t len, size_t max);

#endif
