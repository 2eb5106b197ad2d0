// The benchmark's remote agent: an A2A server built with @a2a-js/sdk 1.3
// (node_modules, not ours) that streams timestamped chunks as artifact
// updates. All three systems of the end-to-end benchmark (bench/e2e/README.md)
// delegate to one instance of it.
//
// The task text (the user message) says what to stream:
//   chunks=N      artifact chunks (default 50)
//   interval_ms=I pause between chunks; 0 only yields to the event loop
//                 (setImmediate) so that the SDK writes as it goes (default 20)
//   size=S        bytes of text per chunk, marker included (default 48)
//   stream=J      tags the markers with J, so that a client reading several
//                 streams in one response (fan-out) tells them apart
// Each execution publishes: the Task (submitted), status working, N updates of
// one artifact named "assistant-output" (append after the first, lastChunk on
// the last), then status completed. Chunk i's text is padding followed by the
// marker "~c<i>:<ns>~" ("~c<i>:<ns>:<J>~" with stream=J), where ns is process.hrtime.bigint() (CLOCK_MONOTONIC,
// nanoseconds) read just before the event is published: the load client reads
// the same clock when the relayed frame arrives.
//
// The SDK's InMemoryTaskStore deep-copies the whole task on every load and
// save, so a long artifact would cost the remote O(n^2): this server keeps
// tasks in a lean store that drops artifact parts (status, history and
// artifact ids are kept). It serves tasks and cancels, not GetTask replays of
// content, which none of the systems asks for on the happy path.
//
// Routes (127.0.0.1, ephemeral port unless --port):
//   GET  /.well-known/agent-card.json      1.0 card (JSON-RPC, /jsonrpc)
//   GET  /v03/.well-known/agent-card.json  v0.3 card (JSON-RPC, /v03/jsonrpc)
//   POST /jsonrpc, /v03/jsonrpc            JSON-RPC; wire by the A2A-Version
//                                          header (missing or 0.3 means v0.3)
// Prints {"url": "http://127.0.0.1:PORT", "pid": PID} on stdout when ready;
// exits when stdin closes.
import http from 'node:http';
import {
  AgentEvent,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
} from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { answerJSONRPC, readJSONRPCBody } from '../../tests/node/a2a-jsonrpc.mjs';

const TaskState = { SUBMITTED: 1, WORKING: 2, COMPLETED: 3, CANCELED: 5 };
const TERMINAL = new Set([3, 4, 5, 7]);

const textPart = (value) => ({ content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: undefined });
const textOf = (msg) => (msg?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const status = (taskId, contextId, state) => AgentEvent.statusUpdate({
  taskId, contextId, metadata: undefined,
  status: { state, message: undefined, timestamp: new Date().toISOString() },
});

function param(text, name, def) {
  const m = new RegExp(`\\b${name}=(\\d+)`).exec(text);
  return m ? Number(m[1]) : def;
}

// chunkText returns S bytes: padding, then the marker of chunk i of stream
// tag (or untagged: -1) sent at ns.
function chunkText(i, ns, size, tag) {
  const marker = tag >= 0 ? `~c${i}:${ns}:${tag}~` : `~c${i}:${ns}~`;
  return marker.length >= size ? marker : 'x'.repeat(size - marker.length - 1) + ' ' + marker;
}

const sleep = (ms) => new Promise((r) => (ms > 0 ? setTimeout(r, ms) : setImmediate(r)));

// LeanTaskStore keeps each task without its artifacts' parts (see above);
// finished tasks are dropped after a while so a long run stays small.
class LeanTaskStore {
  tasks = new Map();
  async load(taskId) {
    const t = this.tasks.get(taskId);
    return t ? structuredClone(t) : undefined;
  }
  async save(task) {
    const lean = { ...task, artifacts: (task.artifacts ?? []).map((a) => ({ ...a, parts: [] })) };
    this.tasks.set(task.id, structuredClone(lean));
    if (TERMINAL.has(task.status?.state)) setTimeout(() => this.tasks.delete(task.id), 30_000).unref();
  }
  async list() {
    return { tasks: [], nextPageToken: '', pageSize: 0, totalSize: 0 };
  }
}

class ChunkExecutor {
  cancelled = new Set();

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage);
    const n = param(text, 'chunks', 50);
    const interval = param(text, 'interval_ms', 20);
    const size = param(text, 'size', 48);
    const tag = param(text, 'stream', -1);
    bus.publish(AgentEvent.task({
      id: taskId, contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined,
      status: { state: TaskState.SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
    }));
    bus.publish(status(taskId, contextId, TaskState.WORKING));
    const artifactId = `out-${crypto.randomUUID()}`;
    for (let i = 0; i < n; i++) {
      if (this.cancelled.has(taskId)) break;
      const ns = process.hrtime.bigint();
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: i > 0, lastChunk: i === n - 1, metadata: undefined,
        artifact: { artifactId, name: 'assistant-output', description: '', parts: [textPart(chunkText(i, ns, size, tag))], metadata: undefined, extensions: [] },
      }));
      await sleep(interval);
    }
    const was = this.cancelled.delete(taskId);
    bus.publish(status(taskId, contextId, was ? TaskState.CANCELED : TaskState.COMPLETED));
    bus.finished();
  }

  async cancelTask(taskId) {
    this.cancelled.add(taskId);
  }
}

const portArg = process.argv.indexOf('--port');
const server = http.createServer();
server.keepAliveTimeout = 60_000;
server.listen(portArg > 0 ? Number(process.argv[portArg + 1]) : 0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'bench-remote',
    description: 'Streams timestamped chunks as artifact updates (agentadaptor e2e benchmark)',
    version: '1.3.0',
    supportedInterfaces: [
      { url: `${base}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: `${base}/v03/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'chunks', name: 'Chunks', description: 'Streams timestamped chunks', tags: ['bench'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const legacyCard = {
    protocolVersion: '0.3.0',
    name: 'bench-remote-v03',
    description: 'The same remote on its v0.3 wire',
    url: `${base}/v03/jsonrpc`,
    preferredTransport: 'JSONRPC',
    version: '1.3.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'chunks', name: 'Chunks', description: 'Streams timestamped chunks', tags: ['bench'] }],
  };
  const handler = new DefaultRequestHandler(card, new LeanTaskStore(), new ChunkExecutor());
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  const cardJSON = JSON.stringify(card);
  const legacyJSON = JSON.stringify(legacyCard);

  server.on('request', async (req, res) => {
    const path = req.url.split('?')[0];
    if (req.method === 'GET' && path === '/.well-known/agent-card.json') {
      res.setHeader('Content-Type', 'application/json');
      res.end(cardJSON);
      return;
    }
    if (req.method === 'GET' && path === '/v03/.well-known/agent-card.json') {
      res.setHeader('Content-Type', 'application/json');
      res.end(legacyJSON);
      return;
    }
    if (req.method !== 'POST' || (path !== '/jsonrpc' && path !== '/v03/jsonrpc')) {
      res.statusCode = 404;
      res.end();
      return;
    }
    const body = await readJSONRPCBody(req, res);
    if (body !== undefined) await answerJSONRPC(req, res, body, { card, v1, legacy });
  });

  process.stdout.write(JSON.stringify({ url: base, pid: process.pid }) + '\n');
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
