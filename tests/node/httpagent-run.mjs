#!/usr/bin/env node
// httpagent-run.mjs URL [--message TEXT] [--thread ID] [--run-id ID]
//                       [--expect RUN_FINISHED|RUN_ERROR] [--expect-code CODE]
//                       [--abort-after-first-event] [--abort-after-event TYPE]
//
// Runs a live AG-UI endpoint with @ag-ui/client's HttpAgent (a real client
// nobody here wrote): the client verifies the stream itself, and this script
// additionally validates every event with @ag-ui/core 1.0.0 and 0.0.59,
// checks RUN_STARTED carries our runId and threadId, and checks that exactly
// one RUN_FINISHED or RUN_ERROR arrived (HttpAgent silently accepts a stream
// without one). Any client warning about the stream (stripped or dropped
// material) is a failure too.
//
// --abort-after-first-event calls abortRun() after the first event;
// --abort-after-event TYPE after the first event of that type. In abort mode
// no terminal event from the server is expected (HttpAgent itself then
// reports a local RUN_ERROR with code "abort").
//
// Prints a JSON summary on stdout: {ok, runId, threadId, types, terminal,
// code, text, aborted, failures}. Exits 0 when ok, 1 otherwise, 2 on usage
// errors.
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { schemaProblems, TERMINAL } from "./agui-lib.mjs";

const argv = process.argv.slice(2);
const opt = { message: "hello", thread: `thread-${randomUUID()}`, runId: `run-${randomUUID()}` };
let url;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const next = () => {
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    return argv[++i];
  };
  switch (a) {
    case "--message": opt.message = next(); break;
    case "--thread": opt.thread = next(); break;
    case "--run-id": opt.runId = next(); break;
    case "--expect": opt.expect = next(); break;
    case "--expect-code": opt.expectCode = next(); break;
    case "--abort-after-first-event": opt.abortAfter = "*"; break;
    case "--abort-after-event": opt.abortAfter = next(); break;
    case "-h": case "--help": usage(); break;
    default:
      if (a.startsWith("--") || url) usage(`unexpected argument ${a}`);
      url = a;
  }
}
if (!url) usage("URL is required");

function usage(err) {
  if (err) console.error(`httpagent-run: ${err}`);
  console.error("usage: httpagent-run.mjs URL [--message TEXT] [--thread ID] [--run-id ID] [--expect RUN_FINISHED|RUN_ERROR] [--expect-code CODE] [--abort-after-first-event | --abort-after-event TYPE]");
  process.exit(err ? 2 : 0);
}

const failures = [];
const warnings = [];
const origWarn = console.warn;
console.warn = (...args) => {
  const msg = args.map(String).join(" ");
  warnings.push(msg);
  origWarn(...args);
};

const events = [];
let aborted = false;
const agent = new HttpAgent({ url, threadId: opt.thread });
agent.setMessages([{ id: `u-${randomUUID()}`, role: "user", content: opt.message }]);
try {
  await agent.runAgent({ runId: opt.runId }, {
    onEvent({ event }) {
      events.push(event);
      for (const p of schemaProblems(event)) failures.push(`event ${events.length - 1} ${event.type}: ${p}`);
      if (!aborted && opt.abortAfter && (opt.abortAfter === "*" || opt.abortAfter === event.type)) {
        aborted = true;
        agent.abortRun();
      }
    },
  });
} catch (e) {
  failures.push(`runAgent failed: ${e instanceof Error ? e.message : String(e)}`);
}

const types = events.map((e) => e.type);
const terminals = events.filter((e) => TERMINAL.has(e.type));
const terminal = terminals.at(-1);
if (types[0] !== "RUN_STARTED") failures.push(`first event is ${types[0]}, not RUN_STARTED`);
else {
  if (events[0].runId !== opt.runId) failures.push(`RUN_STARTED.runId is ${events[0].runId}, want the client's ${opt.runId}`);
  if (events[0].threadId !== opt.thread) failures.push(`RUN_STARTED.threadId is ${events[0].threadId}, want ${opt.thread}`);
}
if (opt.abortAfter) {
  if (!aborted) failures.push(`never aborted: no ${opt.abortAfter} event arrived`);
} else {
  if (terminals.length !== 1) failures.push(`${terminals.length} terminal events (want exactly one RUN_FINISHED or RUN_ERROR)`);
  if (terminal && types.at(-1) !== terminal.type) failures.push("events after the terminal event");
  if (opt.expect && terminal?.type !== opt.expect) failures.push(`terminal is ${terminal?.type}, want ${opt.expect}`);
  if (opt.expectCode && terminal?.code !== opt.expectCode) failures.push(`RUN_ERROR code is ${terminal?.code}, want ${opt.expectCode}`);
}
for (const w of warnings) failures.push(`client warning: ${w}`);

const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
const summary = {
  ok: failures.length === 0, runId: events[0]?.runId, threadId: events[0]?.threadId, types,
  terminal: terminal?.type ?? null, code: terminal?.code ?? null, text, aborted, failures,
};
console.log(JSON.stringify(summary));
process.exit(summary.ok ? 0 : 1);
