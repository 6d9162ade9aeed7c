# bash completion for airlock(1)
_airlock()
{
	local cur prev words cword
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	words=("${COMP_WORDS[@]}")
	cword=$COMP_CWORD

	# The command: the first word after the global options.
	local i cmd="" sub=""
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--state-dir|--config) ((i++)) ;;
		-*) ;;
		*)
			if [[ -z $cmd ]]; then
				cmd=${words[i]}
			elif [[ -z $sub ]]; then
				sub=${words[i]}
			fi
			;;
		esac
	done

	case $prev in
	--state-dir|--outputs-dir)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
	--config|--request|--stdin-file|--file|--unix-socket)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
	-l|--lang)
		mapfile -t COMPREPLY < <(compgen -W "sh bash python javascript typescript ruby powershell c cpp go rust java" -- "$cur"); return ;;
	-p|--provider)
		mapfile -t COMPREPLY < <(compgen -W "disabled local sandbox remote" -- "$cur"); return ;;
	--network)
		mapfile -t COMPREPLY < <(compgen -W "none loopback host" -- "$cur"); return ;;
	--workspace)
		mapfile -t COMPREPLY < <(compgen -W "none ro rw" -- "$cur"); return ;;
	-e|--eval|-t|--timeout|-m|--memory|--pids|--cpu|--output-limit|--file-limit|\
	--output|--arg|--exec|--env|--tenant|-n|--older-than|--only|--listen|\
	--max-body-bytes|--max-connections|--max-connections-per-client|\
	--header-timeout-ms|--body-timeout-ms|--shutdown-grace-ms)
		return ;;
	esac

	local opts
	case $cmd in
	"")
		opts="run probe doctor contract audit runs image serve --state-dir --config --help --version" ;;
	run)
		opts="-l --lang -e --eval -p --provider -t --timeout -m --memory --pids --cpu
		      --output-limit --file-limit --network --stdin-file --file --output
		      --outputs-dir --workspace --arg --exec --env --tenant --request --json --raw
		      --toolbelt --operation --help"
		if [[ $cur != -* ]]; then
			mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return
		fi ;;
	probe) opts="-p --provider --json --help" ;;
	doctor) opts="--json --help" ;;
	contract) opts="-p --provider --all --json --only --help" ;;
	audit)
		if [[ -z $sub ]]; then opts="tail verify --help"
		elif [[ $sub == verify ]]; then opts="--store"
		else opts="-n --json"; fi ;;
	runs)
		if [[ -z $sub ]]; then opts="forget artifact --help"
		elif [[ $sub == forget ]]; then opts="--older-than"
		else opts=""; fi ;;
	image)
		if [[ -z $sub ]]; then opts="build import list --help"
		elif [[ $sub == build ]]; then opts="--packages --suite --mirror --variant"
		elif [[ $sub == list ]]; then opts="--json"
		else opts=""; fi ;;
	serve)
		opts="--listen --unix-socket --max-body-bytes --max-connections
		      --max-connections-per-client --header-timeout-ms --body-timeout-ms
		      --shutdown-grace-ms --help" ;;
	*) opts="" ;;
	esac
	# shellcheck disable=SC2086
	mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _airlock airlock
