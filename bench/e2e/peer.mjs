// The benchmark's peer: the AG-UI project's own A2A bridge, @ag-ui/a2a 0.0.6
// (node_modules, pinned in package.json), wrapping the benchmark's remote and
// served as an AG-UI endpoint over HTTP, the way AG-UI's TypeScript server
// examples serve an agent: POST a RunAgentInput (validated with @ag-ui/core's
// schema), answer text/event-stream, each event of agent.run(input) encoded
// by @ag-ui/encoder's EventEncoder and written as it comes.
//
// @ag-ui/a2a talks to the remote with the A2A client it was published with
// (@a2a-js/sdk ^0.2.2, installed under node_modules/@ag-ui/a2a by npm), which
// speaks the v0.3 wire: it reads the remote's v0.3 card. One A2AClient and one
// A2AAgent serve every request (A2AAgent patches its client's methods when it
// is constructed, and clone() re-patches the same client, so an agent per
// request would stack wrappers); each request is one agent.run(input).
//
// How 0.0.6 renders the remote's events: a Task and each artifact update
// become a RAW event carrying the A2A event; a status update with a message
// becomes TEXT_MESSAGE_CHUNK; then RUN_FINISHED when the A2A stream ends.
//
// Usage: node bench/e2e/peer.mjs --remote http://127.0.0.1:PORT [--port P]
// Prints {"url": "http://127.0.0.1:PORT", "pid": PID} when ready; exits when
// stdin closes.
import http from 'node:http';
import { createRequire } from 'node:module';
import { A2AAgent } from '@ag-ui/a2a';
import { EventEncoder } from '@ag-ui/encoder';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const remote = arg('--remote');
if (!remote) {
  console.error('usage: peer.mjs --remote URL [--port P]');
  process.exit(2);
}

// The A2A client @ag-ui/a2a depends on (not the repository's @a2a-js/sdk 1.3).
const requireFromPeer = createRequire(new URL('../../node_modules/@ag-ui/a2a/package.json', import.meta.url));
const { A2AClient } = requireFromPeer('@a2a-js/sdk/client');

const client = new A2AClient(remote, 'v03/.well-known/agent-card.json');
await client.getAgentCard();
const agent = new A2AAgent({ a2aClient: client });

const server = http.createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.setHeader('Content-Type', 'application/json');
    res.end('{"status":"ok"}');
    return;
  }
  if (req.method !== 'POST' || req.url.split('?')[0] !== '/agui') {
    res.statusCode = 404;
    res.end();
    return;
  }
  let input;
  try {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    input = RunAgentInputSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch (err) {
    res.statusCode = 400;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ error: String(err?.message ?? err) }));
    return;
  }
  const encoder = new EventEncoder({ accept: req.headers.accept });
  res.writeHead(200, { 'Content-Type': encoder.getContentType(), 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  const sub = agent.run(input).subscribe({
    next: (event) => res.write(encoder.encode(event)),
    error: () => res.end(), // the agent emitted RUN_ERROR before erroring
    complete: () => res.end(),
  });
  res.on('close', () => sub.unsubscribe());
});
server.keepAliveTimeout = 60_000;
const port = Number(arg('--port') ?? 0);
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}`, pid: process.pid }) + '\n');
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
