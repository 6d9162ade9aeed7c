cat /etc/shadow 2>&1; echo "rc=$?"
ls /etc
