import { useId, useState, type FormEvent, type KeyboardEvent } from "react";
import { useBusy, useStore } from "../state/context";

export function Composer() {
  const store = useStore();
  const busy = useBusy();
  const id = useId();
  const [text, setText] = useState("");

  function submit(e?: FormEvent) {
    e?.preventDefault();
    if (!text.trim() || busy) return;
    void store.send(text);
    setText("");
  }
  function onKey(e: KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) submit(e);
  }

  return (
    <form className="composer" onSubmit={submit}>
      <label htmlFor={id} className="sr-only">
        Message to the parent agent
      </label>
      <textarea
        id={id}
        data-testid="composer-input"
        rows={1}
        value={text}
        placeholder={busy ? "The agent is working…" : "Ask the parent agent something"}
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
  );
}
