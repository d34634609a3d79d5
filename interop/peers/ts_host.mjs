// A host, as desktop apps built on the TypeScript SDK (npm @modelcontextprotocol/sdk) are: its
// StdioClientTransport starts the command given after `--` as a local MCP server and its
// Client speaks to it. For the bridge rows: the command is `mcp-call bridge ...`. The same
// steps and output lines as python_host.py:
//
//   NPM=<node_modules> node ts_host.mjs STEP... -- COMMAND ARGS...
//
// init, tools, call:<tool>:<json>, progress:<tool>:<json>, parallel:<n>[:<key>], changes:<tool>:<seconds>,
// listen:<seconds>, subscribe:<uri>, unsubscribe:<uri>, updates:<n>:<seconds>:<uri>, cancel:<tool>:<json>:<seconds>;
// HOST_ELICIT (a JSON object): the host declares elicitation and accepts each with it. The SDK's own request
// timeout is set to 10 minutes: the bridge's budget must be what ends a call. HOST_ENV (a JSON object of
// strings): the server's `env`, as a host config's `env` block (the SDK merges it over the few variables it
// inherits by default). A handshake that fails prints `init: error <code> <message>` and ends the steps.
import { pathToFileURL } from 'node:url';

const sdk = (path) => import(pathToFileURL(`${process.env.NPM}/@modelcontextprotocol/sdk/dist/esm/${path}`).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { ElicitRequestSchema, ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema } = await sdk('types.js');

const split = process.argv.indexOf('--');
const steps = process.argv.slice(2, split);
const [command, ...args] = process.argv.slice(split + 1);
const env = process.env.HOST_ENV ? JSON.parse(process.env.HOST_ENV) : undefined;
const transport = new StdioClientTransport({ command, args, env, stderr: 'inherit' });
const elicit = process.env.HOST_ELICIT;
const capabilities = elicit === undefined ? {} : { elicitation: {} };
const client = new Client({ name: 'ts-host', version: '1.0.0' }, { capabilities });
if (elicit !== undefined) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    console.log(`elicited: ${request.params.message}`);
    return { action: 'accept', content: JSON.parse(elicit) };
  });
}
const patience = { timeout: 600_000 };
// The server's tool list changes, as they come.
let changed = false;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed = true;
});
// The updates of each resource the server told of, counted as they come.
const updated = new Map();
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
  const uri = notification.params.uri;
  updated.set(uri, (updated.get(uri) ?? 0) + 1);
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (result) => result.content.map((block) => block.text ?? '?').join(' ');

for (const step of steps) {
  const [kind, ...rest] = step.split(':');
  if (kind === 'init') {
    try {
      await client.connect(transport, patience);
    } catch (err) {
      console.log(`init: error ${err.code} ${err.message}`);
      break;
    }
    const info = client.getServerVersion();
    console.log(`server: ${info.name} ${info.version}`);
  } else if (kind === 'tools') {
    const listed = await client.listTools(undefined, patience);
    console.log('tools: ' + listed.tools.map((tool) => tool.name).join(','));
  } else if (kind === 'call') {
    const [tool, ...json] = rest;
    const started = performance.now();
    try {
      const result = await client.callTool({ name: tool, arguments: JSON.parse(json.join(':') || '{}') }, undefined, patience);
      console.log(`call ${tool}: ${textOf(result)} isError=${result.isError ? 'True' : 'False'}`);
    } catch (err) {
      const ms = Math.round(performance.now() - started);
      console.log(`call ${tool}: error ${err.code} ${ms} ms ${err.message}`);
    }
  } else if (kind === 'progress') {
    const [tool, ...json] = rest;
    const heard = [];
    await client.callTool({ name: tool, arguments: JSON.parse(json.join(':') || '{}') }, undefined, {
      ...patience,
      onprogress: (progress) => heard.push(progress.progress),
    });
    console.log(`progress ${tool}: ${heard.length} notifications, last ${heard.length ? heard[heard.length - 1] : 'None'}`);
  } else if (kind === 'parallel') {
    const count = Number(rest[0]);
    const key = rest[1] || 'text';
    const answers = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        client
          .callTool({ name: 'echo', arguments: { [key]: `call ${i}` } }, undefined, patience)
          .then((r) => textOf(r).endsWith(`call ${i}`)),
      ),
    );
    console.log(`parallel: ${answers.filter(Boolean).length} of ${count} answered, each its own`);
  } else if (kind === 'changes') {
    // Calls the tool every 200 ms until the server's tool list change is heard.
    const [tool, seconds] = rest;
    const until = performance.now() + Number(seconds) * 1000;
    while (!changed && performance.now() < until) {
      await client.callTool({ name: tool, arguments: {} }, undefined, patience);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    console.log(`changes: ${changed ? 'notified' : 'none'}`);
  } else if (kind === 'listen') {
    // Waits, sending nothing, until the server's tool list change is heard.
    const until = performance.now() + Number(rest[0]) * 1000;
    while (!changed && performance.now() < until) await sleep(50);
    console.log(`listen: ${changed ? 'notified' : 'none'}`);
  } else if (kind === 'subscribe' || kind === 'unsubscribe') {
    const uri = rest.join(':');
    try {
      if (kind === 'subscribe') await client.subscribeResource({ uri }, patience);
      else await client.unsubscribeResource({ uri }, patience);
      console.log(`${kind} ${uri}: ok`);
    } catch (err) {
      console.log(`${kind} ${uri}: error ${err.code} ${err.message}`);
    }
  } else if (kind === 'updates') {
    // Waits, sending nothing, until that many updates of the resource were heard in all.
    const [count, seconds, ...parts] = rest;
    const uri = parts.join(':');
    const until = performance.now() + Number(seconds) * 1000;
    while ((updated.get(uri) ?? 0) < Number(count) && performance.now() < until) await sleep(50);
    console.log(`updates ${uri}: ${updated.get(uri) ?? 0}`);
  } else if (kind === 'cancel') {
    const tool = rest[0];
    const after = Number(rest[rest.length - 1]);
    const json = rest.slice(1, -1).join(':');
    const signal = AbortSignal.timeout(after * 1000);
    try {
      await client.callTool({ name: tool, arguments: JSON.parse(json || '{}') }, undefined, { ...patience, signal });
    } catch (err) {
      // Aborted, as asked.
    }
    const started = performance.now();
    await client.ping(patience);
    console.log(`cancel ${tool}: cancelled, ping ok ${Math.round(performance.now() - started)} ms`);
  }
}
await client.close();
