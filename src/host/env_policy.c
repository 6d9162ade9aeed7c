/* The env policy table (docs/host.md, "The env policy").  Every entry
 * applies to every request whatever its language: a program in one
 * language can start an interpreter of another, and that one inherits
 * the environment. */
#include "host/env_policy.h"

#include <string.h>

#include "json/syntax.h"

static const al_env_rule rules[] = {
	/* the dynamic loader and the C library */
	{"LD_*", "all", true},
	{"GCONV_PATH", "all", false},	  /* iconv modules (shared objects) */
	{"GLIBC_TUNABLES", "all", false}, /* loader and malloc behaviour */
	{"LOCPATH", "all", false},	  /* locale data parsed by libc */
	{"NLSPATH", "all", false},	  /* message catalogs */
	{"OPENSSL_CONF", "all", false},	  /* may load engines, providers */
	{"OPENSSL_ENGINES", "all", false},
	{"OPENSSL_MODULES", "all", false},
	/* sh (dash) and bash */
	{"BASH_ENV", "sh", false}, /* sourced by non-interactive bash */
	{"ENV", "sh", false},	   /* sourced by interactive sh / posix bash */
	{"BASH_FUNC_*", "sh", false}, /* exported functions */
	{"SHELLOPTS", "sh", false},   /* options at start: xtrace, ... */
	{"BASHOPTS", "sh", false},
	/* expanded (and run) on every traced line; bash ignores it from the
	 * environment only as root, and runs are not root */
	{"PS4", "sh", false},
	{"PROMPT_COMMAND", "sh", false},
	{"CDPATH", "sh", false}, /* where cd goes */
	{"GLOBIGNORE", "sh", false},
	{"EXECIGNORE", "sh", false}, /* which commands PATH lookup skips */
	{"BASH_LOADABLES_PATH", "sh", false}, /* enable -f shared objects */
	/* python (the run itself uses -E -s; a python it starts does not) */
	{"PYTHONSTARTUP", "python", false},
	{"PYTHONPATH", "python", false},
	{"PYTHONHOME", "python", false},
	{"PYTHONINSPECT", "python", false}, /* then reads stdin as code */
	{"PYTHONUSERBASE", "python", false}, /* site dir: .pth files run */
	{"PYTHONPLATLIBDIR", "python", false},
	{"PYTHONWARNINGS", "python", false}, /* imports a category module */
	{"PYTHONBREAKPOINT", "python", false},
	{"PYTHONPYCACHEPREFIX", "python", false},
	{"PYTHONOPTIMIZE", "python", false}, /* drops assert statements */
	/* node (javascript, typescript) */
	{"NODE_OPTIONS", "node", false}, /* --require, --import, --loader */
	{"NODE_PATH", "node", false},
	{"NODE_REPL_EXTERNAL_MODULE", "node", false},
	/* ruby */
	{"RUBYOPT", "ruby", false}, /* -r */
	{"RUBYLIB", "ruby", false},
	{"RUBYPATH", "ruby", false},
	{"GEM_HOME", "ruby", false},
	{"GEM_PATH", "ruby", false},
	{"RUBYGEMS_GEMDEPS", "ruby", false}, /* evaluates a Gemfile */
	{"BUNDLE_GEMFILE", "ruby", false},
	/* perl (reached from sh) */
	{"PERL5OPT", "perl", false}, /* -M, -d */
	{"PERL5LIB", "perl", false},
	{"PERLLIB", "perl", false},
	{"PERL5DB", "perl", false},
	{"PERLIO", "perl", false}, /* layers load PerlIO:: modules */
	/* powershell and the .NET runtime under it */
	{"PSModulePath", "powershell", false}, /* module autoloading */
	{"DOTNET_*", "powershell", false},	/* STARTUP_HOOKS, GCName, ... */
	{"COMPlus_*", "powershell", false},
	{"CORECLR_*", "powershell", false}, /* profiler shared objects */
};

#define N_RULES (sizeof(rules) / sizeof(rules[0]))

static bool rule_matches(const al_env_rule *r, const char *name)
{
	size_t n = strlen(r->pattern);
	if (r->pattern[n - 1] == '*')
		return strncmp(name, r->pattern, n - 1) == 0;
	return strcmp(name, r->pattern) == 0;
}

const al_env_rule *al_env_policy_match(const char *name)
{
	for (size_t i = 0; i < N_RULES; i++)
		if (rule_matches(&rules[i], name))
			return &rules[i];
	return NULL;
}

bool al_env_policy_reserved(const char *name)
{
	return al_env_name_reserved(name);
}

const al_env_rule *al_env_policy_table(size_t *n)
{
	*n = N_RULES;
	return rules;
}
