/* The node warm loader (docs/sandbox.md, "Warm pools"): run as
 * `node -e LOADER` in a pool member.  It first undoes what eval mode adds
 * to a process that `node SCRIPT` does not have: the globals `module`,
 * `exports`, `require`, `__filename`, `__dirname`, the lazy globals of
 * the built-in modules (their setter is node's `setReal`),
 * `process._eval` and the `-e` in `process.execArgv` (which `fork`
 * would pass on).  Then it blocks reading the header from fd 0 (the
 * format of warm_python.c; the rlimits in it are ignored: node cannot
 * set its own, so a member starts with the run's, warm.h), puts
 * /dev/null on fd 0 when the run has no stdin (close 0, then open: the
 * lowest free descriptor), replaces process.env (and so the C environ)
 * with the run's, sets process.argv as `node SCRIPT ARGS` has it,
 * recomputes the global module paths (they follow HOME), resets the
 * RegExp statics as node does before a program, and runs the script
 * through `Module.runMain`, the entry point of a cold start: the same
 * CommonJS or ES module decision (package.json "type", .mjs), the same
 * require.main, module.id, paths and cache.  An uncaught exception
 * leaves as a cold one does (stack on stderr, status 1); process.exit
 * and exitCode pass untouched.  The loader is one closure: nothing of it
 * stays reachable from the program. */
#include "sandbox/warm_loaders.h"

const char al_sb_warm_node_loader[] =
	"(()=>{\n"
	"const fs=require('fs'),M=require('module'),g=globalThis,e=process.env;\n"
	"for(const k of['module','exports','__dirname','require','__filename'])delete g[k];\n"
	"for(const k of Object.getOwnPropertyNames(g)){\n"
	"const d=Object.getOwnPropertyDescriptor(g,k);\n"
	"if(d.set!==undefined&&d.set.name==='setReal')delete g[k];}\n"
	"delete process._eval;\n"
	"process.execArgv.length=0;\n"
	"const rd=(n)=>{const b=Buffer.alloc(n);\n"
	"for(let o=0;o<n;){let r=0;\n"
	"try{r=fs.readSync(0,b,o,n-o);}catch(x){\n"
	"if(x.code==='EAGAIN'||x.code==='EINTR')continue;}\n"
	"if(r===0)process.exit(125);\n"
	"o+=r;}\n"
	"return b;};\n"
	"const f=rd(+rd(10).toString()).toString().split('\\0');\n"
	"let j=2+2*f[1];\n"
	"const i=+f[j],n=+f[j+1];\n"
	"j+=2;\n"
	"if(f[0]!=='1'){fs.closeSync(0);\n"
	"if(fs.openSync('/dev/null','r')!==0)process.exit(125);}\n"
	"for(const k of Object.keys(e))delete e[k];\n"
	"for(const x of f.slice(j+n,-1)){const q=x.indexOf('=');\n"
	"if(q>0)e[x.slice(0,q)]=x.slice(q+1);}\n"
	"process.argv.splice(0,process.argv.length,process.execPath,...f.slice(j+i,j+n));\n"
	"M._initPaths();\n"
	"/^/.exec('');\n"
	"M.runMain(process.argv[1]);\n"
	"})()\n";
