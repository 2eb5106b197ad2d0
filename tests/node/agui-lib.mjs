// Shared helpers of the AG-UI Node checks: SSE parsing and validation of
// events against @ag-ui/core 1.0.0 (EventSchema from "@ag-ui/core/schemas")
// and @ag-ui/core 0.0.59 (EventSchemas, exported from the package root; npm
// alias "@ag-ui/core-0059"), the version CopilotKit 1.7x pins.
import { EventSchema as EventSchema100 } from "@ag-ui/core/schemas";
import { EventSchemas as EventSchemas0059 } from "@ag-ui/core-0059";
import { verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom, toArray } from "rxjs";

/** Parses SSE text into frames {id, event, data, line}; comments are skipped. */
export function parseSSE(text) {
  const frames = [];
  let cur = null;
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    if (raw === "") {
      if (cur && cur.data.length > 0) frames.push({ ...cur, data: cur.data.join("\n") });
      cur = null;
      return;
    }
    if (raw.startsWith(":")) return;
    cur ??= { id: undefined, event: undefined, data: [], line: i + 1 };
    const colon = raw.indexOf(":");
    const field = colon < 0 ? raw : raw.slice(0, colon);
    let value = colon < 0 ? "" : raw.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") cur.id = value;
    else if (field === "event") cur.event = value;
    else if (field === "data") cur.data.push(value);
  });
  if (cur && cur.data.length > 0) frames.push({ ...cur, data: cur.data.join("\n") });
  return frames;
}

function issues(result) {
  return result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
}

/**
 * Returns the problems of one event under both schema versions ([] if
 * valid); with only100, under @ag-ui/core 1.0.0 alone (for streams that use
 * 1.x-only events such as SUBAGENT_*, which 0.0.59 does not know).
 */
export function schemaProblems(event, { only100 = false } = {}) {
  const out = [];
  const a = EventSchema100.safeParse(event);
  if (!a.success) out.push(`@ag-ui/core 1.0.0: ${issues(a)}`);
  if (only100) return out;
  const b = EventSchemas0059.safeParse(event);
  if (!b.success) out.push(`@ag-ui/core 0.0.59: ${issues(b)}`);
  return out;
}

/** Runs @ag-ui/client's own event verification over a list of events. */
export async function clientVerify(events) {
  try {
    await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()), { defaultValue: [] });
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

export const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);
