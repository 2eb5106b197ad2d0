// The JSON-RPC route of the @a2a-js/sdk servers that tests and benchmarks
// run (tests/node/a2a-server.mjs, tests/node/a2a-js-remote.mjs,
// bench/e2e/remote.mjs): the SDK ships transport handlers but no Node HTTP
// route, so this is the one place that turns a POST into a JSON-RPC answer
// or an SSE stream, as the SDK's express integration does.
import { A2A_VERSION_HEADER, SSE_HEADERS, formatSSEEvent, formatSSEErrorEvent } from '@a2a-js/sdk';
import {
  JsonRpcTransportHandler,
  UnauthenticatedUser,
  defaultServerCallContextBuilder,
  validateVersion,
} from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';

// readJSONRPCBody reads and parses the request body; on malformed JSON it
// answers the JSON-RPC parse error itself and returns undefined.
export async function readJSONRPCBody(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } }));
    return undefined;
  }
}

// answerJSONRPC answers one parsed JSON-RPC request: a JSON body, or an SSE
// stream for the streaming methods (an error before the first event is a
// JSON error answer, one after it an SSE error event). card is the agent
// card the A2A-Version header is checked against; v1 is the 1.0
// JsonRpcTransportHandler; legacy, if given, the 0.3 one, which then serves
// requests without an A2A-Version header (0.3 clients send none).
export async function answerJSONRPC(req, res, body, { card, v1, legacy }) {
  const header = req.headers[A2A_VERSION_HEADER.toLowerCase()];
  const useLegacy = legacy !== undefined && (header || '0.3') === '0.3';
  const mapToError = useLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
  const fail = (err) => ({ jsonrpc: '2.0', id: body?.id ?? null, error: mapToError(err) });
  const json = (obj) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(obj));
  };
  try {
    const context = defaultServerCallContextBuilder({
      extensions: undefined, user: new UnauthenticatedUser(), headers: req.headers, requestedVersion: header || undefined,
    });
    validateVersion(context.requestedVersion, card, 'JSONRPC');
    const result = await (useLegacy ? legacy : v1).handle(body, context);
    if (typeof result?.[Symbol.asyncIterator] !== 'function') {
      json(result);
      return;
    }
    const it = result[Symbol.asyncIterator]();
    let first;
    try {
      first = await it.next();
    } catch (err) {
      json(fail(err));
      return;
    }
    for (const [k, v] of Object.entries(SSE_HEADERS)) res.setHeader(k, v);
    res.flushHeaders();
    try {
      if (!first.done) res.write(formatSSEEvent(first.value));
      for (let n = await it.next(); !n.done; n = await it.next()) res.write(formatSSEEvent(n.value));
    } catch (err) {
      res.write(formatSSEErrorEvent(fail(err)));
    } finally {
      res.end();
    }
  } catch (err) {
    if (!res.headersSent) json(fail(err));
    else res.end();
  }
}
