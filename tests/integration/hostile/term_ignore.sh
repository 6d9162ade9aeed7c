trap '' TERM
sleep 100 &
while :; do sleep 1; done
