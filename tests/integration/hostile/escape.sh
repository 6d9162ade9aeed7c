setsid sh -c 'sleep 300 & sleep 300 &' &
(trap '' TERM HUP; sleep 300) &
echo started
