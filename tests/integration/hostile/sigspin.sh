# Spins in the TERM trap, past the deadline.
trap 'while :; do :; done' TERM
echo ready
while :; do sleep 1; done
