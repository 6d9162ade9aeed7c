# Setuid binaries are inert: su fails cleanly, and a shell started through
# the setuid newgrp has exactly our credentials and no capabilities.
ls -ln /usr/bin/su /usr/bin/newgrp | awk '{print $1, $NF}'
su -c id root </dev/null
echo su rc=$?
newgrp root <<'IN' 2>/dev/null
grep -E '^(Uid|Gid|CapEff|CapPrm|CapBnd)' /proc/self/status
IN
echo newgrp rc=$?
