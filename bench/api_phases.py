#!/usr/bin/python3
"""CPU ms per run by process role and phase, from bench/api_cpu.py X.data.

usage: bench/api_phases.py X.data RUNS

A sample is charged to its thread's name (the role) and to the first phase,
in the order listed, that names a function anywhere in its call chain
(kernel chains are exact; user chains without frame pointers are not, so
user code is mostly "other").  "file create/unlink" is mostly ext4's
inode allocator on a state directory there."""
import sys, re, collections, subprocess
data, runs = sys.argv[1], int(sys.argv[2])
out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,period,ip,sym"],
                     capture_output=True, text=True).stdout
# phase by the first matching kernel/user frame (innermost first)
rules = [
 ("fsync/fdatasync", r"__x64_sys_(fsync|fdatasync)|sqlite3OsSync|unixSync"),
 ("net namespace set-up/teardown", r"copy_net_ns|cleanup_net|setup_net|ops_init|__register_sysctl_table|unregister_net_sysctl|put_net"),
 ("cgroup mkdir/rmdir/attach", r"cgroup_mkdir|cgroup_rmdir|cgroup_attach|cgroup_can_fork|cgroup_post_fork|cgroup1_|mem_cgroup_css_alloc|mem_cgroup_css_free|css_"),
 ("mount/umount/pivot_root", r"__x64_sys_(mount|umount|pivot_root|open_tree|move_mount|mount_setattr|fsopen|fsmount)|path_mount|do_mount"),
 ("seccomp/landlock load", r"seccomp|do_jit|bpf_|landlock"),
 ("execve + dynamic linking", r"__x64_sys_execve|bprm_|load_elf_binary|_dl_|handle_amd|dl_main|_dl_start|init_cpu_features"),
 ("fork/clone (page tables copied)", r"copy_process|dup_mm|copy_page_range|__x64_sys_clone"),
 ("process exit/teardown", r"do_exit|exit_mmap|unmap_vmas|free_pgtables|release_task|__x64_sys_exit"),
 ("file create/unlink/rename/mkdir", r"__x64_sys_(openat|open|unlink|unlinkat|rename|renameat|renameat2|mkdir|mkdirat|rmdir|creat|fchmod|ftruncate|fallocate|symlink|chown|fchown|linkat)"),
 ("stat/read/other file syscalls", r"kernfs_fop_open|seq_read|__x64_sys_(newfstatat|statx|fstat|read|pread64|readlink|getdents64|access|faccessat|faccessat2|close|lseek|write|pwrite64|readv|writev)"),
 ("sockets/poll (HTTP, hand-off)", r"__x64_sys_(recvfrom|sendto|recvmsg|sendmsg|accept|accept4|poll|ppoll|epoll_wait|select|socket|connect|shutdown|setsockopt)"),
 ("SQLite (user)", r"sqlite3|^pager|^btree|^wal"),
 ("JSON (jansson)", r"json_|^lex_|stream_get|dump_|strbuffer|hashtable|hashlittle"),
 ("page faults", r"exc_page_fault|handle_mm_fault"),
 ("scheduler/other kernel", r"schedule|finish_task_switch|irq|softirq|timer"),
]
rules = [(n, re.compile(p)) for n, p in rules]
roles = {"MHD-connection": "daemon: HTTP connection threads (host pipeline)", "MHD-listen": "daemon: listener",
         "airlock": "daemon: other threads (idle-pool spawn, watchers)", "exe": "supervisor (exec'd per run) + sandbox launcher",
         "airlock-init": "sandbox init (pid 1 in the run)", "dash": "the program (sh true)",
         # the init started in its caller's memory is "exe" until it
         # executes airlock-init from its memfd (docs/sandbox.md)
         "memfd:airlock-i": "sandbox init once airlock-init (pid 1 in the run)"}
tot = collections.Counter(); ph = collections.defaultdict(collections.Counter)
comm = per = None; frames = []
def flush():
    if comm is None: return
    phase = "other (user code)"
    for n, rx in rules:
        if any(rx.search(f) for f in frames):
            phase = n; break
    tot[comm] += per; ph[comm][phase] += per
for line in out.splitlines():
    if not line.strip():
        flush(); comm = None; frames = []; continue
    if not line.startswith((" ", "\t")):
        parts = line.split()
        comm = " ".join(parts[:-1]) if len(parts) > 1 else parts[0]
        try: per = int(parts[-1])
        except ValueError: per = 0
        continue
    bits = line.split(None, 1)
    if len(bits) == 2: frames.append(bits[1])
flush()
allp = sum(tot.values())
print(f"total CPU per run: {allp/1e6/runs:.2f} ms")
for c, v in tot.most_common():
    print(f"\n{roles.get(c, c)} [{c}]: {v/1e6/runs:.2f} ms/run")
    for p, w in ph[c].most_common():
        print(f"   {p}: {w/1e6/runs:.2f}")
