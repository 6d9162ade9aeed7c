/* Internal: whether a fleet node whose lease ran out is dead or only slow.
 *
 * A lease runs out when a node's heartbeat has not reached the store for
 * lease_ms: a dead node, or one the store (or the machine) kept waiting.
 * On one host the difference can be seen: each node publishes its process
 * (boot id, pid namespace, pid, start time) in its facts, and a node of
 * the same boot and pid namespace finds it in /proc.  Its runs are left to
 * it — neither adopted nor settled lost — while it lives (docs/scale-out.md,
 * "Failures"). */
#ifndef AL_SERVER_NODE_PROCESS_H
#define AL_SERVER_NODE_PROCESS_H

#include <jansson.h>
#include <stdbool.h>

/* Adds "process": {"boot_id", "pid_ns", "pid", "start"} for this process
 * to facts; boot_id "" (unknown) adds nothing.  0 or -ENOMEM. */
int al_node_process_publish(json_t *facts, const char *boot_id);

/* true when the node whose published facts (JSON text) these are is a
 * live process seen from here: same boot and pid namespace, its pid has
 * its start time and is no zombie.  false when it is gone, unknown, or
 * cannot be seen from here (then only its lease tells). */
bool al_node_process_alive(const char *facts, const char *boot_id);

#endif
