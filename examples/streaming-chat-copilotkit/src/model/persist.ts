// sessionStorage persistence: the reduced transcript of the conversation and,
// while a run is active, its resume cursor {runId, lastEventId}. Both are
// written together from one state, so the cursor always matches the
// transcript it is stored with and a replay after it neither skips nor
// doubles anything.

import { activeRun } from "./reducer";
import type { ChatState } from "./types";

// v2: delegations keep a conversation (questions, answers) and a status
// instead of a status line; a v1 transcript is not read.
export const TRANSCRIPT_KEY = "agentadaptor.transcript.v2";
export const RESUME_KEY = "agentadaptor.resume.v2";

export interface Saved {
  threadId: string;
  state: ChatState;
}

export interface ResumeRecord {
  runId: string;
  lastEventId: string;
}

export function load(storage: Storage | undefined): Saved | undefined {
  if (!storage) return undefined;
  try {
    const raw = storage.getItem(TRANSCRIPT_KEY);
    if (!raw) return undefined;
    const v = JSON.parse(raw) as Partial<Saved>;
    if (!v || typeof v.threadId !== "string" || !v.state || !Array.isArray(v.state.entries)) return undefined;
    const { streamRunId: _ignored, ...state } = v.state;
    return { threadId: v.threadId, state };
  } catch {
    return undefined;
  }
}

export function loadResume(storage: Storage | undefined): ResumeRecord | undefined {
  if (!storage) return undefined;
  try {
    const v = JSON.parse(storage.getItem(RESUME_KEY) ?? "null") as Partial<ResumeRecord> | null;
    if (v && typeof v.runId === "string" && typeof v.lastEventId === "string") {
      return { runId: v.runId, lastEventId: v.lastEventId };
    }
  } catch {
    // ignore
  }
  return undefined;
}

/** Writes both keys; returns false when storage refused (quota). */
export function save(storage: Storage | undefined, saved: Saved): boolean {
  if (!storage) return false;
  const run = activeRun(saved.state);
  try {
    storage.setItem(TRANSCRIPT_KEY, JSON.stringify(saved));
    if (run) {
      storage.setItem(RESUME_KEY, JSON.stringify({ runId: run.runId, lastEventId: run.lastEventId ?? "0" }));
    } else {
      storage.removeItem(RESUME_KEY);
    }
    return true;
  } catch {
    // Too big: keep at least the cursor so a reload replays the run from the
    // start of the host's buffer.
    try {
      storage.removeItem(TRANSCRIPT_KEY);
      if (run) storage.setItem(RESUME_KEY, JSON.stringify({ runId: run.runId, lastEventId: "0" }));
    } catch {
      // nothing more to do
    }
    return false;
  }
}

export function clear(storage: Storage | undefined): void {
  try {
    storage?.removeItem(TRANSCRIPT_KEY);
    storage?.removeItem(RESUME_KEY);
  } catch {
    // ignore
  }
}
