#!/usr/bin/env bash
# Structured results checked against their tools' outputSchema and read into a Rust type
# (mcp-call --validate-output; mcp-typed-call, tests/src/bin/mcp-typed-call.rs, calling
# call_tool_as::<Weather> with Weather { temperature: f64, conditions: String, humidity: f64 }),
# against three servers whose schemas nobody here wrote:
# * server-everything (npm @modelcontextprotocol/server-everything 2026.8.31) over streamable
#   HTTP: get-structured-content {"location":"New York"}; its zod schema is listed as draft-07
#   ("$schema": "http://json-schema.org/draft-07/schema#", type object, temperature/conditions/
#   humidity with descriptions, all required, "additionalProperties": false);
# * FastMCP (PyPI fastmcp 4.2.3) over stdio, peers/fastmcp_server.py: get_weather(city)
#   returning a dataclass; FastMCP lists {"type":"object","description":...,"properties":
#   {"temperature":{"type":"number"},"conditions":{"type":"string"},"humidity":{"type":
#   "number"}},"required":[all three]}: no $schema (so 2020-12), no titles, extra keys allowed;
# * the Python SDK (PyPI mcp 2.3.0, MCPServer) over streamable HTTP answering JSON,
#   peers/python_sdk_server.py: get_weather(city) returning a pydantic model; the SDK lists
#   pydantic's schema: the same, plus "title": "Weather" and a title per property, no $schema.
# Checks, for each: `mcp-call --validate-output --json call` succeeds with the
# structuredContent; `mcp-call --validate-output --trace call` on a fresh session walks
# tools/list before tools/call; `mcp-typed-call --validate` prints the Weather; and a result
# that is not a Weather (the SDKs wrap add's integer as {"result": N}; server-everything's echo
# has no structuredContent) ends in `error kind=unreadable_result`, exit 1.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer everything env PORT="$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
wait_port everything "$port"
EVERYTHING=(--url "http://127.0.0.1:$port/mcp")

sdk_port=$(free_port)
start_peer sdk "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" json "$sdk_port"
wait_port sdk "$sdk_port"
SDK=(--url "http://127.0.0.1:$sdk_port/mcp")

FASTMCP=(--stdio "$PY_FASTMCP $INTEROP_DIR/peers/fastmcp_server.py stdio $TAG")

# structured NAME TARGET TOOL ARGS WEATHER: the checks above for one server (TARGET: the name
# of the array holding its --url or --stdio); WEATHER is the Debug line mcp-typed-call must
# print (a regex).
structured() {
  local name=$1 tool=$3 args=$4 weather=$5
  local -n target=$2
  mcp "${target[@]}" --validate-output --json call "$tool" "$args"
  check "$name: --validate-output call $tool: checked, structuredContent kept" rc=0 \
    out='"structuredContent":\{' out='"temperature":' out='"humidity":'

  mcp "${target[@]}" --validate-output --trace call "$tool" "$args"
  check "$name: --validate-output on a fresh session walks tools/list before tools/call" rc=0 \
    err_seq='method=tools/list [^|]*status=(200|ok)\|(.*\|)?leg=[0-9]+ method=tools/call [^|]*status=(200|ok)'

  typed "${target[@]}" --validate "$tool" "$args"
  check "$name: mcp-typed-call --validate $tool reads a Weather" rc=0 out="^$weather\$" no_err='^error'

  typed "${target[@]}" "$tool" "$args"
  check "$name: mcp-typed-call $tool without --validate reads it too (nothing listed, nothing checked)" \
    rc=0 out="^$weather\$"
}

structured "server-everything" EVERYTHING get-structured-content '{"location":"New York"}' \
  'Weather \{ temperature: 33\.0, conditions: "Cloudy", humidity: 82\.0 \}'
typed "${EVERYTHING[@]}" --validate echo '{"message":"hi"}'
check "server-everything: echo read as a Weather: no structuredContent, unreadable_result" rc=1 \
  err='^error kind=unreadable_result .*no structuredContent' no_out='.'

structured "python sdk" SDK get_weather '{"city":"Oslo"}' \
  'Weather \{ temperature: 18\.0, conditions: "cloudy in Oslo", humidity: 65\.0 \}'
typed "${SDK[@]}" --validate add '{"a":1,"b":2}'
check "python sdk: add ({\"result\": 3}) read as a Weather: unreadable_result" rc=1 \
  err='^error kind=unreadable_result .*does not fit the type' no_out='.'

# FastMCP over stdio: --stdio splits at whitespace; the command has no quoted words.
structured "fastmcp" FASTMCP get_weather '{"city":"Oslo"}' \
  'Weather \{ temperature: 21\.5, conditions: "sunny in Oslo", humidity: 40\.0 \}'
typed "${FASTMCP[@]}" --validate add '{"a":1,"b":2}'
check "fastmcp: add ({\"result\": 3}) read as a Weather: unreadable_result" rc=1 \
  err='^error kind=unreadable_result .*does not fit the type' no_out='.'
no_process_left "no fastmcp process left" "$TAG"
finish
