# Never reads its (large) stdin, then blocks reading a FIFO no one writes.
mkfifo /tmp/p
echo blocking
read line < /tmp/p
echo UNBLOCKED
