// A remote AG-UI agent built with the official packages (@ag-ui/encoder's
// EventEncoder, @ag-ui/core's EventType and event schemas), nobody here
// wrote their wire: the host delegates to it as to any AG-UI agent.
//
//   node tests/node/agui-encoder-agent.mjs
//
// POST /agent with a RunAgentInput answers an SSE stream (the encoder's
// content type): RUN_STARTED, a STEP, the answer as one text message in
// chunks ("Encoder agent: <last user message>."), RUN_FINISHED with result
// {answer}. A last user message containing "[hang]" streams its first chunk
// and then waits until the client goes away. Every event is checked with
// @ag-ui/core's EventSchemas before it is written.
// Prints {"url": "http://127.0.0.1:PORT/agent"} on stdout when ready; then
// one JSON line per run that ended: {"runId", "aborted": bool}. Exits when
// stdin closes.
import http from 'node:http';
import { EventEncoder } from '@ag-ui/encoder';
import { EventType } from '@ag-ui/core';
import { EventSchemas, RunAgentInputSchema } from '@ag-ui/core/schemas';

const server = http.createServer(async (req, res) => {
  if (req.method !== 'POST' || new URL(req.url, 'http://x').pathname !== '/agent') {
    res.statusCode = 404;
    res.end();
    return;
  }
  let body = '';
  for await (const c of req) body += c;
  let input;
  try {
    input = RunAgentInputSchema.parse(JSON.parse(body));
  } catch (e) {
    res.statusCode = 400;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ error: String(e?.message ?? e).slice(0, 200) }));
    return;
  }
  const encoder = new EventEncoder({ accept: req.headers.accept });
  let aborted = false;
  let ended = false;
  res.on('close', () => {
    if (!ended) {
      aborted = true;
      process.stdout.write(JSON.stringify({ runId: input.runId, aborted: true }) + '\n');
    }
  });
  res.writeHead(200, { 'Content-Type': encoder.getContentType(), 'Cache-Control': 'no-cache' });
  const send = (event) => {
    EventSchemas.parse(event); // the official schema: a wire nobody here wrote
    res.write(encoder.encode(event));
  };
  const { threadId, runId } = input;
  const last = [...input.messages].reverse().find((m) => m.role === 'user');
  const question = typeof last?.content === 'string' ? last.content : '';
  const answer = `Encoder agent: ${question.replace(/\[hang\]\s*/, '')}.`;
  const messageId = `msg-${runId}`;
  send({ type: EventType.RUN_STARTED, threadId, runId });
  send({ type: EventType.STEP_STARTED, stepName: 'answer' });
  send({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' });
  const words = answer.split(/(?<= )/);
  send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: words[0] });
  if (question.includes('[hang]')) {
    return; // waits until the client goes away (res 'close')
  }
  for (const w of words.slice(1)) send({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: w });
  send({ type: EventType.TEXT_MESSAGE_END, messageId });
  send({ type: EventType.STEP_FINISHED, stepName: 'answer' });
  send({ type: EventType.RUN_FINISHED, threadId, runId, result: { answer } });
  ended = true;
  res.end();
  process.stdout.write(JSON.stringify({ runId, aborted }) + '\n');
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/agent` }) + '\n');
});
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
