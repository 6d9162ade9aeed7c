dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1
df -k /tmp | tail -1 | awk '{print "tmp size kb", $2}'
