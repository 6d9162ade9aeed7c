# Inode exhaustion of /tmp: empty files until the filesystem says no.
cd /tmp || exit 1
i=0
while [ $i -lt 200000 ]; do
	true > f$i 2>/dev/null || break
	i=$((i + 1))
done
echo created $i
true > last
