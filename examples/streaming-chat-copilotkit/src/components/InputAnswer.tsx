import { useId, useState, type FormEvent } from "react";
import { useStore } from "../state/context";

/** The answer box of an input_required subagent. */
export function InputAnswer({ runId, delegationId, prompt }: { runId: string; delegationId: string; prompt: string }) {
  const store = useStore();
  const id = useId();
  const [text, setText] = useState("");
  const [state, setState] = useState<"idle" | "sending" | "sent">("idle");
  const [error, setError] = useState<string>();

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!text.trim() || state === "sending") return;
    setState("sending");
    setError(undefined);
    const err = await store.answer(runId, delegationId, text.trim());
    if (err) {
      setError(err);
      setState("idle");
    } else {
      setState("sent");
    }
  }

  return (
    <form className="input-answer" onSubmit={submit} data-testid="subagent-input-form">
      <label htmlFor={id} className="input-prompt">
        {prompt}
      </label>
      <div className="input-row">
        <input
          id={id}
          data-testid="subagent-input"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="Type your answer"
          disabled={state !== "idle"}
          autoComplete="off"
        />
        <button type="submit" data-testid="subagent-input-send" disabled={state !== "idle" || !text.trim()}>
          {state === "sending" ? "Sending…" : state === "sent" ? "Sent" : "Answer"}
        </button>
      </div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
