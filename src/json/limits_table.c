/* The documented bounds of request limits (docs/contract.md). */
#include <stddef.h>

#include "json/limits_table.h"

#define DAY_MS (24ull * 60 * 60 * 1000)
#define TIB (1024ull * 1024 * 1024 * 1024)

const al_limit_row al_limit_rows[] = {
	{AL_LIMIT_WALL_MS, "wall_ms", DAY_MS},
	{AL_LIMIT_CPU_MS, "cpu_ms", DAY_MS},
	{AL_LIMIT_MEMORY_BYTES, "memory_bytes", TIB},
	{AL_LIMIT_PIDS, "pids", 4194304},	/* the kernel's PID_MAX_LIMIT */
	{AL_LIMIT_OUTPUT_BYTES, "output_bytes", 64ull * 1024 * 1024},
	{AL_LIMIT_FILE_BYTES, "file_bytes", TIB},
	{AL_LIMIT_WORKSPACE_BYTES, "workspace_bytes", TIB},
	{AL_LIMIT_OPEN_FILES, "open_files", 1048576}, /* default fs.nr_open */
	{AL_LIMIT_SOCKET_BYTES, "socket_bytes", TIB},
	{AL_LIMIT_STACK_BYTES, "stack_bytes", TIB},
	{0, NULL, 0},
};

uint64_t *al_limit_slot(al_limits *l, unsigned bit)
{
	switch (bit) {
	case AL_LIMIT_WALL_MS:
		return &l->wall_ms;
	case AL_LIMIT_CPU_MS:
		return &l->cpu_ms;
	case AL_LIMIT_MEMORY_BYTES:
		return &l->memory_bytes;
	case AL_LIMIT_PIDS:
		return &l->pids;
	case AL_LIMIT_OUTPUT_BYTES:
		return &l->output_bytes;
	case AL_LIMIT_FILE_BYTES:
		return &l->file_bytes;
	case AL_LIMIT_WORKSPACE_BYTES:
		return &l->workspace_bytes;
	case AL_LIMIT_SOCKET_BYTES:
		return &l->socket_bytes;
	case AL_LIMIT_STACK_BYTES:
		return &l->stack_bytes;
	default:
		return &l->open_files;
	}
}

uint64_t al_limit_get(const al_limits *l, unsigned bit)
{
	return *al_limit_slot((al_limits *)l, bit);
}
