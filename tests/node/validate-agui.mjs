#!/usr/bin/env node
// validate-agui.mjs [--allow-missing-terminal] [FILE ...]
//
// Reads AG-UI SSE streams (files, or stdin when no file or "-" is given) and
// validates EVERY frame with @ag-ui/core 1.0.0 and @ag-ui/core 0.0.59, runs
// @ag-ui/client's event verification over each stream, and checks that the
// stream starts with RUN_STARTED and ends with exactly one RUN_FINISHED or
// RUN_ERROR. Prints every failure and exits 1 if there was any, 2 on usage
// errors.
import { readFileSync } from "node:fs";
import { parseSSE, schemaProblems, clientVerify, TERMINAL } from "./agui-lib.mjs";

const args = process.argv.slice(2);
let allowMissingTerminal = false;
let only100 = false;
const files = [];
for (const a of args) {
  if (a === "--allow-missing-terminal") allowMissingTerminal = true;
  else if (a === "--core-1-only") only100 = true; // 1.x-only events (SUBAGENT_*): skip 0.0.59
  else if (a === "-h" || a === "--help") {
    console.log("usage: validate-agui.mjs [--allow-missing-terminal] [--core-1-only] [FILE ...]   (stdin when no FILE or '-')");
    process.exit(0);
  } else if (a.startsWith("--")) {
    console.error(`validate-agui: unknown flag ${a}`);
    process.exit(2);
  } else files.push(a);
}
if (files.length === 0) files.push("-");

let failures = 0;
const fail = (name, msg) => {
  failures++;
  console.error(`FAIL ${name}: ${msg}`);
};

for (const file of files) {
  const name = file === "-" ? "<stdin>" : file;
  let text;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (e) {
    fail(name, `cannot read: ${e.message}`);
    continue;
  }
  const frames = parseSSE(text);
  if (frames.length === 0) {
    fail(name, "no frames");
    continue;
  }
  const events = [];
  for (const f of frames) {
    const where = `frame id=${f.id ?? "?"} (line ${f.line})`;
    let ev;
    try {
      ev = JSON.parse(f.data);
    } catch (e) {
      fail(name, `${where}: data is not JSON: ${e.message}`);
      continue;
    }
    for (const p of schemaProblems(ev, { only100 })) fail(name, `${where} ${ev?.type}: ${p}`);
    events.push(ev);
  }
  if (events[0]?.type !== "RUN_STARTED") fail(name, `first event is ${events[0]?.type}, not RUN_STARTED`);
  const terminals = events.filter((e) => TERMINAL.has(e.type)).length;
  if (terminals > 1) fail(name, `${terminals} terminal events`);
  if (terminals === 0 && !allowMissingTerminal) fail(name, "no RUN_FINISHED or RUN_ERROR (HttpAgent would silently accept this)");
  if (terminals === 1 && !TERMINAL.has(events[events.length - 1].type)) fail(name, "events after the terminal event");
  const verr = await clientVerify(events);
  if (verr) fail(name, `@ag-ui/client verifyEvents: ${verr}`);
  if (failures === 0) console.log(`ok ${name}: ${frames.length} frames`);
}
process.exit(failures > 0 ? 1 : 0);
