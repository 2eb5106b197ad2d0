// An @a2a-js/sdk 0.3 client (the "@a2a-js/sdk-03" alias of @a2a-js/sdk
// 0.3.14) driving OUR A2A bridge over its A2A 0.3 HTTP+JSON transport
// (RestTransport, which calls <endpoint>/v1/... without an A2A-Version
// header). It checks that every error arrives in the 0.3 error shape, which
// this client reads by its JSON-RPC code into typed errors.
//
//   node tests/node/a2a-js03-rest.mjs <base-url>
//
// The bridge runs the scripted adapter with a scenario that completes at
// once. Prints one JSON object on stdout: {sent: <state>, errors: {<call>:
// <error class or "none">}}; exits non-zero when a call that must succeed
// fails.
import { RestTransport } from '@a2a-js/sdk-03/client';

const [base] = process.argv.slice(2);
if (!base) {
  console.error('usage: a2a-js03-rest.mjs <base-url>');
  process.exit(2);
}
const rest = new RestTransport({ endpoint: `${base}/a2a/rest` });
const message = (text, extra = {}) => ({ kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra });

const sent = await rest.sendMessage({ message: message('hi') });
if (sent.kind !== 'task' || sent.status?.state !== 'completed') {
  console.error('sendMessage did not complete a task:', JSON.stringify(sent));
  process.exit(1);
}
const finished = sent.id;

const errors = {};
async function expectError(name, call) {
  try {
    const res = call();
    if (res && typeof res[Symbol.asyncIterator] === 'function') {
      for await (const _ of res) { /* drain */ }
    } else {
      await res;
    }
    errors[name] = 'none';
  } catch (e) {
    errors[name] = e?.constructor?.name ?? 'unknown';
    errors[`${name}.message`] = String(e?.message ?? e);
  }
}
await expectError('getTask unknown', () => rest.getTask({ id: 'no-such-task' }));
await expectError('cancelTask finished', () => rest.cancelTask({ id: finished }));
await expectError('sendMessage to finished', () => rest.sendMessage({ message: message('more', { taskId: finished, contextId: sent.contextId }) }));
await expectError('resubscribe finished', () => rest.resubscribeTask({ id: finished }));
await expectError('setPushConfig', () => rest.setTaskPushNotificationConfig({
  taskId: finished, pushNotificationConfig: { id: 'c1', url: 'https://example.test/hook' },
}));

process.stdout.write(JSON.stringify({ sent: sent.status.state, errors }) + '\n');
