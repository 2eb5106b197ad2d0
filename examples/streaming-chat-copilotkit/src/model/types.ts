// View-model types: what the UI renders, derived from AG-UI events by the
// pure reducer in reducer.ts.

/** An AG-UI event as decoded from one SSE frame. */
export interface AguiEvent {
  type: string;
  [key: string]: unknown;
}

/** One SSE frame: the event and the frame's `id:` (absent on re-open frames). */
export interface Frame {
  id?: string;
  event: AguiEvent;
}

/** Everything that changes the transcript. */
export type Action =
  | { kind: "user"; id: string; text: string }
  | { kind: "frame"; frame: Frame }
  /**
   * The stream ended (or failed) before its terminal event and could not be
   * re-attached: the connection to the host is lost (the run may go on there).
   */
  | { kind: "stream-ended"; runId?: string; reason: string; detail?: string; gone?: boolean }
  /** The user asked to re-attach to an interrupted run. */
  | { kind: "reconnect"; runId: string }
  /** A request failed before any run started (HTTP error, network). */
  | { kind: "request-failed"; id: string; message: string; detail?: string }
  /** The host accepted the user's answer to an input_required delegation. */
  | { kind: "answer"; runId: string; delegationId: string; id: string; text: string }
  /** New chat: forget the conversation. */
  | { kind: "reset" };

/** interrupted: the connection to the host was lost before the run ended. */
export type RunStatus = "running" | "finished" | "error" | "cancelled" | "interrupted";

/**
 * A delegation's state. "disconnected" is never stored: it is how a
 * delegation that had not ended is shown once its run's connection is lost.
 */
export type DelegationPhase =
  | "starting"
  | "working"
  | "input_required"
  | "completed"
  | "failed"
  | "cancelled"
  | "disconnected";

export interface ErrorInfo {
  code?: string;
  message?: string;
  retryable?: boolean;
  remoteStatus?: string;
}

export interface ArtifactView {
  id: string;
  name: string;
  mimeType?: string;
  sizeBytes?: number;
  /** Same-origin URL of the host's artifact endpoint (undefined when unknown). */
  href?: string;
  error?: ErrorInfo;
}

export interface RemoteMessage {
  id: string;
  text: string;
  open: boolean;
  /**
   * agent (default): the remote agent's text; question: what it asked when it
   * needed input; answer: the user's answer, added by the UI when the host
   * accepted it.
   */
  role?: "agent" | "question" | "answer";
}

export interface DelegationView {
  delegationId: string;
  runId: string;
  /** Empty while the delegation is unclaimed (not yet correlated to a tool call). */
  parentToolCallId: string;
  agentKey?: string;
  agentName?: string;
  protocol?: string;
  remoteTaskId?: string;
  remoteContextId?: string;
  phase: DelegationPhase;
  /** The latest remote status, normalized (working, submitted, polling, input_provided, …). */
  status: string;
  /** The text that came with the latest status, if any. */
  statusText?: string;
  /** The conversation: the remote's messages, its questions and the user's answers, in order. */
  messages: RemoteMessage[];
  artifacts: ArtifactView[];
  /** The question of an input_required delegation. */
  inputPrompt?: string;
  error?: ErrorInfo;
  terminal: boolean;
  /** Order of first appearance within the run. */
  order: number;
}

/** The structured delegate_to_* tool result (docs/design.md#tool-contract, snake_case). */
export interface DelegationResult {
  delegation_id?: string;
  agent?: string;
  remote_protocol?: string;
  remote_task_id?: string;
  remote_context_id?: string;
  status?: string;
  summary?: string;
  artifacts?: Array<{ id?: string; name?: string; mime_type?: string; uri?: string }>;
  error?: { code?: string; message?: string; retryable?: boolean; remote_status?: string };
  [key: string]: unknown;
}

export interface ToolResultView {
  raw: string;
  /** The parsed JSON object, when content was a JSON object. */
  parsed?: DelegationResult;
}

export interface ToolCallView {
  id: string;
  name: string;
  args: string;
  ended: boolean;
  isDelegation: boolean;
  result?: ToolResultView;
}

export interface TextMessageView {
  id: string;
  role: string;
  text: string;
  open: boolean;
}

export type Block =
  | { kind: "text"; id: string }
  | { kind: "tool"; id: string }
  /** Where a delegation first appeared; rendered only while it has no tool card. */
  | { kind: "delegation"; id: string }
  | { kind: "notice"; id: string; level: "info" | "warning" | "error"; text: string };

export interface RunView {
  runId: string;
  threadId?: string;
  status: RunStatus;
  error?: ErrorInfo;
  /**
   * Why the connection was lost (status interrupted); gone: the host no
   * longer knows the run, so there is nothing to reconnect to.
   */
  connection?: { reason: string; detail?: string; gone?: boolean };
  /** The highest frame id applied (the resume cursor). */
  lastEventId?: string;
  blocks: Block[];
  messages: Record<string, TextMessageView>;
  toolCalls: Record<string, ToolCallView>;
  delegations: Record<string, DelegationView>;
  /** Text message currently open without an id (lenient streams). */
  openMessageId?: string;
  counter: number;
}

export type Entry =
  | { kind: "user"; id: string; text: string }
  | { kind: "run"; runId: string }
  | { kind: "error"; id: string; message: string; detail?: string };

export interface ChatState {
  entries: Entry[];
  runs: Record<string, RunView>;
  /** The run the stream being consumed belongs to (set by RUN_STARTED). */
  streamRunId?: string;
}
