#!/usr/bin/env bash
# A server only the proxy can resolve, through Debian's squid: a Python SDK server
# (peers/named_mcp_server.py) on 127.0.0.1, over plain HTTP and over HTTPS (a CA and a
# certificate for the name made here with openssl), under a name ($NAME) that no resolver on
# this machine knows and squid's own hosts file maps to 127.0.0.1 (peers/squid.conf.in).
# Checks, each a ping and an echo call: through --proxy, through HTTP_PROXY / HTTPS_PROXY;
# then NO_PROXY (and --noproxy) for the name: unreachable (exit 4) at once. Last, squid's
# access log holds tunnels to NAME:PORT, and nothing else (SQUID_LOG=FILE keeps a copy).
# Self-contained (it sources no helper), so it runs on any checkout that has these files.
set -u
: "${MCP_CALL:?MCP_CALL: the release mcp-call to test}"
: "${DRIVER:?DRIVER: blocking or tokio}"
: "${INTEROP_HOME:=$HOME/.cache/mcp-interop}"
: "${INTEROP_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

NAME=mcp.internal.example
PY="$INTEROP_HOME/venv-mcp/bin/python"
SQUID=$(command -v squid || echo /usr/sbin/squid)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/interop-squid-proxy-$DRIVER.XXXXXX")
failed=0
peers=()

ok() { printf 'ok %s\n' "$1"; }
fail() {
  printf 'FAIL %s: %s\n' "$1" "$2"
  failed=1
}
excerpt() { printf '%s' "$1" | tr '\n' '|' | cut -c1-300; }

cleanup() {
  local pid
  for pid in "${peers[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in "${peers[@]}"; do
    for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL -- "-$pid" 2>/dev/null
  done
  rm -rf "$DIR"
}
trap cleanup EXIT

# A port no other row of this matrix run was handed (peers/free_port.py says why).
free_port() {
  python3 "$INTEROP_DIR/peers/free_port.py"
}

# start NAME COMMAND...: in a process group of its own (ended on exit), output to $DIR/NAME.log.
start() {
  local name=$1
  shift
  setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null &
  peers+=("$!")
  PEER_PID=$!
}

# wait_port NAME PORT: polls until 127.0.0.1:PORT accepts (30 s at most); ends the row if not.
wait_port() {
  local name=$1 port=$2 start=$SECONDS
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$PEER_PID" 2>/dev/null || ((SECONDS - start >= 30)); then
      fail "$name starts" "not listening on $port: $(excerpt "$(tail -n 5 "$DIR/$name.log" 2>/dev/null)")"
      exit 1
    fi
    sleep 0.1
  done
}

# mcp [ENV=VALUE...] -- ARGS...: one mcp-call run on $DRIVER, with only the proxy variables
# given (the caller's own are cleared); sets RC, OUT, ERR, MS.
mcp() {
  local vars=() t0 t1
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  t0=$(date +%s%N)
  env -u HTTPS_PROXY -u HTTP_PROXY -u ALL_PROXY -u NO_PROXY \
    -u https_proxy -u http_proxy -u all_proxy -u no_proxy "${vars[@]}" \
    "$MCP_CALL" --driver "$DRIVER" --timeout 10 "$@" >"$DIR/out" 2>"$DIR/err" </dev/null
  RC=$?
  t1=$(date +%s%N)
  MS=$(((t1 - t0) / 1000000))
  OUT=$(cat "$DIR/out")
  ERR=$(cat "$DIR/err")
}

# check NAME RC OUT_REGEX [ERR_REGEX [MAX_MS]]: the last run exited RC, its stdout matches.
check() {
  local name=$1 rc=$2 out=$3 err=${4:-} max=${5:-} why=""
  [ "$RC" = "$rc" ] || why+="exit $RC, not $rc; "
  grep -Eq -- "$out" <<<"$OUT" || why+="stdout lacks /$out/; "
  [ -z "$err" ] || grep -Eq -- "$err" <<<"$ERR" || why+="stderr lacks /$err/; "
  [ -z "$max" ] || ((MS <= max)) || why+="took $MS ms, over $max; "
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "${why}stdout: $(excerpt "$OUT") stderr: $(excerpt "$ERR")"; fi
}

# The row tests what it says only if this machine cannot resolve the name.
if getent hosts "$NAME" >/dev/null; then
  fail "$NAME does not resolve here" "getent hosts: $(getent hosts "$NAME")"
  exit 1
fi
ok "$NAME does not resolve here"

# A CA and a certificate for the name, made now.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=interop squid-proxy CA" \
  -keyout "$DIR/ca.key" -out "$DIR/ca.pem" >/dev/null 2>&1 &&
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$NAME" \
    -keyout "$DIR/server.key" -out "$DIR/server.csr" >/dev/null 2>&1 &&
  printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$NAME" >"$DIR/ext" &&
  openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial \
    -days 2 -extfile "$DIR/ext" -out "$DIR/server.pem" >/dev/null 2>&1 ||
  { fail "certificates" "openssl failed"; exit 1; }

http_port=$(free_port)
start http "$PY" "$INTEROP_DIR/peers/named_mcp_server.py" "$NAME" "$http_port"
wait_port http "$http_port"
https_port=$(free_port)
start https "$PY" "$INTEROP_DIR/peers/named_mcp_server.py" "$NAME" "$https_port" \
  "$DIR/server.pem" "$DIR/server.key"
wait_port https "$https_port"

# The peer serves its name only (so a check that passes went out with the name in Host).
status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "http://127.0.0.1:$http_port/mcp" \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '{}')
if [ "$status" = 421 ]; then ok "peer refuses a Host that is not $NAME (421)"; else fail "peer refuses a Host that is not $NAME" "HTTP $status"; fi

squid_port=$(free_port)
printf '127.0.0.1 %s\n' "$NAME" >"$DIR/hosts"
sed -e "s|@DIR@|$DIR|g" -e "s|@SQUID_PORT@|$squid_port|g" \
  -e "s|@TARGET_PORTS@|$http_port $https_port|g" "$INTEROP_DIR/peers/squid.conf.in" >"$DIR/squid.conf"
# Started as root, squid drops to its effective user (Debian's `proxy`), which must be able
# to write its files here.
[ "$(id -u)" = 0 ] && chown -R proxy:proxy "$DIR" 2>/dev/null
chmod 755 "$DIR"
start squid "$SQUID" -N -f "$DIR/squid.conf"
wait_port squid "$squid_port"
PROXY="http://127.0.0.1:$squid_port"

HTTP_URL="http://$NAME:$http_port/mcp"
HTTPS_URL="https://$NAME:$https_port/mcp"
for scheme in http https; do
  if [ $scheme = http ]; then url=$HTTP_URL var=HTTP_PROXY tls=(); else url=$HTTPS_URL var=HTTPS_PROXY tls=(--cacert "$DIR/ca.pem"); fi
  mcp -- --url "$url" "${tls[@]}" --proxy "$PROXY" ping
  check "$scheme: ping through --proxy" 0 'interop-named'
  mcp -- --url "$url" "${tls[@]}" --proxy "$PROXY" call echo '{"text":"via squid"}'
  check "$scheme: call through --proxy" 0 '^via squid$'
  mcp "$var=$PROXY" -- --url "$url" "${tls[@]}" ping
  check "$scheme: ping through $var" 0 'interop-named'
  mcp "$var=$PROXY" -- --url "$url" "${tls[@]}" call echo '{"text":"via env"}'
  check "$scheme: call through $var" 0 '^via env$'
done

# NO_PROXY for the name: looked up here, not found; at once (well inside the 10 s budget).
# (Through squid the same runs succeed: exit 4 says no tunnel was used.)
mcp "HTTPS_PROXY=$PROXY" "NO_PROXY=$NAME" -- --url "$HTTPS_URL" --cacert "$DIR/ca.pem" ping
check "NO_PROXY=$NAME: unreachable at once" 4 '' 'could not be reached' 3000
mcp "HTTP_PROXY=$PROXY" -- --url "$HTTP_URL" --noproxy ".internal.example" call echo '{"text":"x"}'
check "--noproxy .internal.example: unreachable at once" 4 '' 'could not be reached' 3000

# What squid saw: tunnels to NAME:PORT, nothing else. Squid writes a tunnel's line when it
# closes: poll until both ports are there.
log=""
for _ in $(seq 100); do
  log=$(cat "$DIR/access.log" 2>/dev/null)
  grep -q "CONNECT $NAME:$http_port " <<<"$log" && grep -q "CONNECT $NAME:$https_port " <<<"$log" && break
  sleep 0.05
done
[ -n "${SQUID_LOG:-}" ] && printf '%s\n' "$log" >"$SQUID_LOG"
why=""
grep -q "TCP_TUNNEL/200 [0-9]* CONNECT $NAME:$http_port " <<<"$log" || why+="no tunnel to $NAME:$http_port; "
grep -q "TCP_TUNNEL/200 [0-9]* CONNECT $NAME:$https_port " <<<"$log" || why+="no tunnel to $NAME:$https_port; "
# (wait_port's connection, which sent nothing, is logged as transaction-end-before-headers.)
others=$(grep -v -e "TCP_TUNNEL/200 [0-9]* CONNECT $NAME:\($http_port\|$https_port\) " \
  -e " NONE_NONE/000 0 - error:transaction-end-before-headers " <<<"$log")
[ -z "$others" ] || why+="other lines: $(excerpt "$others"); "
if [ -z "$why" ]; then
  ok "squid's log: $(grep -c CONNECT <<<"$log") tunnels, each CONNECT $NAME:port, nothing else"
else
  fail "squid's log" "${why}log: $(excerpt "$log")"
fi

exit "$failed"
