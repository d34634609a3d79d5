// Preloaded into a Node peer (node --require loopback.cjs): every server it starts listens on
// 127.0.0.1 only, and a port named in INTEROP_PORT_MAP ("3000=41234,3001=41235") is moved to
// its mapped port, so example servers with a fixed port can run beside each other. It changes
// nothing else about the peer.
'use strict';
const net = require('node:net');
const map = new Map(
  (process.env.INTEROP_PORT_MAP || '')
    .split(',')
    .filter(Boolean)
    .map(pair => pair.split('=').map(Number))
);
const moved = port => (map.has(Number(port)) ? map.get(Number(port)) : Number(port));
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callbacks = args.filter(a => typeof a === 'function');
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return listen.call(this, { port: moved(first), host: '127.0.0.1' }, ...callbacks);
  }
  if (first && typeof first === 'object' && first.path === undefined) {
    return listen.call(this, { ...first, port: moved(first.port || 0), host: '127.0.0.1' }, ...callbacks);
  }
  if (first === undefined || typeof first === 'function') {
    return listen.call(this, { port: 0, host: '127.0.0.1' }, ...callbacks);
  }
  return listen.apply(this, args);
};
