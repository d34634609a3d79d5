#!/usr/bin/env node
// A stdio MCP server that reads every line and never answers any, and runs on after its
// input ends: only a signal ends it. Its arguments (a tag) mark the command line for pgrep.
// With STALL_STARTED set, it first writes its pid to that file: the row knows it ran.
if (process.env.STALL_STARTED) {
  require("fs").writeFileSync(process.env.STALL_STARTED, `${process.pid}\n`);
}
process.stdin.on("data", () => {});
process.stdin.on("end", () => {});
process.stdin.resume();
setInterval(() => {}, 1 << 30);
