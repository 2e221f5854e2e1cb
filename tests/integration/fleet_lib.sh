# Helpers for the serve and fleet integration tests (sourced, not run).
# Certificates are generated here for every run; no private key is committed.
set -u
: "${CW_BIN:?}" "${CW_BUILD:?}" "${CW_ROOT:?}"
T=$(mktemp -d /tmp/cw-fleet.XXXXXX)
export HOME=$T/home # the generated server certificate lands under $HOME/.causeway
mkdir -p "$HOME"
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }

. "$CW_ROOT/tests/lib/auth.sh"

AGENT_DB=$CW_BUILD/fixtures/agent_db
ensure_fixture() {
	if [ ! -x "$AGENT_DB" ]; then
		make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" "$AGENT_DB" >/dev/null ||
			fail "cannot build the agent_db fixture"
	fi
}

# mkcerts: CA, server cert for 127.0.0.1/localhost (serverAuth, made as
# docs/fleet.md tells users to), a good client (clientAuth), a client from
# another CA; then, signed by the right CA with certtool templates and
# explicit dates: an expired client, a not-yet-valid one, a code-signing one,
# one without an EKU extension and one for both serverAuth and clientAuth.
mkcerts() {
	local d=$T/pki n
	mkdir -p "$d" && cd "$d" || exit 1
	local ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
	openssl req -x509 $ec -keyout ca.key -out ca.crt -days 2 -subj /CN=cw-test-ca 2>/dev/null
	openssl req -x509 $ec -keyout ca2.key -out ca2.crt -days 2 -subj /CN=cw-other-ca 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >srv.ext
	printf 'extendedKeyUsage=clientAuth\n' >cli.ext
	openssl req -new $ec -keyout server.key -out server.csr -subj /CN=agent 2>/dev/null
	openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
		-extfile srv.ext -out server.crt 2>/dev/null
	openssl req -new $ec -keyout client.key -out client.csr -subj /CN=workstation 2>/dev/null
	openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
		-extfile cli.ext -out client.crt 2>/dev/null
	openssl req -new $ec -keyout wrong.key -out wrong.csr -subj /CN=intruder 2>/dev/null
	openssl x509 -req -in wrong.csr -CA ca2.crt -CAkey ca2.key -CAcreateserial -days 2 \
		-extfile cli.ext -out wrong.crt 2>/dev/null
	printf 'activation_date = "2020-01-01 00:00:00"\nexpiration_date = "2020-01-02 00:00:00"\ntls_www_client\n' >expired.tmpl
	printf 'activation_date = "2099-01-01 00:00:00"\nexpiration_date = "2099-12-31 00:00:00"\ntls_www_client\n' >future.tmpl
	printf 'expiration_days = 2\ncode_signing_key\n' >codesign.tmpl
	printf 'expiration_days = 2\n' >noeku.tmpl
	printf 'expiration_days = 2\ntls_www_client\ntls_www_server\n' >dual.tmpl
	for n in expired future codesign noeku dual; do
		openssl req -new $ec -keyout $n.key -out $n.csr -subj /CN=$n 2>/dev/null
		printf 'cn = %s\nserial = %d\n' $n $((RANDOM + 1000)) >>$n.tmpl
		certtool --generate-certificate --load-request $n.csr --load-ca-certificate ca.crt \
			--load-ca-privkey ca.key --template $n.tmpl --outfile $n.crt >/dev/null 2>&1
	done
	chmod 600 ./*.key
	cd - >/dev/null || exit 1
	for n in ca server client wrong expired future codesign noeku dual; do
		[ -s "$d/$n.crt" ] || fail "openssl/certtool did not produce $n.crt"
	done
	PKI=$d
}

# start_agent NAME DB [serve args...]: starts `serve` on a free loopback
# port (port 0, read back from its banner); sets PORT, LAST_PID and LAST_LOG,
# and AUTH from the token the agent generated (none with --client-ca).
start_agent() {
	local name=$1 db=$2 log i
	shift 2
	# A fresh log per start: a restart under the same name must not read the
	# previous run's banner (and port) before its own shell truncates the file.
	AGENT_STARTS=$((${AGENT_STARTS:-0} + 1))
	log=$T/agent-$name-$AGENT_STARTS.log
	LAST_LOG=$log
	"$CW_BIN" --node "$name" serve --db "$db" --listen 127.0.0.1:0 "$@" 2>"$log" &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
	PORT=
	for i in $(seq 1 100); do
		[ -f "$log" ] && PORT=$(sed -n 's/.*serving https\?:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
		if [ -n "$PORT" ]; then
			grep -q 'bearer token \(generated \)\?in "' "$log" && auth_from_file
			return 0
		fi
		kill -0 "$LAST_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$log"
	fail "agent $name did not start"
}

# serving_port LOG PID: waits (10 s at most) for the "serving
# http(s)://127.0.0.1:PORT" line of a server (trace --serve) writing LOG
# while PID lives; sets PORT, returns 1 when it never came.
serving_port() {
	local i
	PORT=
	for i in $(seq 1 100); do
		PORT=$(sed -n 's/.*serving https\?:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" 2>/dev/null)
		[ -n "$PORT" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# code URL [curl args...]: prints the HTTP status ("000" when no HTTP answer).
code() {
	local url=$1
	shift
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${AUTH[@]}" "$@" "$url" 2>/dev/null
}
