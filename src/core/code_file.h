/* Internal: the file that holds a piece of loaded code. */
#ifndef AL_CORE_CODE_FILE_H
#define AL_CORE_CODE_FILE_H

/* The absolute path of the loaded object (a shared library) whose
 * segments contain addr, or "/proc/self/exe" for the main program (or
 * when no loaded object contains addr).  The string lives as long as the
 * object stays loaded.  It walks the program headers of the few loaded
 * objects; dladdr, which also looks for the nearest symbol, scanned the
 * whole symbol table of the (largely static) program: ~70 k instructions
 * a call, six calls per CLI run. */
const char *al_code_file(const void *addr);

#endif
