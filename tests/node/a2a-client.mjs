// An @a2a-js/sdk 1.3 client (an implementation nobody here wrote) driving OUR
// A2A bridge (pkg/bridges/a2a), started by the Go interop test on 127.0.0.1
// with the scripted adapter.
//
//   node tests/node/a2a-client.mjs <fast-base-url> <slow-base-url>
//
// fast: a bridge whose scenario streams text, publishes an artifact and
// completes. slow: a bridge whose scenario says something, then sleeps (it is
// cancelled). Prints one JSON summary on stdout that the Go test asserts on;
// exits non-zero (with the error on stderr) when a call fails.
import { ClientFactory } from '@a2a-js/sdk/client';

const [fastBase, slowBase] = process.argv.slice(2);
if (!fastBase || !slowBase) {
  console.error('usage: a2a-client.mjs <fast-base-url> <slow-base-url>');
  process.exit(2);
}

const STATE = {
  0: 'TASK_STATE_UNSPECIFIED', 1: 'TASK_STATE_SUBMITTED', 2: 'TASK_STATE_WORKING', 3: 'TASK_STATE_COMPLETED',
  4: 'TASK_STATE_FAILED', 5: 'TASK_STATE_CANCELED', 6: 'TASK_STATE_INPUT_REQUIRED', 7: 'TASK_STATE_REJECTED',
  8: 'TASK_STATE_AUTH_REQUIRED',
};
const stateName = (s) => STATE[s] ?? String(s);
const terminal = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

const userMessage = (text, extra = {}) => ({
  messageId: crypto.randomUUID(), role: 1 /* ROLE_USER */, contextId: '', taskId: '',
  parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
  metadata: undefined, extensions: [], referenceTaskIds: [], ...extra,
});
const request = (message) => ({ tenant: '', message, configuration: undefined, metadata: undefined });

const partSummary = (p) => {
  const c = p.content ?? {};
  return { kind: c.$case, text: c.$case === 'text' ? c.value : undefined, data: c.$case === 'data' ? c.value : undefined, mediaType: p.mediaType };
};

// summarize turns one StreamResponse into a plain record.
function summarize(ev) {
  const { $case: kind, value } = ev.payload ?? {};
  switch (kind) {
    case 'task':
      return { kind, taskId: value.id, contextId: value.contextId, state: stateName(value.status?.state) };
    case 'statusUpdate':
      return { kind, taskId: value.taskId, contextId: value.contextId, state: stateName(value.status?.state) };
    case 'artifactUpdate':
      return {
        kind, taskId: value.taskId, artifactId: value.artifact?.artifactId, name: value.artifact?.name,
        append: !!value.append, lastChunk: !!value.lastChunk, parts: (value.artifact?.parts ?? []).map(partSummary),
      };
    case 'message':
      return { kind, text: (value.parts ?? []).map((p) => p.content?.value ?? '').join('') };
    default:
      return { kind: String(kind) };
  }
}

const isTerminal = (rec) => (rec.kind === 'task' || rec.kind === 'statusUpdate') && terminal.has(rec.state);

const factory = new ClientFactory();
const out = {};

// 1. Card and streaming send against the fast bridge.
const fast = await factory.createFromUrl(fastBase);
const card = await fast.getAgentCard();
out.card = {
  name: card.name, streaming: !!card.capabilities?.streaming,
  interfaces: (card.supportedInterfaces ?? []).map((i) => ({ binding: i.protocolBinding, version: i.protocolVersion })),
};
const events = [];
for await (const ev of fast.sendMessageStream(request(userMessage('write the report')))) {
  const rec = summarize(ev);
  events.push(rec);
  if (isTerminal(rec)) break;
}
out.stream = events;
const taskId = events.find((e) => e.taskId)?.taskId;

// 2. Get the finished task.
const task = await fast.getTask({ tenant: '', id: taskId, historyLength: undefined });
out.get = {
  taskId: task.id, contextId: task.contextId, state: stateName(task.status?.state),
  artifacts: (task.artifacts ?? []).map((a) => ({ id: a.artifactId, name: a.name, parts: (a.parts ?? []).map(partSummary) })),
};

// 3. Cancel a running task on the slow bridge.
const slow = await factory.createFromUrl(slowBase);
const slowEvents = [];
const stream = slow.sendMessageStream(request(userMessage('take your time')));
let slowTaskId;
for await (const ev of stream) {
  const rec = summarize(ev);
  slowEvents.push(rec);
  slowTaskId ??= rec.taskId;
  if (rec.kind === 'artifactUpdate' && rec.name === 'assistant-output' && rec.lastChunk) break;
}
const cancelled = await slow.cancelTask({ tenant: '', id: slowTaskId, metadata: { reason: 'interop test' } });
const after = await slow.getTask({ tenant: '', id: slowTaskId, historyLength: undefined });
out.cancel = {
  taskId: slowTaskId, streamedBeforeCancel: slowEvents,
  cancelState: stateName(cancelled.status?.state), getState: stateName(after.status?.state),
  artifacts: (after.artifacts ?? []).map((a) => ({ name: a.name, parts: (a.parts ?? []).map(partSummary) })),
};

process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);
