import type { AguiEvent, Frame } from "../model/types";

// A small, dependency-free parser for text/event-stream bodies.
//
// EventSource cannot send a Last-Event-ID header on its first request, and
// @ag-ui/client's own parser drops the `id:` field that the host uses as its
// resume cursor, so the UI parses the stream itself. Each dispatched message
// keeps the id that appeared *in that frame* (undefined when the frame had no
// `id:` line — the host sends such frames when it re-opens state on resume).

export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private id: string | undefined;
  private event: string | undefined;
  private sawField = false;

  /** Feeds a decoded chunk and returns the messages it completed. */
  push(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A trailing lone \r may be the first half of \r\n: wait for more.
      if (m[0] === "\r" && m.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line, out);
    }
    return out;
  }

  /** Ends the stream: a last frame without its blank line is still dispatched. */
  end(): SseMessage[] {
    const out: SseMessage[] = [];
    if (this.buffer !== "") {
      this.line(this.buffer, out);
      this.buffer = "";
    }
    this.dispatch(out);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === "") {
      this.dispatch(out);
      return;
    }
    if (line.startsWith(":")) return; // comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        this.sawField = true;
        break;
      case "id":
        if (!value.includes("\u0000")) this.id = value;
        this.sawField = true;
        break;
      case "event":
        this.event = value;
        this.sawField = true;
        break;
      default:
        // retry and unknown fields are ignored
        break;
    }
  }

  private dispatch(out: SseMessage[]): void {
    if (this.sawField && this.data.length > 0) {
      const msg: SseMessage = { data: this.data.join("\n") };
      if (this.id !== undefined) msg.id = this.id;
      if (this.event !== undefined) msg.event = this.event;
      out.push(msg);
    }
    this.data = [];
    this.id = undefined;
    this.event = undefined;
    this.sawField = false;
  }
}

/** Parses a whole SSE body (tests and fixtures). */
export function parseSse(text: string): SseMessage[] {
  const p = new SseParser();
  return [...p.push(text), ...p.end()];
}


/** Decodes one SSE message into a frame; undefined for non-JSON or typeless data. */
export function toFrame(msg: SseMessage): Frame | undefined {
  let v: unknown;
  try {
    v = JSON.parse(msg.data);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return undefined;
  const ev = v as AguiEvent;
  if (typeof ev.type !== "string") return undefined;
  return msg.id !== undefined ? { id: msg.id, event: ev } : { event: ev };
}

/** Parses a whole SSE body into frames (tests and fixtures). */
export function parseFrames(text: string): Frame[] {
  const out: Frame[] = [];
  for (const m of parseSse(text)) {
    const f = toFrame(m);
    if (f) out.push(f);
  }
  return out;
}
