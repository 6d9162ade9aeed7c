bomb() { bomb | bomb & }
bomb
sleep 2
echo done
