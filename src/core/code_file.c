/* The file that holds a piece of loaded code (see code_file.h). */
#include "core/code_file.h"

#include <link.h>
#include <stddef.h>
#include <stdint.h>

struct find {
	uintptr_t addr;
	const char *name;
	int found;
};

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct find *f = data;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
		if (f->addr >= lo && f->addr - lo < ph->p_memsz) {
			f->name = info->dlpi_name;
			f->found = 1;
			return 1;
		}
	}
	return 0;
}

const char *al_code_file(const void *addr)
{
	struct find f = {.addr = (uintptr_t)addr, .name = NULL, .found = 0};
	dl_iterate_phdr(visit, &f);
	if (f.found && f.name != NULL && f.name[0] == '/')
		return f.name;
	return "/proc/self/exe";
}
