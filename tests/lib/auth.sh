# Credentials for tests that start a server (sourced, not run). Every server
# requires one by default, so clients in tests present it as users do:
#   auth_from_file  AUTH=(-H "Authorization: Bearer <t>") from the token file
#                   a server generated ($HOME/.causeway/token), once it exists;
#                   explain/query --nodes read that file themselves.
#   auth_shared     one random token in $CW_TOKEN for every server and client
#                   the test starts (as a fleet shares one token file), for
#                   tests that must not write under the caller's $HOME.
# AUTH is empty until one of them runs; curl "${AUTH[@]}" ... sends it.
AUTH=()

auth_from_file() {
	local f=$HOME/.causeway/token i
	for i in $(seq 1 100); do
		[ -s "$f" ] && break
		sleep 0.05
	done
	[ -s "$f" ] || return 1
	AUTH=(-H "Authorization: Bearer $(cat "$f")")
}

auth_shared() {
	CW_TOKEN=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
	export CW_TOKEN
	AUTH=(-H "Authorization: Bearer $CW_TOKEN")
}

# Python snippets: `import cw_auth` makes urllib present the same token.
export PYTHONPATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1
