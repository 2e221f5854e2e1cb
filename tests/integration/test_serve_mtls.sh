#!/bin/bash
# serve with mutual TLS and a bearer token. On every route (each one
# src/server/routes.c dispatches, plus unknown ones and a wrong method) the
# gate refuses, with its own reason: no client certificate, one from another
# CA, an expired one, a not-yet-valid one, a node's serverAuth-only one and
# a code-signing one; a TLS 1.2-only client fails the handshake. Clients
# with clientAuth, with no EKU extension, or with serverAuth+clientAuth get
# through. A missing or wrong token is refused.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
mkcerts
"$AGENT_DB" "$T/a.db" gpu-1 0 || fail "fixture db"

# METHOD PATH [status a good client gets]
ROUTES=("GET /api/v1/health" "GET /api/v1/time"
	"GET /api/v1/query?sql=SELECT%20count(*)%20FROM%20events" "POST /api/v1/query"
	"GET /api/v1/chains" "GET /api/v1/ops" "GET /api/v1/overview" "HEAD /api/v1/ops"
	"GET /metrics" "GET /" "GET /index.html" "GET /api/v1/nope 404" "GET /nope 404"
	"DELETE /api/v1/health 405" "POST /metrics 405")
# client kind (PKI file stem, or "none") and the reason the gate must give
BAD=("none|client certificate required"
	"wrong|client certificate rejected: not signed by the trusted client CA"
	"expired|client certificate rejected: expired"
	"future|client certificate rejected: not yet valid"
	"server|client certificate rejected: its extended key usage does not allow client authentication"
	"codesign|client certificate rejected: its extended key usage does not allow client authentication")
GOODS=(client noeku dual)

start_agent gpu-1 "$T/a.db" --cert "$PKI/server.crt" --key "$PKI/server.key" \
	--client-ca "$PKI/ca.crt"
B=https://127.0.0.1:$PORT
TLS=(--cacert "$PKI/ca.crt")

# req KIND "METHOD PATH" [curl args...]: sets CODE and BODY.
req() {
	local kind=$1 m=${2%% *} rest=${2#* } p a=()
	shift 2
	p=${rest%% *}
	[ "$kind" = none ] || a=(--cert "$PKI/$kind.crt" --key "$PKI/$kind.key")
	case $m in
	HEAD) a+=(-I) ;;
	POST) a+=(-X POST -H 'Content-Type: application/json'
		--data '{"sql": "SELECT count(*) FROM events"}') ;;
	*) a+=(-X "$m") ;;
	esac
	CODE=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 5 "${TLS[@]}" "${a[@]}" "$@" \
		"$B$p" 2>/dev/null)
	BODY=$(cat "$T/body" 2>/dev/null)
}

n=0
for r in "${ROUTES[@]}"; do
	for b in "${BAD[@]}"; do
		kind=${b%%|*} why=${b#*|}
		req "$kind" "$r"
		[ "$CODE" = 403 ] || fail "$kind client on $r: got $CODE, want 403"
		# HEAD answers carry no body; the status is the check there.
		[ "${r%% *}" = HEAD ] || [ "$BODY" = "{\"error\":\"$why\"}" ] ||
			fail "$kind client on $r: body $BODY, want the reason \"$why\""
		n=$((n + 1))
	done

	# TLS 1.2 at most: the handshake itself fails (curl exit 35), no HTTP.
	req client "$r" --tls-max 1.2
	[ "$CODE" = 000 ] || fail "TLS 1.2 client on $r: got HTTP $CODE, want a failed handshake"

	want=${r#* }
	want=${want#* }
	[ "$want" = "${r#* }" ] && want=200
	for g in "${GOODS[@]}"; do
		req "$g" "$r"
		[ "$CODE" = "$want" ] || fail "$g client on $r: got $CODE, want $want ($BODY)"
	done
done
# A browser opening the dashboard gets the refusal as a page (same status,
# same reason); the API answers JSON even to a client that accepts HTML.
H=(-H 'Accept: text/html,application/xhtml+xml')
req expired "GET /" "${H[@]}"
[ "$CODE" = 403 ] && [[ $BODY == *"<h1>Client certificate refused</h1>"* ]] &&
	[[ $BODY == *"client certificate rejected: expired"* ]] || fail "browser refusal page: $CODE $BODY"
req none "GET /index.html" "${H[@]}"
[ "$CODE" = 403 ] && [[ $BODY == *"client certificate required"* ]] || fail "browser refusal page: $CODE $BODY"
req expired "GET /api/v1/overview" "${H[@]}"
[ "$BODY" = '{"error":"client certificate rejected: expired"}' ] || fail "API refusal for an HTML client: $BODY"
req expired "GET /metrics" "${H[@]}"
[ "$BODY" = '{"error":"client certificate rejected: expired"}' ] || fail "/metrics refusal for an HTML client: $BODY"
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
	req client "$r"
	[ "$CODE" = 401 ] || fail "no token on $r: got $CODE, want 401"
	req client "$r" -H "Authorization: Bearer wrong"
	[ "$CODE" = 401 ] || fail "wrong token on $r: got $CODE, want 401"
	req none "$r" -H "Authorization: Bearer $(cat "$T/token")"
	[ "$CODE" = 403 ] || fail "token without client cert on $r: got $CODE, want 403"
	req server "$r" -H "Authorization: Bearer $(cat "$T/token")"
	[ "$CODE" = 403 ] || fail "token with a serverAuth-only cert on $r: got $CODE, want 403"
done
c=$(code "$B/api/v1/ops" "${GOOD[@]}" -H "Authorization: Bearer $(cat "$T/token")")
[ "$c" = 200 ] || fail "right token: got $c"
# A token that only shares a prefix with the right one is still wrong.
c=$(code "$B/api/v1/ops" "${GOOD[@]}" -H "Authorization: Bearer $(cut -c1-8 "$T/token")")
[ "$c" = 401 ] || fail "prefix of the token accepted: $c"
# The token never appears on the command line.
"$CW_BIN" serve --token s3cret --db "$T/a.db" 2>/dev/null && fail "--token accepted on argv"
echo "mtls: ${#ROUTES[@]} routes x ${#BAD[@]} refused client kinds, TLS 1.2, ${#GOODS[@]} good kinds; token gate: ok"
