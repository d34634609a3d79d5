#!/usr/bin/env bash
# no-skipped.sh RESULTS_DIR...
#
# Fails when a conformance run skipped a check. Each RESULTS_DIR is the CONF_OUT of one run of
# conformance.sh (or ../shared/conformance/run.sh): the suite leaves one checks.json per scenario
# under it, in <scenario>-<timestamp>/ (auth scenarios under auth/). A SKIPPED check is a check not
# passed, yet the suite's verdict ignores it: this lists every one as
#   SKIPPED <run> <scenario> <check name> (<check id>): <the suite's reason, when it gives one>
# and exits 1, except for the entries of .ci/conformance-permitted-skips (each with its reason),
# which are listed as permitted. It also exits 1 when a directory holds no checks.json (the run
# recorded nothing) and when a permitted entry was skipped in no run (stale: remove it).
# Ends with:  no-skipped: S skipped checks (P permitted) in N scenario runs
# Needs node (the suite does too).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: no-skipped.sh RESULTS_DIR..." >&2; exit 2; }
permitted="$(dirname "$0")/conformance-permitted-skips"
exec node - "$permitted" "$@" <<'EOF'
const fs = require('fs');
const path = require('path');
const [permittedFile, ...dirs] = process.argv.slice(2);
const permitted = new Map(); // "scenario name" -> times seen skipped
if (fs.existsSync(permittedFile)) {
  for (const line of fs.readFileSync(permittedFile, 'utf8').split('\n')) {
    const entry = line.replace(/#.*/, '').trim().split(/\s+/).join(' ');
    if (entry) permitted.set(entry, 0);
  }
}
// <scenario>-2026-12-01T23-05-24-646Z: the suite's directory for one scenario's run.
const stamp = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;
const found = []; // [results dir, checks.json path]
const walk = (root, dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(root, p);
    else if (e.name === 'checks.json') found.push([root, p]);
  }
};
let runs = 0, skipped = 0, allowed = 0, bad = 0;
for (const dir of dirs) {
  const before = found.length;
  if (fs.existsSync(dir)) walk(dir, dir);
  if (found.length === before) {
    console.log(`no-skipped: no checks.json under ${dir}: the run recorded nothing`);
    bad++;
  }
}
for (const [root, file] of found) {
  const run = path.basename(root);
  const scenario = path.relative(root, path.dirname(file)).replace(stamp, '');
  runs++;
  let checks;
  try {
    checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    console.log(`no-skipped: ${file}: not JSON (${err.message})`);
    bad++;
    continue;
  }
  for (const check of Array.isArray(checks) ? checks : []) {
    if (check.status !== 'SKIPPED') continue;
    skipped++;
    const key = `${scenario} ${check.name}`;
    const reason = check.errorMessage ? `: ${check.errorMessage}` : '';
    const line = `${run} ${scenario} ${check.name} (${check.id})${reason}`;
    if (permitted.has(key)) {
      permitted.set(key, permitted.get(key) + 1);
      allowed++;
      console.log(`  permitted SKIPPED ${line}`);
    } else {
      console.log(`  SKIPPED ${line}`);
      bad++;
    }
  }
}
for (const [key, seen] of permitted) {
  if (seen === 0) {
    console.log(`no-skipped: stale entry in ${path.basename(permittedFile)}: "${key}" was skipped in no run; remove it`);
    bad++;
  }
}
console.log(`no-skipped: ${skipped} skipped checks (${allowed} permitted) in ${runs} scenario runs`);
process.exit(bad === 0 ? 0 : 1);
EOF
