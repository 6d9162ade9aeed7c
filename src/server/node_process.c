/* A fleet node's process, published and looked up (node_process.h). */
#include "server/node_process.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/identity.h"

/* The inode of this process's pid namespace (0: unknown). */
static uint64_t pid_ns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int al_node_process_publish(json_t *facts, const char *boot_id)
{
	uint64_t start = 0, ns = pid_ns();
	if (boot_id[0] == '\0' || ns == 0 ||
	    al_proc_stat(getpid(), &start, NULL) < 0)
		return 0;
	json_t *p = json_pack("{s:s, s:I, s:I, s:I}", "boot_id", boot_id,
			      "pid_ns", (json_int_t)ns, "pid",
			      (json_int_t)getpid(), "start",
			      (json_int_t)start);
	if (p == NULL || json_object_set_new(facts, "process", p) < 0)
		return -ENOMEM;
	return 0;
}

bool al_node_process_alive(const char *facts, const char *boot_id)
{
	json_t *o = facts != NULL ? json_loads(facts, 0, NULL) : NULL;
	json_t *p = json_object_get(o, "process");
	const char *boot =
		json_string_value(json_object_get(p, "boot_id"));
	json_int_t ns = json_integer_value(json_object_get(p, "pid_ns"));
	json_int_t pid = json_integer_value(json_object_get(p, "pid"));
	json_int_t start = json_integer_value(json_object_get(p, "start"));
	uint64_t seen = 0;
	char state = '?';
	/* A pid of another boot or namespace names some other process. */
	bool alive = boot != NULL && boot_id[0] != '\0' &&
		     strcmp(boot, boot_id) == 0 && ns > 0 &&
		     (uint64_t)ns == pid_ns() && pid > 0 && pid <= INT32_MAX &&
		     al_proc_stat((pid_t)pid, &seen, &state) == 0 &&
		     seen == (uint64_t)start && state != 'Z' && state != 'X';
	json_decref(o);
	return alive;
}
