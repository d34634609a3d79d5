// The TypeScript SDK's client (`Client` + `StreamableHTTPClientTransport`, npm
// `@modelcontextprotocol/sdk`) as one row of the cross-SDK benchmark, driven by `mcp-bench`
// (bench/src/sdks.rs says the protocol; interop/install.sh installs the SDK).
//
//   node bench/peers/ts_client.mjs URL CASE WARMUP_MS WINDOW_MS
//
// CASE is `sequential` (one session opened before the clock, one `tools/call` after another),
// `shared-N` (N calls in flight on that one client and session) or `cold-closed` (each
// operation a new client and transport: handshake, the call, the session ended with a DELETE,
// the client closed). Prints a `ready` line, waits for a line on stdin, runs, prints one result
// line (the raw latencies), then waits for stdin to close, so that its CPU time and peak memory
// can be read from /proc while it still exists. The SDK is found under $INTEROP_HOME (as the
// interop rows find it). It binds nothing and talks only to URL.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [url, kase, warmupArg, windowArg] = process.argv.slice(2);
const TOOL = 'echo';
const ARGUMENTS = { text: 'hi' };

const home = process.env.INTEROP_HOME || join(homedir(), '.cache', 'mcp-interop');
const sdk = join(home, 'npm', 'node_modules', '@modelcontextprotocol', 'sdk');
const say = (line) => process.stdout.write(JSON.stringify(line) + '\n');

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const stdinClosed = async () => {
  while (!(await lines.next()).done) {}
};

async function main() {
  if (!url || !kase || !(Number(warmupArg) >= 0) || !(Number(windowArg) > 0)) {
    throw new Error('usage: ts_client.mjs URL CASE WARMUP_MS WINDOW_MS');
  }
  const warmup = Number(warmupArg);
  const window = Number(windowArg);
  const load = (path) => import(pathToFileURL(join(sdk, 'dist', 'esm', path)).href);
  const { Client } = await load('client/index.js');
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  const version = JSON.parse(readFileSync(join(sdk, 'package.json'), 'utf8')).version;

  const open = async () => {
    const client = new Client({ name: 'mcp-bench-ts', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    return { client, transport };
  };
  const call = async ({ client }) => {
    const result = await client.callTool({ name: TOOL, arguments: ARGUMENTS });
    const text = result.content?.[0]?.text;
    if (text !== ARGUMENTS.text) throw new Error(`the echo answered ${JSON.stringify(text)}`);
  };
  const close = async ({ client, transport }) => {
    await transport.terminateSession();
    await client.close();
  };

  say({
    ready: true,
    sdk: `@modelcontextprotocol/sdk ${version}`,
    runtime: `node ${process.version}`,
  });
  if ((await lines.next()).done) return;

  let result;
  if (kase === 'sequential') {
    const live = await open();
    await call(live);
    result = await measure(warmup, window, () => call(live));
    await close(live);
  } else if (kase === 'cold-closed') {
    result = await measure(warmup, window, async () => {
      const live = await open();
      await call(live);
      await close(live);
    });
  } else if (/^shared-\d+$/.test(kase)) {
    const live = await open();
    await call(live);
    const tasks = Number(kase.slice('shared-'.length));
    result = await measureTasks(tasks, warmup, window, () => call(live));
    await close(live);
  } else {
    throw new Error(`no case ${kase}`);
  }
  say(result);
  await stdinClosed();
}

// One operation after another: untimed until the warm-up ends, then each one timed until the
// first that ends past the window (as mcp-bench's measure_sync).
async function measure(warmup, window, op) {
  const warmEnd = performance.now() + warmup;
  let warmOps = 0;
  while (performance.now() < warmEnd) {
    await op();
    warmOps += 1;
  }
  const latencies = [];
  const start = performance.now();
  const end = start + window;
  for (;;) {
    const t = performance.now();
    await op();
    const done = performance.now();
    latencies.push((done - t) * 1000);
    if (done >= end) {
      return { latencies_us: latencies, warm_ops: warmOps, wall_us: (done - start) * 1000 };
    }
  }
}

// `n` loops at once, each starting a call only before the window ends; a call started before
// the warm-up's end is untimed; the wall time runs from the warm-up's end to the last timed
// call's end (as mcp-bench's run_tasks).
async function measureTasks(n, warmup, window, op) {
  const warmEnd = performance.now() + warmup;
  const end = warmEnd + window;
  const latencies = [];
  let warmOps = 0;
  let lastDone = warmEnd;
  const task = async () => {
    for (;;) {
      const t = performance.now();
      if (t >= end) return;
      await op();
      const done = performance.now();
      if (t >= warmEnd) {
        latencies.push((done - t) * 1000);
        lastDone = Math.max(lastDone, done);
      } else {
        warmOps += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: n }, task));
  return { latencies_us: latencies, warm_ops: warmOps, wall_us: (lastDone - warmEnd) * 1000 };
}

main().then(
  () => process.exit(0),
  (err) => {
    say({ error: String(err?.stack || err).split('\n').slice(0, 3).join(' | ') });
    process.exit(1);
  },
);
