#!/usr/bin/python3
"""System calls per API run by process role and call, from bench/api_cpu.py X.sys.

usage: bench/api_syscalls.py X.sys RUNS [TOP]

Counts each sampled sys_enter under its thread's name (the role, as in
bench/api_phases.py) and its call's name (from the running kernel's
ausyscall-free table: /usr/include/asm/unistd_64.h)."""
import collections
import re
import subprocess
import sys


def names():
    table = {}
    try:
        with open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h") as f:
            for line in f:
                m = re.match(r"#define __NR_(\w+) (\d+)", line)
                if m:
                    table[int(m.group(2))] = m.group(1)
    except OSError:
        pass
    return table


def main():
    data, runs = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    table = names()
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,trace"],
                         capture_output=True, text=True).stdout
    by = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        m = re.match(r"\s*(.+?)\s+NR (\d+) ", line)
        if m:
            nr = int(m.group(2))
            by[m.group(1)][table.get(nr, str(nr))] += 1
    total = 0
    for comm, c in sorted(by.items(), key=lambda x: -sum(x[1].values())):
        n = sum(c.values())
        total += n
        calls = ", ".join(f"{k} {v / runs:.1f}" for k, v in c.most_common(top))
        print(f"{comm}: {n / runs:.1f} per run: {calls}")
    print(f"all: {total / runs:.1f} per run")


if __name__ == "__main__":
    main()
