// A remote A2A agent built with @a2a-js/sdk 1.3 (an implementation nobody
// here wrote) for the host's CLIENT side: pkg/clients/a2a and
// pkg/delegation/a2aremote delegate to it. It behaves the way generic A2A
// agents do, which the host's own A2A bridge does not:
//
//   - the answer travels only in artifacts (a text artifact "answer" streamed
//     in chunks, plus a JSON data artifact "facts"), and the task completes
//     with the bare status message "done";
//   - the follow-up stream that answers an input-required task begins with
//     the Task as the task store holds it, still TASK_STATE_INPUT_REQUIRED
//     (a stream begins with the Task), before the answer is processed, and
//     the task completes with its last word in the status message;
//   - it can be driven without streaming (a second card), send its terminal
//     status before its artifacts, or end with an agent-adaptor-result
//     artifact as the host's own bridge does.
//
// Behaviour, chosen by the user's message text:
//   "[poll]"        (sent through the non-streaming card) working, then one
//                   step per GetTask the host makes: an "assistant-output"
//                   artifact "Polled " growing to "Polled answer.", a
//                   markdown artifact "report.md", then TASK_STATE_COMPLETED
//                   "All polled."
//   "[early]"       TASK_STATE_COMPLETED right after the Task; the answer, a
//                   text artifact "answer" "Early answer.", is in the task
//                   (GetTask) but never on the stream
//   "[result]"      an "assistant-output" artifact "Local text.", an artifact
//                   "notes.md", then an agent-adaptor-result artifact
//                   {summary, status, usage, session_id, artifacts}, then
//                   TASK_STATE_COMPLETED
//   contains "ask"  working "Looking for flights.", then TASK_STATE_INPUT_REQUIRED
//                   "Which city?"; the follow-up streams the Task snapshot
//                   unchanged, working, a text artifact "booking" "Booked <answer>."
//                   in two chunks, then TASK_STATE_COMPLETED "you answered: <answer>"
//   contains "fail" working "Searching flights.", then TASK_STATE_FAILED
//                   "No flights found: the airline is offline."
//   contains "cancel" working "Holding the booking.", then the agent itself
//                   ends the task TASK_STATE_CANCELED "The airline cancelled the
//                   booking."
//   otherwise       working "Thinking...", a text artifact "answer" in three
//                   chunks (append, lastChunk), a data artifact "facts", then
//                   TASK_STATE_COMPLETED "done"
//
// Usage: node tests/node/a2a-js-remote.mjs [--record DIR]
// Serves the 1.0 JSON-RPC wire on 127.0.0.1 (ephemeral port):
//   GET  /.well-known/agent-card.json        the card (the SDK's own AgentCard object)
//   GET  /poll/.well-known/agent-card.json   the same agent, capabilities.streaming false
//   POST /jsonrpc                            JSON-RPC (A2A-Version 1.0)
// Prints one JSON line {"url": "http://127.0.0.1:PORT"} when ready; exits when
// stdin closes.
//
// --record DIR writes the wire traffic, byte for byte, for replay by Go tests
// (internal/testkit/delegationtest/jsa2a.go): DIR/card.json and DIR/card-poll.json
// (the base URL replaced by {{BASE}}) and, per scenario ("generic", "ask",
// "failed", "canceled", "poll", "early", "result"; a request about a task
// belonging to its task's scenario), DIR/<scenario>/<NN>-<method>.request.json and
// DIR/<scenario>/<NN>-<method>.response.{sse,json}.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
} from '@a2a-js/sdk/server';
import { answerJSONRPC, readJSONRPCBody } from './a2a-jsonrpc.mjs';

const TaskState = { SUBMITTED: 1, WORKING: 2, COMPLETED: 3, FAILED: 4, CANCELED: 5, INPUT_REQUIRED: 6 };
const ROLE_AGENT = 2;

const recordDir = (() => {
  const i = process.argv.indexOf('--record');
  return i >= 0 ? path.resolve(process.argv[i + 1]) : '';
})();

const part = (content, mediaType) => ({ content, mediaType, filename: '', metadata: undefined });
const textPart = (value, mediaType = 'text/plain') => part({ $case: 'text', value }, mediaType);
const dataPart = (value) => part({ $case: 'data', value }, 'application/json');
const textOf = (msg) => (msg?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
// Deterministic ids keep the recordings stable and readable.
let seq = 0;
const nextId = (prefix) => `${prefix}-${String(++seq).padStart(4, '0')}`;
const stamp = () => new Date(Date.UTC(2026, 0, 2, 3, 4, seq)).toISOString();
const agentMessage = (taskId, contextId, text) => ({
  messageId: nextId('msg'), taskId, contextId, role: ROLE_AGENT,
  parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (taskId, contextId, state, text) => AgentEvent.statusUpdate({
  taskId, contextId, metadata: undefined,
  status: { state, message: text ? agentMessage(taskId, contextId, text) : undefined, timestamp: stamp() },
});
const artifact = (taskId, contextId, artifactId, name, parts, { append = false, lastChunk = false } = {}) =>
  AgentEvent.artifactUpdate({
    taskId, contextId, append, lastChunk, metadata: undefined,
    artifact: { artifactId, name, description: '', parts, metadata: undefined, extensions: [] },
  });

const scenarioOfTask = new Map(); // taskId -> scenario name
const scenarioOf = (text) => {
  for (const name of ['poll', 'early', 'result']) {
    if (text.includes(`[${name}]`)) return name;
  }
  if (text.includes('ask')) return 'ask';
  if (text.includes('fail')) return 'failed';
  if (text.includes('cancel')) return 'canceled';
  return 'generic';
};

// Poll steps: the executor of a "[poll]" task publishes its next step only
// after the host's n-th GetTask of that task has been answered, so each
// poll sees one more step.
const polls = new Map(); // taskId -> {count, waiters: [{n, resolve}]}
const pollState = (taskId) => {
  if (!polls.has(taskId)) polls.set(taskId, { count: 0, waiters: [] });
  return polls.get(taskId);
};
const afterPoll = (taskId, n) => new Promise((resolve) => {
  const st = pollState(taskId);
  if (st.count >= n) resolve();
  else st.waiters.push({ n, resolve });
});
const polled = (taskId) => {
  const st = pollState(taskId);
  st.count++;
  st.waiters = st.waiters.filter((w) => (st.count >= w.n ? (w.resolve(), false) : true));
};

class RemoteExecutor {
  constructor(store) { this.store = store; }

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = textOf(ctx.userMessage);
    if (ctx.task?.status?.state === TaskState.INPUT_REQUIRED) {
      // A follow-up: the stream begins with the Task as stored, still
      // input-required, before the answer is processed.
      bus.publish(AgentEvent.task(ctx.task));
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Booking.'));
      const chunks = ['Booked ', `${text}.`];
      for (const [i, c] of chunks.entries()) {
        bus.publish(artifact(taskId, contextId, 'booking', 'booking', [textPart(c)], { append: i > 0, lastChunk: i === chunks.length - 1 }));
      }
      bus.publish(status(taskId, contextId, TaskState.COMPLETED, `you answered: ${text}`));
      bus.finished();
      return;
    }
    const scenario = scenarioOf(text);
    scenarioOfTask.set(taskId, scenario);
    bus.publish(AgentEvent.task({
      id: taskId, contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined,
      status: { state: TaskState.SUBMITTED, message: undefined, timestamp: stamp() },
    }));
    if (scenario === 'poll') {
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Polling starts.'));
      await afterPoll(taskId, 1);
      bus.publish(artifact(taskId, contextId, 'out-1', 'assistant-output', [textPart('Polled ')]));
      await afterPoll(taskId, 2);
      bus.publish(artifact(taskId, contextId, 'out-1', 'assistant-output', [textPart('answer.')], { append: true, lastChunk: true }));
      bus.publish(artifact(taskId, contextId, 'report', 'report.md', [textPart('# Report\nThree polls.', 'text/markdown')], { lastChunk: true }));
      await afterPoll(taskId, 3);
      bus.publish(status(taskId, contextId, TaskState.COMPLETED, 'All polled.'));
    } else if (scenario === 'early') {
      // The answer goes into the task out of band (into the SDK's task
      // store, as an agent that produces output outside its event stream
      // does); the stream carries the Task and then, at once, the terminal
      // frame. (Artifacts published after a terminal status are dropped by
      // the SDK, so a stream cannot carry them either.)
      const store = this.store;
      while (!(await store.load(taskId, ctx.context))) await new Promise((r) => setImmediate(r));
      const task = await store.load(taskId, ctx.context);
      task.artifacts = [{ artifactId: 'answer', name: 'answer', description: '', parts: [textPart('Early answer.')], metadata: undefined, extensions: [] }];
      await store.save(task, ctx.context);
      bus.publish(status(taskId, contextId, TaskState.COMPLETED, undefined));
    } else if (scenario === 'result') {
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Working.'));
      bus.publish(artifact(taskId, contextId, 'out-1', 'assistant-output', [textPart('Local text.')], { lastChunk: true }));
      bus.publish(artifact(taskId, contextId, 'notes', 'notes.md', [textPart('# Notes', 'text/markdown')], { lastChunk: true }));
      bus.publish(artifact(taskId, contextId, 'agent-adaptor-result', 'agent-adaptor-result', [dataPart({
        summary: 'Structured summary.', status: 'completed', usage: { input_tokens: 12, output_tokens: 34 },
        session_id: 'sess-js-1', artifacts: [{ id: 'notes', name: 'notes.md', mime_type: 'text/markdown' }],
      })], { lastChunk: true }));
      bus.publish(status(taskId, contextId, TaskState.COMPLETED, undefined));
    } else if (scenario === 'ask') {
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Looking for flights.'));
      bus.publish(status(taskId, contextId, TaskState.INPUT_REQUIRED, 'Which city?'));
    } else if (scenario === 'failed') {
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Searching flights.'));
      bus.publish(status(taskId, contextId, TaskState.FAILED, 'No flights found: the airline is offline.'));
    } else if (scenario === 'canceled') {
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Holding the booking.'));
      bus.publish(status(taskId, contextId, TaskState.CANCELED, 'The airline cancelled the booking.'));
    } else {
      bus.publish(status(taskId, contextId, TaskState.WORKING, 'Thinking...'));
      const chunks = ['The capital ', 'of France ', 'is Paris.'];
      for (const [i, c] of chunks.entries()) {
        bus.publish(artifact(taskId, contextId, 'answer', 'answer', [textPart(c)], { append: i > 0, lastChunk: i === chunks.length - 1 }));
      }
      bus.publish(artifact(taskId, contextId, 'facts', 'facts', [dataPart({ country: 'France', capital: 'Paris' })], { lastChunk: true }));
      bus.publish(status(taskId, contextId, TaskState.COMPLETED, 'done'));
    }
    bus.finished();
  }

  // Every task here finishes (or pauses) at once: there is nothing running to cancel.
  async cancelTask() {}
}

// The recorder: per scenario, numbered request/response pairs.
const counters = new Map();
function record(scenario, method, request, contentType, body) {
  if (!recordDir) return;
  const dir = path.join(recordDir, scenario);
  fs.mkdirSync(dir, { recursive: true });
  const n = (counters.get(scenario) ?? 0) + 1;
  counters.set(scenario, n);
  const stem = path.join(dir, `${String(n).padStart(2, '0')}-${method}`);
  fs.writeFileSync(`${stem}.request.json`, JSON.stringify(request, null, 2) + '\n');
  fs.writeFileSync(`${stem}.response.${contentType.startsWith('text/event-stream') ? 'sse' : 'json'}`, body);
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'js-remote-agent',
    description: 'An @a2a-js/sdk 1.3 agent whose answers are artifacts',
    version: '1.3.0',
    supportedInterfaces: [{ url: `${base}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: 'answers', name: 'Answers', description: 'Answers in artifacts', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const store = new InMemoryTaskStore();
  const handler = new DefaultRequestHandler(card, store, new RemoteExecutor(store));
  const v1 = new JsonRpcTransportHandler(handler);

  server.on('request', async (req, res) => {
    const url = new URL(req.url, base);
    if (req.method === 'GET' && (url.pathname === '/.well-known/agent-card.json' || url.pathname === '/poll/.well-known/agent-card.json')) {
      const poll = url.pathname.startsWith('/poll/');
      const served = await handler.getAgentCard();
      const body = JSON.stringify(poll ? { ...served, capabilities: { ...served.capabilities, streaming: false } } : served);
      if (recordDir) {
        fs.mkdirSync(recordDir, { recursive: true });
        fs.writeFileSync(path.join(recordDir, poll ? 'card-poll.json' : 'card.json'), body.split(base).join('{{BASE}}') + '\n');
      }
      res.setHeader('Content-Type', 'application/json');
      res.end(body);
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/jsonrpc') {
      res.statusCode = 404;
      res.end();
      return;
    }
    const body = await readJSONRPCBody(req, res);
    if (body === undefined) return;
    // Tee the response for the recorder.
    const sent = [];
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.write = (chunk, ...rest) => { sent.push(Buffer.from(chunk)); return write(chunk, ...rest); };
    res.end = (chunk, ...rest) => {
      if (chunk && typeof chunk !== 'function') sent.push(Buffer.from(chunk));
      const msg = body?.params?.message;
      const taskId = msg?.taskId || body?.params?.id || '';
      const scenario = scenarioOfTask.get(taskId) ?? scenarioOf((msg?.parts ?? []).map((p) => p.text ?? '').join(''));
      record(scenario, body?.method ?? 'unknown', body, String(res.getHeader('Content-Type') ?? ''), Buffer.concat(sent));
      const done = end(chunk, ...rest);
      if (body?.method === 'GetTask') polled(taskId);
      return done;
    };
    await answerJSONRPC(req, res, body, { card: await handler.getAgentCard(), v1 });
  });

  process.stdout.write(JSON.stringify({ url: base }) + '\n');
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
