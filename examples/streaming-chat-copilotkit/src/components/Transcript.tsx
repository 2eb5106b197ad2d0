import { useRef, type ReactNode } from "react";
import { useChatState } from "../state/context";
import { ErrorLine } from "./ErrorLine";
import { RunBlocks } from "./RunBlocks";
import { ScrollContext, useFollow } from "./scroll";

/**
 * The conversation, in its own scroll container that follows the stream
 * (see scroll.tsx). children (the composer) get the same scroll control.
 */
export function Transcript({ children }: { children?: ReactNode }) {
  const state = useChatState();
  const scroller = useRef<HTMLElement>(null);
  const content = useRef<HTMLDivElement>(null);
  const { atBottom, control } = useFollow(scroller, content);

  return (
    <ScrollContext.Provider value={control}>
      <div className="stage">
        <main className="scroller" ref={scroller} data-testid="transcript-scroller">
          <div className="content" ref={content}>
            {state.entries.length === 0 ? (
              <div className="empty" data-testid="empty-state">
                <h2>Chat with the parent agent</h2>
                <p>
                  When it delegates with a <code>delegate_to_*</code> tool, the remote agent's progress streams here as a nested
                  subagent: status, text, artifacts and its final result.
                </p>
              </div>
            ) : (
              <div className="transcript" role="log" aria-label="Conversation">
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
                        <div key={`e:${e.id}`} className="notice notice-error" role="alert" data-testid="request-error">
                          <ErrorLine error={{ message: e.message }} />
                          {e.detail && (
                            <details className="error-details">
                              <summary>Details</summary>
                              <pre>{e.detail}</pre>
                            </details>
                          )}
                        </div>
                      );
                  }
                })}
              </div>
            )}
          </div>
        </main>
        {!atBottom && (
          <button type="button" className="jump" data-testid="jump-to-latest" onClick={() => control.follow()}>
            Jump to latest ↓
          </button>
        )}
      </div>
      {children}
    </ScrollContext.Provider>
  );
}
