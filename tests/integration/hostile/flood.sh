# Interleaved stdout/stderr floods, each one very long line (no newline).
head -c 3000000 /dev/zero | tr '\0' a &
head -c 3000000 /dev/zero | tr '\0' b >&2 &
wait
