/* Syntax rules of request fields; see syntax.h. */
#include <string.h>

#include <airlock/json.h>

#include "json/syntax.h"

static bool is_lower_token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '+' || c == '-';
}

const char *al_syntax_token(const char *s, size_t len)
{
	if (len == 0)
		return "must not be empty";
	if (len > AL_MAX_TOKEN_BYTES)
		return "is longer than 32 bytes";
	for (size_t i = 0; i < len; i++)
		if (!is_lower_token_char(s[i]))
			return "may only hold a-z, 0-9, '_', '+' and '-'";
	return NULL;
}

const char *al_syntax_path(const char *s, size_t len, bool glob)
{
	if (len == 0)
		return "must not be empty";
	if (len > AL_MAX_FILE_PATH_BYTES)
		return "is longer than the path limit";
	if (s[0] == '/')
		return "must be relative";
	size_t seg_start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len) {
			unsigned char c = (unsigned char)s[i];
			if (c < 0x20 || c == 0x7f)
				return "must not contain control bytes";
			if (!glob && (c == '*' || c == '?'))
				return "must not contain wildcards";
			if (glob && (c == '[' || c == ']' || c == '{' ||
				     c == '}' || c == '\\'))
				return "may use only '*' and '?' as wildcards";
			if (glob && c == '*' && i + 1 < len && s[i + 1] == '*')
				return "must not use '**'";
			if (c != '/')
				continue;
		}
		size_t seg_len = i - seg_start;
		const char *seg = s + seg_start;
		if (seg_len == 0)
			return "must not have empty segments or a trailing '/'";
		if ((seg_len == 1 && seg[0] == '.') ||
		    (seg_len == 2 && seg[0] == '.' && seg[1] == '.'))
			return "must not have '.' or '..' segments";
		seg_start = i + 1;
	}
	return NULL;
}

static bool is_name_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

const char *al_syntax_env_name(const char *s, size_t len)
{
	if (len == 0)
		return "must not be empty";
	if (len > AL_MAX_ENV_NAME_BYTES)
		return "is longer than the name limit";
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(s[i], i == 0))
			return "must match [A-Za-z_][A-Za-z0-9_]*";
	return NULL;
}

bool al_env_name_reserved(const char *s)
{
	static const char *const exact[] = {"PATH", "HOME", "TMPDIR", "LANG"};
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(s, exact[i]) == 0)
			return true;
	return strncmp(s, "AIRLOCK_", 8) == 0 || strncmp(s, "LD_", 3) == 0;
}

const char *al_syntax_secret_name(const char *s, size_t len)
{
	if (len == 0)
		return "must not be empty";
	if (len > AL_MAX_ENV_NAME_BYTES)
		return "is longer than the name limit";
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(s[i], i == 0) &&
		    (i == 0 || (s[i] != '.' && s[i] != '-')))
			return "must match [A-Za-z_][A-Za-z0-9_.-]*";
	return NULL;
}

void al_secret_default_var(const char *name, char out[AL_SECRET_VAR_BYTES])
{
	size_t i = 0;
	for (; i < AL_SECRET_VAR_BYTES - 1 && name[i] != '\0'; i++) {
		char c = name[i];
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			c = '_';
		out[i] = c;
	}
	out[i] = '\0';
}

bool al_secret_name_reserved(const char *name)
{
	char var[AL_SECRET_VAR_BYTES];
	al_secret_default_var(name, var);
	return al_env_name_reserved(var);
}

const char *al_syntax_file_name(const char *s, size_t len)
{
	if (len == 0 || len > 255)
		return "must be 1 to 255 bytes";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c > 0x7e)
			return "must be printable ASCII";
		if (c == '/')
			return "must be a plain file name without '/'";
	}
	if ((len == 1 && s[0] == '.') || memmem(s, len, "..", 2) != NULL)
		return "must not be '.' or hold '..'";
	return NULL;
}

static size_t skip_spaces(const char *s, size_t len, size_t i)
{
	while (i < len && s[i] == ' ')
		i++;
	return i;
}

const char *al_syntax_constraint(const char *s, size_t len)
{
	static const char *const bad = "must be a version constraint such as "
				       "\">=3.10\" or \">=18, <21\"";
	if (len == 0 || len > AL_MAX_CONSTRAINT_BYTES)
		return len == 0 ? "must not be empty" : "is too long";
	size_t i = 0;
	for (;;) {
		i = skip_spaces(s, len, i);
		if (i + 1 < len && (s[i] == '<' || s[i] == '>' || s[i] == '=') &&
		    s[i + 1] == '=')
			i += 2;
		else if (i < len && (s[i] == '<' || s[i] == '>'))
			i += 1;
		i = skip_spaces(s, len, i);
		/* version: digits ("." digits)* */
		for (;;) {
			size_t start = i;
			while (i < len && s[i] >= '0' && s[i] <= '9')
				i++;
			if (i == start || i - start > 9)
				return bad;
			if (i < len && s[i] == '.') {
				i++;
				continue;
			}
			break;
		}
		i = skip_spaces(s, len, i);
		if (i == len)
			return NULL;
		if (s[i] != ',')
			return bad;
		i++;
	}
}

const char *al_syntax_mode(const char *s, size_t len, unsigned *mode)
{
	if (len == 0 || len > 4)
		return "must be an octal string such as \"0644\"";
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '7')
			return "must be an octal string such as \"0644\"";
		v = v * 8 + (unsigned)(s[i] - '0');
	}
	if (v > 0777)
		return "must be at most 0777";
	*mode = v;
	return NULL;
}

bool al_syntax_sha256(const char *s, size_t len)
{
	if (len != 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool al_syntax_printable(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}
