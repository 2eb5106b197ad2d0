import { useEffect, useId, useRef, useState, type FormEvent } from "react";
import { useStore } from "../state/context";
import { useScrollControl } from "./scroll";

/**
 * The answer box of an input_required subagent (its question is the last
 * item of the conversation above it). It scrolls itself into view when it
 * appears and takes the focus unless the user is typing elsewhere. Once the
 * host accepted the answer, the answer joins the conversation and the box
 * goes away.
 */
export function InputAnswer({ runId, delegationId, agentName }: { runId: string; delegationId: string; agentName: string }) {
  const store = useStore();
  const scroll = useScrollControl();
  const id = useId();
  const form = useRef<HTMLFormElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<string>();

  useEffect(() => {
    if (form.current) scroll.reveal(form.current);
    const active = document.activeElement;
    const typing = active instanceof HTMLTextAreaElement || active instanceof HTMLInputElement ? active.value !== "" : false;
    if (!typing) input.current?.focus({ preventScroll: true });
  }, [scroll]);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!text.trim() || sending) return;
    setSending(true);
    setError(undefined);
    const err = await store.answer(runId, delegationId, text.trim());
    if (err) {
      setError(err);
      setSending(false);
      return;
    }
    scroll.follow();
  }

  return (
    <form ref={form} className="input-answer" onSubmit={submit} data-testid="subagent-input-form">
      <label htmlFor={id} className="input-prompt">
        Your answer to {agentName}
      </label>
      <div className="input-row">
        <input
          ref={input}
          id={id}
          data-testid="subagent-input"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="Your answer"
          disabled={sending}
          autoComplete="off"
        />
        <button type="submit" data-testid="subagent-input-send" disabled={sending || !text.trim()}>
          {sending ? "Sending…" : "Answer"}
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
