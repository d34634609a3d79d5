#!/usr/bin/env bash
# The bridge comparison of BENCHMARKS.md, in one run: `mcp-call bridge` (both drivers) beside
# mcp-remote (npm, pinned in interop/install.sh), each started as a local server by the hosts'
# own client libraries (the Python SDK's stdio_client and the TypeScript SDK's
# StdioClientTransport: bench/peers/bridge_host.py and .mjs), in front of the same upstream
# (the Python SDK server over streamable HTTP, interop/peers/python_sdk_server.py); and
# `mcp-call bridge` in front of the same server run as a local process (--stdio), whose list
# changes the bridge listens for between the host's requests (mcp-remote fronts only URLs).
# Measured per host and bridge: cold start to the first call answered, per-call latency
# (CALLS sequential echo calls), the bridge process's peak memory, and a stalled upstream (a
# call the server answers after 120 s): the time until the host has any answer. mcp-call's
# budget is --timeout 2; mcp-remote has none, so the host waits for its own timeout (the
# TypeScript SDK's default, 60 s) or gives up at STALL_CAP_S (70 s; the Python SDK has none).
#
# Usage: bench/bridge.sh [--print]   (writes the table into BENCHMARKS.md between the
#   bridge markers, or prints it). Needs interop/install.sh's peers and a release mcp-call
#   (built here). Takes about 3 minutes, most of it mcp-remote's stalled calls.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export INTEROP_HOME="${INTEROP_HOME:-$HOME/.cache/mcp-interop}"
export NPM="$INTEROP_HOME/npm/node_modules"
PY="$INTEROP_HOME/venv-mcp/bin/python"
REMOTE="$NPM/mcp-remote/dist/proxy.js"
CALLS=${CALLS:-200}
STALL_CAP_S=${STALL_CAP_S:-70}
print=0
[ "${1-}" = --print ] && print=1
for peer in "$PY" "$NPM/@modelcontextprotocol/sdk/package.json" "$REMOTE"; do
  [ -e "$peer" ] || { echo "bench/bridge.sh: $peer is missing: run interop/install.sh first" >&2; exit 1; }
done
remote_version=$(node -p "require('$NPM/mcp-remote/package.json').version")

echo "== build (release)" >&2
cargo build --release -p mcp-call --bin mcp-call >&2
mcp_call="${CARGO_TARGET_DIR:-$root/target}/release/mcp-call"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
setsid "$PY" interop/peers/python_sdk_server.py sse "$port" >/dev/null 2>&1 </dev/null &
server=$!
trap 'kill -TERM -- -$server 2>/dev/null' EXIT
for _ in $(seq 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
url="http://127.0.0.1:$port/mcp"

rows=$(mktemp)
trap 'kill -TERM -- -$server 2>/dev/null; rm -f "$rows"' EXIT
measure() { # <host> <bridge label> <command...>
  local host=$1 label=$2 line
  shift 2
  echo "== $host host, $label" >&2
  case $host in
    python) line=$("$PY" bench/peers/bridge_host.py "$CALLS" "$STALL_CAP_S" -- "$@" 2>/dev/null) ;;
    ts) line=$(node bench/peers/bridge_host.mjs "$CALLS" "$STALL_CAP_S" -- "$@" 2>/dev/null) ;;
  esac
  python3 - "$host" "$label" "$line" >>"$rows" <<'PY'
import json, sys
host, label, line = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
hosts = {"python": "Python SDK `stdio_client`", "ts": "TypeScript SDK `StdioClientTransport`"}
stall = line["stall"]
if stall == "capped":
    answer = "none (the host gave up)"
elif stall.startswith("error -32001") and line["stall_ms"] >= 59000:
    answer = "the host's own timeout (-32001)"
elif stall.startswith("error -32001"):
    answer = "the bridge's budget (-32001)"
else:
    answer = stall
print(f"| {hosts[host]} | {label} | {line['cold_ms']:.0f} | {line['p50_ms']:.2f} / {line['p90_ms']:.2f} / {line['p99_ms']:.2f} | {line['rss_mib']} | {line['stall_ms'] / 1000:.2f} s | {answer} |")
PY
}
for host in python ts; do
  measure "$host" "\`mcp-call bridge\` (blocking, --timeout 2)" "$mcp_call" --driver blocking --url "$url" --timeout 2 --resolution ms bridge
  measure "$host" "\`mcp-call bridge\` (tokio, --timeout 2)" "$mcp_call" --driver tokio --url "$url" --timeout 2 --resolution ms bridge
  measure "$host" "mcp-remote $remote_version" node "$REMOTE" "$url" --allow-http
  for driver in blocking tokio; do
    measure "$host" "\`mcp-call bridge\` ($driver, --timeout 2), the server as a local process (--stdio)" \
      "$mcp_call" --driver "$driver" --stdio "$PY interop/peers/python_sdk_server.py stdio" \
      --timeout 2 --resolution ms bridge
  done
done

table=$(mktemp)
{
  echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (with local changes)'); \`bench/bridge.sh\`; CPU: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'), \`nproc\` $(nproc)."
  echo "Upstream: the Python SDK server (PyPI \`mcp\` $("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))')) over streamable HTTP on loopback, or (rows marked --stdio) the same server as a local process the bridge starts, whose list changes it listens for between the host's requests (each request takes the server's stdout from that subscription); $CALLS sequential echo calls after 10 to warm up; the stalled call is one the server answers after 120 s."
  echo
  echo "| host | bridge | cold start to the first answer (ms) | per call p50 / p90 / p99 (ms) | bridge peak RSS (MiB) | stalled upstream: the host has an answer after | that answer |"
  echo "|---|---|---|---|---|---|---|"
  cat "$rows"
} >"$table"
if [ "$print" = 1 ]; then
  cat "$table"
  rm -f "$table"
  exit 0
fi
doc="$root/BENCHMARKS.md"
begin='<!-- bridge:begin -->'
end='<!-- bridge:end -->'
if ! grep -q "$begin" "$doc"; then
  printf '\n## The bridge beside mcp-remote\n\n%s\n%s\n' "$begin" "$end" >>"$doc"
fi
awk -v begin="$begin" -v end="$end" -v table="$table" '
    $0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
' "$doc" >"$doc.new"
mv "$doc.new" "$doc"
rm -f "$table"
echo "== wrote the bridge table into $doc" >&2
