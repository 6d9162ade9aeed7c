for d in /dev/mem /dev/kmsg /dev/sda /dev/vda /dev/tty /dev/vsock /dev/kvm; do
  [ -e "$d" ] && echo "EXISTS $d" || echo "absent $d"
done
ls /dev
echo "kcore $(head -c 16 /proc/kcore 2>/dev/null | wc -c)"
(echo b > /proc/sysrq-trigger) 2>/dev/null && echo "SYSRQ WRITTEN" || echo "sysrq denied"
(echo x > /proc/sys/kernel/core_pattern) 2>/dev/null && echo "CORE_PATTERN WRITTEN" || echo "core_pattern denied"
[ -e /sys/kernel ] && echo "SYS VISIBLE" || echo "no sys"
