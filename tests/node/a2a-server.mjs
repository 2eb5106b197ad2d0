// An A2A agent built with @a2a-js/sdk 1.3 (an implementation nobody here
// wrote), for interop tests of our Go client (pkg/clients/a2a). Driven by
// pkg/bridges/a2a's interop test.
//
// express is only an optional peer dependency of the SDK and is not
// installed, so this mounts the SDK's own transport handlers
// (JsonRpcTransportHandler for the 1.0 wire, LegacyJsonRpcTransportHandler
// for the v0.3 wire) on node:http, mirroring what the SDK's express
// jsonRpcHandler({legacyCompat: {enabled: true}}) does: the wire is chosen
// by the A2A-Version request header (missing or "0.3" means v0.3).
//
// Routes (all on 127.0.0.1, ephemeral port):
//   GET  /.well-known/agent-card.json      1.0 card, serialized exactly as the
//                                          SDK's agentCardHandler does
//                                          (JSON.stringify of its AgentCard)
//   GET  /v03/.well-known/agent-card.json  a v0.3 card (hand-written: the SDK's
//                                          card converter is not exported)
//   POST /jsonrpc, /v03/jsonrpc            JSON-RPC, wire by A2A-Version header
//
// Behaviour, chosen by the user's message text:
//   contains "slow"   status working + one text chunk, then waits until
//                     cancelled (tasks/cancel) -> TASK_STATE_CANCELED
//   contains "ask"    one text chunk, then TASK_STATE_INPUT_REQUIRED with the
//                     question "Which city?"; the follow-up message on the same
//                     task streams "Booked <answer>." and completes
//   otherwise         status working, assistant-output text in 4 chunks
//                     (append / lastChunk), a named artifact report.md
//                     (text/markdown), then TASK_STATE_COMPLETED
//
// Prints one JSON line {"url": "http://127.0.0.1:PORT"} on stdout when ready;
// exits when stdin closes.
import http from 'node:http';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
} from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { answerJSONRPC, readJSONRPCBody } from './a2a-jsonrpc.mjs';

const TaskState = {
  SUBMITTED: 1, WORKING: 2, COMPLETED: 3, FAILED: 4, CANCELED: 5, INPUT_REQUIRED: 6,
};
const ROLE_AGENT = 2;

const textPart = (value, mediaType = 'text/plain') => ({
  content: { $case: 'text', value }, mediaType, filename: '', metadata: undefined,
});
const textOf = (msg) => (msg?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const agentMessage = (taskId, contextId, text) => ({
  messageId: crypto.randomUUID(), taskId, contextId, role: ROLE_AGENT,
  parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (taskId, contextId, state, text) => AgentEvent.statusUpdate({
  taskId, contextId, metadata: undefined,
  status: { state, message: text ? agentMessage(taskId, contextId, text) : undefined, timestamp: new Date().toISOString() },
});
const artifact = (taskId, contextId, artifactId, name, text, { append = false, lastChunk = false, mediaType = 'text/plain' } = {}) =>
  AgentEvent.artifactUpdate({
    taskId, contextId, append, lastChunk, metadata: undefined,
    artifact: { artifactId, name, description: '', parts: [textPart(text, mediaType)], metadata: undefined, extensions: [] },
  });

const tick = () => new Promise((r) => setTimeout(r, 5));

class InteropExecutor {
  cancelled = new Map(); // taskId -> resolve()

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage);
    const resuming = ctx.task?.status?.state === TaskState.INPUT_REQUIRED;
    // The SDK wants a Task (or Message) first in every execution, a
    // follow-up on an existing task included. On a follow-up the snapshot
    // says working: a snapshot still in input-required would end a client's
    // stream before the answer is processed.
    bus.publish(AgentEvent.task(ctx.task
      ? { ...ctx.task, status: { state: TaskState.WORKING, message: undefined, timestamp: new Date().toISOString() } }
      : {
        id: taskId, contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined,
        status: { state: TaskState.SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      }));
    bus.publish(status(taskId, contextId, TaskState.WORKING));
    const out = `out-${crypto.randomUUID()}`;
    if (resuming) {
      bus.publish(artifact(taskId, contextId, out, 'assistant-output', `Booked ${text}.`, { lastChunk: true }));
      bus.publish(status(taskId, contextId, TaskState.COMPLETED));
    } else if (text.includes('slow')) {
      bus.publish(artifact(taskId, contextId, out, 'assistant-output', 'Working slowly...', { lastChunk: true }));
      const stop = new Promise((resolve) => this.cancelled.set(taskId, resolve));
      const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 60_000).unref());
      const why = await Promise.race([stop, timeout]);
      this.cancelled.delete(taskId);
      bus.publish(status(taskId, contextId, why === 'timeout' ? TaskState.FAILED : TaskState.CANCELED,
        why === 'timeout' ? 'never cancelled' : 'cancelled on request'));
    } else if (text.includes('ask')) {
      bus.publish(artifact(taskId, contextId, out, 'assistant-output', 'Let me check.', { lastChunk: true }));
      bus.publish(status(taskId, contextId, TaskState.INPUT_REQUIRED, 'Which city?'));
    } else {
      const chunks = ['Hello ', 'from ', 'the JS ', 'agent.'];
      for (const [i, c] of chunks.entries()) {
        bus.publish(artifact(taskId, contextId, out, 'assistant-output', c, { append: i > 0, lastChunk: i === chunks.length - 1 }));
        await tick();
      }
      bus.publish(artifact(taskId, contextId, 'report', 'report.md', '# JS report', { lastChunk: true, mediaType: 'text/markdown' }));
      bus.publish(status(taskId, contextId, TaskState.COMPLETED));
    }
    bus.finished();
  }

  async cancelTask(taskId) {
    this.cancelled.get(taskId)?.();
  }
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'js-interop-agent',
    description: 'An @a2a-js/sdk 1.3 agent for interop tests',
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
    defaultOutputModes: ['text/plain', 'text/markdown'],
    skills: [{ id: 'interop', name: 'Interop', description: 'Streams text and artifacts', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const legacyCard = {
    protocolVersion: '0.3.0',
    name: 'js-interop-agent-v03',
    description: 'The same @a2a-js/sdk agent on its v0.3 wire',
    url: `${base}/v03/jsonrpc`,
    preferredTransport: 'JSONRPC',
    version: '1.3.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'interop', name: 'Interop', description: 'Streams text and artifacts', tags: ['test'] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new InteropExecutor());
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);

  server.on('request', async (req, res) => {
    const path = new URL(req.url, base).pathname;
    if (req.method === 'GET' && (path === AGENT_CARD_PATH || path === `/${AGENT_CARD_PATH}` || path === '/.well-known/agent-card.json')) {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(await handler.getAgentCard()));
      return;
    }
    if (req.method === 'GET' && path === '/v03/.well-known/agent-card.json') {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(legacyCard));
      return;
    }
    if (req.method !== 'POST' || (path !== '/jsonrpc' && path !== '/v03/jsonrpc')) {
      res.statusCode = 404;
      res.end();
      return;
    }
    const body = await readJSONRPCBody(req, res);
    if (body !== undefined) await answerJSONRPC(req, res, body, { card: await handler.getAgentCard(), v1, legacy });
  });

  process.stdout.write(JSON.stringify({ url: base }) + '\n');
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
