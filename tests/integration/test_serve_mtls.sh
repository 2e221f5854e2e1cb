#!/bin/bash
# serve with mutual TLS and a bearer token: every route refuses a client
# without a certificate, with one from another CA, with an expired one, and
# a TLS 1.2-only client; a good certificate gets through; a missing or
# wrong token is refused.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
mkcerts
"$AGENT_DB" "$T/a.db" gpu-1 0 || fail "fixture db"

ROUTES=(/api/v1/health /api/v1/time "/api/v1/query?sql=SELECT%20count(*)%20FROM%20events"
	/api/v1/chains /api/v1/ops /api/v1/overview /metrics / /api/v1/nope)

start_agent gpu-1 "$T/a.db" --cert "$PKI/server.crt" --key "$PKI/server.key" \
	--client-ca "$PKI/ca.crt"
B=https://127.0.0.1:$PORT
TLS=(--cacert "$PKI/ca.crt")

for r in "${ROUTES[@]}"; do
	c=$(code "$B$r" "${TLS[@]}")
	[ "$c" = 403 ] || fail "no client cert on $r: got $c, want 403"
	body=$(curl -s --max-time 5 "${TLS[@]}" "$B$r")
	echo "$body" | grep -q '"error":"client certificate required"' || fail "no-cert body on $r: $body"

	c=$(code "$B$r" "${TLS[@]}" --cert "$PKI/wrong.crt" --key "$PKI/wrong.key")
	[ "$c" = 403 ] || fail "wrong-CA cert on $r: got $c, want 403"

	c=$(code "$B$r" "${TLS[@]}" --cert "$PKI/expired.crt" --key "$PKI/expired.key")
	[ "$c" = 403 ] || fail "expired cert on $r: got $c, want 403"

	# TLS 1.2 at most: the handshake itself fails (curl exit 35), no HTTP.
	c=$(code "$B$r" "${TLS[@]}" --cert "$PKI/client.crt" --key "$PKI/client.key" --tls-max 1.2)
	[ "$c" = 000 ] || fail "TLS 1.2 client on $r: got HTTP $c, want a failed handshake"

	c=$(code "$B$r" "${TLS[@]}" --cert "$PKI/client.crt" --key "$PKI/client.key")
	case $r in
	/api/v1/nope) want=404 ;;
	/) want='200|404' ;; # 200 once the dashboard is embedded
	*) want=200 ;;
	esac
	[[ $c =~ ^($want)$ ]] || fail "good cert on $r: got $c, want $want"
done
body=$(curl -s "${TLS[@]}" --cert "$PKI/expired.crt" --key "$PKI/expired.key" "$B/api/v1/health")
echo "$body" | grep -q expired || fail "expired cert reason missing: $body"
body=$(curl -s "${TLS[@]}" --cert "$PKI/wrong.crt" --key "$PKI/wrong.key" "$B/api/v1/health")
echo "$body" | grep -q "not signed by the trusted client CA" || fail "wrong-CA reason: $body"
n=$(curl -s "${TLS[@]}" --cert "$PKI/client.crt" --key "$PKI/client.key" \
	"$B/api/v1/query?sql=SELECT%20count(*)%20AS%20n%20FROM%20events" | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["rows"][0][0])')
[ "$n" = 330 ] || fail "query through mTLS: $n events, want 330"
# The TLS version actually negotiated with a good client is 1.3.
curl -sv "${TLS[@]}" --cert "$PKI/client.crt" --key "$PKI/client.key" "$B/api/v1/time" 2>&1 |
	grep -q "TLSv1.3" || fail "negotiated TLS is not 1.3"
# A non-local Host header is served (fan-out reaches agents by many names).
c=$(code "$B/api/v1/health" "${TLS[@]}" --cert "$PKI/client.crt" --key "$PKI/client.key" \
	-H "Host: gpu-node-17.cluster.example:7070")
[ "$c" = 200 ] || fail "foreign Host header: got $c"

# Token on top of mTLS: read from a file, compared in the same gate.
echo "s3cret-token-$RANDOM" >"$T/token"
start_agent gpu-1t "$T/a.db" --cert "$PKI/server.crt" --key "$PKI/server.key" \
	--client-ca "$PKI/ca.crt" --token-file "$T/token"
B=https://127.0.0.1:$PORT
GOOD=("${TLS[@]}" --cert "$PKI/client.crt" --key "$PKI/client.key")
for r in "${ROUTES[@]}"; do
	c=$(code "$B$r" "${GOOD[@]}")
	[ "$c" = 401 ] || fail "no token on $r: got $c, want 401"
	c=$(code "$B$r" "${GOOD[@]}" -H "Authorization: Bearer wrong")
	[ "$c" = 401 ] || fail "wrong token on $r: got $c, want 401"
	c=$(code "$B$r" "${TLS[@]}" -H "Authorization: Bearer $(cat "$T/token")")
	[ "$c" = 403 ] || fail "token without client cert on $r: got $c, want 403"
done
c=$(code "$B/api/v1/ops" "${GOOD[@]}" -H "Authorization: Bearer $(cat "$T/token")")
[ "$c" = 200 ] || fail "right token: got $c"
# A token that only shares a prefix with the right one is still wrong.
c=$(code "$B/api/v1/ops" "${GOOD[@]}" -H "Authorization: Bearer $(cut -c1-8 "$T/token")")
[ "$c" = 401 ] || fail "prefix of the token accepted: $c"
# The token never appears on the command line.
"$CW_BIN" serve --token s3cret --db "$T/a.db" 2>/dev/null && fail "--token accepted on argv"
echo "mtls: ${#ROUTES[@]} routes x 4 rejected client kinds, token gate: ok"
