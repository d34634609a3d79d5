// The bridge comparison's host on the TypeScript SDK (npm @modelcontextprotocol/sdk): its
// StdioClientTransport starts the bridge command given after `--` as desktop hosts built on
// it do. The same measures and JSON line as bridge_host.py, with the SDK's own request timeout
// left at its default (60 s), as hosts leave it: the stalled call ends at the first of the
// bridge's answer, that timeout, and STALL_CAP_S.
//
//   NPM=<node_modules> node bridge_host.mjs CALLS STALL_CAP_S -- COMMAND ARGS...
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const sdk = (path) => import(pathToFileURL(`${process.env.NPM}/@modelcontextprotocol/sdk/dist/esm/${path}`).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');

const split = process.argv.indexOf('--');
const calls = Number(process.argv[2]);
const cap = Number(process.argv[3]);
const [command, ...args] = process.argv.slice(split + 1);
const peakRssMib = (pid) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'));
  return line ? Math.round((Number(line.split(/\s+/)[1]) / 1024) * 10) / 10 : null;
};
const quantile = (values, q) => {
  const ordered = [...values].sort((a, b) => a - b);
  return ordered[Math.min(ordered.length - 1, Math.floor(q * ordered.length))];
};
const round = (x, digits) => Math.round(x * 10 ** digits) / 10 ** digits;

const started = performance.now();
const transport = new StdioClientTransport({ command, args, stderr: 'ignore' });
const client = new Client({ name: 'bridge-bench-host', version: '1.0.0' });
await client.connect(transport);
await client.callTool({ name: 'echo', arguments: { text: 'first' } });
const out = { cold_ms: round(performance.now() - started, 1) };
for (let i = 0; i < 10; i++) await client.callTool({ name: 'echo', arguments: { text: 'warm' } });
const times = [];
for (let i = 0; i < calls; i++) {
  const t0 = performance.now();
  await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  times.push(performance.now() - t0);
}
out.p50_ms = round(quantile(times, 0.5), 3);
out.p90_ms = round(quantile(times, 0.9), 3);
out.p99_ms = round(quantile(times, 0.99), 3);
const t0 = performance.now();
try {
  const result = await client.callTool({ name: 'sleep', arguments: { seconds: 120 } }, undefined, {
    signal: AbortSignal.timeout(cap * 1000),
  });
  out.stall = result.isError ? 'result (isError)' : 'result';
} catch (err) {
  out.stall = `error ${err.code}`;
}
out.stall_ms = Math.round(performance.now() - t0);
// The host's own give-up (the abort at the cap) is not an answer.
if (out.stall_ms >= cap * 1000 - 1) out.stall = 'capped';
out.rss_mib = transport.pid ? peakRssMib(transport.pid) : null;
console.log(JSON.stringify(out));
await client.close();
