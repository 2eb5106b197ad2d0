import { useId, useLayoutEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { pendingQuestions } from "../model/reducer";
import { useBusy, useChatState, useStore } from "../state/context";
import { useScrollControl } from "./scroll";

/** The message box; while a subagent waits for the user, a banner points to its question. */
export function Composer() {
  const store = useStore();
  const busy = useBusy();
  const waiting = pendingQuestions(useChatState());
  const scroll = useScrollControl();
  const id = useId();
  const [text, setText] = useState("");
  const box = useRef<HTMLTextAreaElement>(null);

  // The box grows with its text (up to its CSS max-height).
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${el.scrollHeight}px`;
  }, [text]);

  function submit(e?: FormEvent) {
    e?.preventDefault();
    if (!text.trim() || busy) return;
    scroll.follow();
    void store.send(text);
    setText("");
  }
  function onKey(e: KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) submit(e);
  }
  function showQuestion() {
    const q = waiting[0];
    if (!q) return;
    const panel = document.querySelector<HTMLElement>(`[data-delegation-id="${CSS.escape(q.delegationId)}"] [data-testid="subagent-input-form"]`);
    if (!panel) return;
    scroll.reveal(panel);
    panel.querySelector<HTMLInputElement>("input")?.focus({ preventScroll: true });
  }

  const placeholder = waiting.length > 0 ? "Answer the question first" : busy ? "The agent is working…" : "Message the parent agent";
  return (
    <div className="composer-wrap">
      {waiting.length > 0 && (
        <div className="waiting-banner" role="status" data-testid="waiting-banner">
          <span>
            <strong>{waiting[0]!.agentName}</strong> is waiting for your answer.
          </span>
          <button type="button" className="btn-ghost" onClick={showQuestion}>
            Show question
          </button>
        </div>
      )}
      <form className="composer" onSubmit={submit}>
        <label htmlFor={id} className="sr-only">
          Message to the parent agent
        </label>
        <textarea
          ref={box}
          id={id}
          data-testid="composer-input"
          rows={1}
          value={text}
          placeholder={placeholder}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={onKey}
        />
        {busy ? (
          <button type="button" className="btn-stop" data-testid="stop-button" onClick={() => void store.stop()}>
            Stop
          </button>
        ) : (
          <button type="submit" data-testid="composer-send" disabled={!text.trim()}>
            Send
          </button>
        )}
      </form>
    </div>
  );
}
