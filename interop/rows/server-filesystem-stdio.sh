#!/usr/bin/env bash
# The filesystem server (npm @modelcontextprotocol/server-filesystem 2026.8.31) over stdio on a
# temporary folder, one process per mcp-call run. Checks: ping finds the legacy era
# (2025-11-25), tools listing, write_file (the file is on disk with that content), read_text_file
# reads it back, list_directory shows it, a file of 120 KB written with --arg (typed from the
# inputSchema) and read back whole (lines far over a pipe's 64 KiB, both ways), a path outside
# the folder refused as isError (exit 1, --json), and no peer process left.
. "$INTEROP_DIR/lib.sh"

dir="$ROW_TMP/files-$TAG"
mkdir -p "$dir"
T=(--stdio "node $NPM/@modelcontextprotocol/server-filesystem/dist/index.js $dir")

mcp "${T[@]}" --json --trace ping
check "ping finds the legacy era (2025-11-25)" rc=0 out='"era":"legacy"' out='"protocolVersion":"2025-11-25"'

mcp "${T[@]}" --trace tools
check "tools lists write_file read_text_file list_directory" rc=0 \
  out='^write_file$' out='^read_text_file$' out='^list_directory$'

mcp "${T[@]}" --trace call write_file "{\"path\":\"$dir/note.txt\",\"content\":\"written by mcp-call\"}"
check "write_file" rc=0 out='Successfully wrote'
if [ "$(cat "$dir/note.txt" 2>/dev/null)" = "written by mcp-call" ]; then
  ok "the file is on disk"
else
  fail "the file is on disk" "$dir/note.txt holds: $(head -c 100 "$dir/note.txt" 2>&1)"
fi

mcp "${T[@]}" --trace call read_text_file "{\"path\":\"$dir/note.txt\"}"
check "read_text_file reads it back" rc=0 out='^written by mcp-call$'

mcp "${T[@]}" --trace call list_directory "{\"path\":\"$dir\"}"
check "list_directory shows it" rc=0 out='^\[FILE\] note\.txt$'

big=$(head -c 120000 /dev/zero | tr '\0' 'y')
mcp "${T[@]}" --trace call write_file --arg "path=$dir/big.txt" --arg "content=$big"
check "write_file of 120 KB with --arg" rc=0 out='Successfully wrote'
size=$(wc -c <"$dir/big.txt" 2>/dev/null || echo 0)
if [ "$size" = 120000 ]; then ok "the 120 KB file is on disk"; else fail "the 120 KB file is on disk" "$size bytes"; fi
mcp "${T[@]}" --trace call read_text_file "{\"path\":\"$dir/big.txt\"}"
check "read_text_file reads 120 KB back whole" rc=0 out='^y+$' out_bytes=120000

mcp "${T[@]}" --trace --json call read_text_file '{"path":"/etc/hostname"}'
check "a path outside the folder: isError, exit 1" rc=1 out='"isError":true' out='Access denied'

no_process_left "no peer process left" "$dir"
finish
