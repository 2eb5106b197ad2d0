// The @a2a-js/sdk 1.3 client (written elsewhere) driving `agentadaptor a2a
// serve` through every method, on every wire the server's card lists:
// A2A 1.0 over JSON-RPC and HTTP+JSON, and A2A 0.3 over both (the SDK's
// legacy transports). Started by cmd/agentadaptor's conformance test with
// three servers running the scripted adapter, all behind a bearer token:
//
//   node tests/node/a2a-conformance.mjs '{"fast":URL,"ask":URL,"slow":URL,"token":ENV_NAME}'
//
// fast: streams text, publishes an artifact, completes. ask: says something,
// asks a question (input-required), and completes once answered. slow: says
// something, then sleeps (it is cancelled). The token is read from the
// environment variable named by "token", never from argv.
//
// Prints one JSON summary on stdout: per wire, what each call returned (or
// the error it raised). The Go test asserts on it; this script only exits
// non-zero when it cannot run at all.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const token = process.env[cfg.token ?? ''];
if (!cfg.fast || !cfg.ask || !cfg.slow || !token) {
  console.error('usage: a2a-conformance.mjs \'{"fast":URL,"ask":URL,"slow":URL,"token":ENV_NAME}\' (with the token in that variable)');
  process.exit(2);
}

const STATE = {
  0: 'TASK_STATE_UNSPECIFIED', 1: 'TASK_STATE_SUBMITTED', 2: 'TASK_STATE_WORKING', 3: 'TASK_STATE_COMPLETED',
  4: 'TASK_STATE_FAILED', 5: 'TASK_STATE_CANCELED', 6: 'TASK_STATE_INPUT_REQUIRED', 7: 'TASK_STATE_REJECTED',
  8: 'TASK_STATE_AUTH_REQUIRED',
};
const stateName = (s) => STATE[s] ?? String(s);
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

const authFetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? {});
  headers.set('Authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

const userMessage = (text, extra = {}) => ({
  messageId: crypto.randomUUID(), role: 1 /* ROLE_USER */, contextId: '', taskId: '',
  parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
  metadata: undefined, extensions: [], referenceTaskIds: [], ...extra,
});
const request = (message) => ({ tenant: '', message, configuration: undefined, metadata: undefined });

// summarize turns one StreamResponse into a plain record.
function summarize(ev) {
  const { $case: kind, value } = ev.payload ?? {};
  switch (kind) {
    case 'task':
      return { kind, taskId: value.id, contextId: value.contextId, state: stateName(value.status?.state) };
    case 'statusUpdate':
      return {
        kind, taskId: value.taskId, contextId: value.contextId, state: stateName(value.status?.state),
        text: (value.status?.message?.parts ?? []).map((p) => p.content?.value ?? '').join(''),
      };
    case 'artifactUpdate':
      return {
        kind, taskId: value.taskId, name: value.artifact?.name, lastChunk: !!value.lastChunk,
        text: (value.artifact?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(''),
      };
    case 'message':
      return { kind, text: (value.parts ?? []).map((p) => p.content?.value ?? '').join('') };
    default:
      return { kind: String(kind) };
  }
}
const isTerminal = (rec) => (rec.kind === 'task' || rec.kind === 'statusUpdate') && TERMINAL.has(rec.state);
const textOf = (recs) => recs.filter((r) => r.kind === 'artifactUpdate' && r.name === 'assistant-output').map((r) => r.text).join('');
const failure = (e) => ({ error: String(e?.message ?? e), code: e?.code });

// attempt runs one call and records its result or its error.
async function attempt(fn) {
  try {
    return await fn();
  } catch (e) {
    return failure(e);
  }
}

async function drain(gen, stopAt = isTerminal) {
  const recs = [];
  for await (const ev of gen) {
    const rec = summarize(ev);
    recs.push(rec);
    if (stopAt(rec)) break;
  }
  return recs;
}

const resolver = new DefaultAgentCardResolver({ fetchImpl: fetch });
const transports = [
  new JsonRpcTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: true } }),
  new RestTransportFactory({ fetchImpl: authFetch, legacyCompat: { enabled: true } }),
];

// clientFor builds a client of base's card for one binding and version: the
// SDK picks the interface (1.0 first); for 0.3 the card is narrowed to its
// 0.3 interfaces, as a 0.3-only client would see it.
async function clientFor(base, binding, version, fetchImpl = authFetch) {
  const card = await resolver.resolve(base);
  const narrowed = { ...card, supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === version) };
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
      new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
    ],
    preferredTransports: [binding],
  }));
  return factory.createFromAgentCard(narrowed);
}

async function exercise(binding, version) {
  const out = { binding, version };
  const fast = await clientFor(cfg.fast, binding, version);
  const ask = await clientFor(cfg.ask, binding, version);
  const slow = await clientFor(cfg.slow, binding, version);
  out.selected = { protocol: fast.transport.protocolName, version: fast.protocolVersion };

  // send (blocking)
  out.send = await attempt(async () => {
    const res = await fast.sendMessage(request(userMessage('write the report')));
    const task = res.payload?.$case === 'task' ? res.payload.value : res;
    return { state: stateName(task.status?.state), artifacts: (task.artifacts ?? []).map((a) => a.name) };
  });

  // stream, then get and list the streamed task
  out.stream = await attempt(async () => {
    const recs = await drain(fast.sendMessageStream(request(userMessage('write it again'))));
    return { first: recs[0]?.kind, states: recs.filter((r) => r.state).map((r) => r.state), text: textOf(recs), taskId: recs[0]?.taskId, contextId: recs[0]?.contextId };
  });
  const taskId = out.stream.taskId;
  out.get = await attempt(async () => {
    const task = await fast.getTask({ tenant: '', id: taskId, historyLength: undefined });
    return { state: stateName(task.status?.state), artifacts: (task.artifacts ?? []).map((a) => a.name) };
  });
  out.list = await attempt(async () => {
    const res = await fast.listTasks({ tenant: '', contextId: out.stream.contextId, status: 0, pageSize: undefined, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false });
    return { ids: (res.tasks ?? []).map((t) => t.id), states: (res.tasks ?? []).map((t) => stateName(t.status?.state)) };
  });

  // subscribe to a finished task: refused
  out.subscribeFinished = await attempt(async () => ({ events: await drain(fast.resubscribeTask({ tenant: '', id: taskId })) }));

  // multi-turn: ask, then answer on the same task (streaming)
  out.multiTurn = await attempt(async () => {
    const first = await drain(ask.sendMessageStream(request(userMessage('book a trip'))), (r) => isTerminal(r) || r.state === 'TASK_STATE_INPUT_REQUIRED');
    const last = first[first.length - 1];
    const answer = userMessage('Paris', { taskId: last.taskId, contextId: last.contextId });
    const second = await drain(ask.sendMessageStream(request(answer)));
    return {
      firstStates: first.filter((r) => r.state).map((r) => r.state), question: last.text,
      secondFirst: second[0]?.kind, secondStates: second.filter((r) => r.state).map((r) => r.state),
      sameTask: second[0]?.taskId === last.taskId, text: textOf(second),
    };
  });

  // subscribe to an idle (input-required) task, then answer it
  out.subscribeIdle = await attempt(async () => {
    const res = await ask.sendMessage(request(userMessage('book another trip')));
    const task = res.payload?.$case === 'task' ? res.payload.value : res;
    const recs = [];
    let answered;
    for await (const ev of ask.resubscribeTask({ tenant: '', id: task.id })) {
      const rec = summarize(ev);
      recs.push(rec);
      if (recs.length === 1) answered = ask.sendMessage(request(userMessage('Rome', { taskId: task.id, contextId: task.contextId })));
      if (isTerminal(rec)) break;
    }
    await answered;
    return { first: recs[0], states: recs.filter((r) => r.state).map((r) => r.state), text: textOf(recs) };
  });

  // cancel a running task
  out.cancel = await attempt(async () => {
    let id;
    for await (const ev of slow.sendMessageStream(request(userMessage('take your time')))) {
      const rec = summarize(ev);
      id ??= rec.taskId;
      if (rec.kind === 'artifactUpdate' && rec.lastChunk) break;
    }
    const cancelled = await slow.cancelTask({ tenant: '', id, metadata: undefined });
    const after = await slow.getTask({ tenant: '', id, historyLength: undefined });
    return { state: stateName(cancelled.status?.state), getState: stateName(after.status?.state) };
  });

  // without the token
  out.unauthenticated = await attempt(async () => {
    const anon = await clientFor(cfg.fast, binding, version, fetch);
    const res = await anon.sendMessage(request(userMessage('who am I')));
    return { unexpected: res };
  });
  return out;
}

// rawVersion posts a 1.0 SendMessage with A2A-Version: version.
async function rawVersion(version) {
  const card = await resolver.resolve(cfg.fast);
  const url = (binding) => card.supportedInterfaces.find((i) => i.protocolBinding === binding && i.protocolVersion === '1.0').url;
  const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'version test' }] };
  const headers = { 'Content-Type': 'application/json', 'A2A-Version': version, Authorization: `Bearer ${token}` };
  const rpc = await fetch(url('JSONRPC'), { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }) });
  const rest = await fetch(`${url('HTTP+JSON')}/message:send`, { method: 'POST', headers, body: JSON.stringify({ message }) });
  return { version, jsonrpc: { status: rpc.status, body: await rpc.json() }, rest: { status: rest.status, body: await rest.json() } };
}

const summary = { wires: [] };
for (const [binding, version] of [['JSONRPC', '1.0'], ['HTTP+JSON', '1.0'], ['JSONRPC', '0.3'], ['HTTP+JSON', '0.3']]) {
  summary.wires.push(await exercise(binding, version));
}
summary.card = await attempt(async () => {
  const card = await resolver.resolve(cfg.fast);
  return { name: card.name, interfaces: card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`), security: Object.keys(card.securitySchemes ?? {}) };
});
summary.versions = [await rawVersion('99.0'), await rawVersion('1.0')];
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(0);
