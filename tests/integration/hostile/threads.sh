# Threads bomb from sh: every background job is a task of the pids cgroup
# too.  Prints how many were started; dash gives up ("Cannot fork") when
# the limit refuses one.
n=0
while [ $n -lt 5000 ]; do
	sleep 30 &
	n=$((n + 1))
	echo $n
done
echo unbounded
