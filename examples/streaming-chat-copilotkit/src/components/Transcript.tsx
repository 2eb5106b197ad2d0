import { useEffect, useRef } from "react";
import { useChatState } from "../state/context";
import { RunBlocks } from "./RunBlocks";

export function Transcript() {
  const state = useChatState();
  const end = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    const onScroll = () => {
      const el = document.scrollingElement ?? document.documentElement;
      stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 120;
    };
    window.addEventListener("scroll", onScroll, { passive: true });
    return () => window.removeEventListener("scroll", onScroll);
  }, []);
  useEffect(() => {
    if (stick.current) end.current?.scrollIntoView({ block: "end" });
  });

  if (state.entries.length === 0) {
    return (
      <div className="empty" data-testid="empty-state">
        <h2>Chat with the parent agent</h2>
        <p>
          When it delegates with a <code>delegate_to_*</code> tool, the remote agent's progress streams here as a nested
          subagent: status, text, artifacts and its final result.
        </p>
      </div>
    );
  }
  return (
    <div className="transcript" role="log" aria-label="Conversation" aria-live="polite">
      {state.entries.map((e) => {
        switch (e.kind) {
          case "user":
            return (
              <div key={`u:${e.id}`} className="bubble bubble-user" data-testid="user-message">
                {e.text}
              </div>
            );
          case "run":
            return <RunBlocks key={`r:${e.runId}`} runId={e.runId} />;
          case "error":
            return (
              <p key={`e:${e.id}`} className="notice notice-error" role="alert" data-testid="request-error">
                {e.message}
              </p>
            );
        }
      })}
      <div ref={end} />
    </div>
  );
}
