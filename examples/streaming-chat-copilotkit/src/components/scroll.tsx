// Following the stream. The transcript scrolls in its own container, between
// the header and the composer (nothing overlaps it), and sticks to its
// bottom while the user is there: every render and every size change of the
// content (streamed text, a panel opening or collapsing) scrolls it down
// again. Scrolling up more than FOLLOW_SLACK_PX stops following until the
// user comes back to the bottom, sends a message, answers a subagent or
// presses "Jump to latest".

import { createContext, useCallback, useContext, useEffect, useLayoutEffect, useMemo, useRef, useState, type RefObject } from "react";

/** How close to the bottom (px) still counts as "at the bottom". */
export const FOLLOW_SLACK_PX = 48;

export interface ScrollControl {
  /** Follow the stream again, from the bottom. */
  follow(): void;
  /** Brings el fully into view (a subagent's answer box), following if that is the bottom. */
  reveal(el: HTMLElement): void;
}

export const ScrollContext = createContext<ScrollControl>({ follow: () => undefined, reveal: () => undefined });

export function useScrollControl(): ScrollControl {
  return useContext(ScrollContext);
}

export function distanceFromBottom(el: { scrollHeight: number; scrollTop: number; clientHeight: number }): number {
  return Math.max(0, el.scrollHeight - el.scrollTop - el.clientHeight);
}

export function useFollow(scroller: RefObject<HTMLElement | null>, content: RefObject<HTMLElement | null>) {
  const following = useRef(true);
  const [atBottom, setAtBottom] = useState(true);

  const toBottom = useCallback(() => {
    const el = scroller.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [scroller]);

  // After every render of the transcript (a frame changed the state).
  useLayoutEffect(() => {
    if (following.current) toBottom();
  });

  useEffect(() => {
    const el = scroller.current;
    const inner = content.current;
    if (!el) return;
    const onScroll = () => {
      const bottom = distanceFromBottom(el) <= FOLLOW_SLACK_PX;
      following.current = bottom;
      setAtBottom(bottom);
    };
    el.addEventListener("scroll", onScroll, { passive: true });
    // Size changes that no store update announces: a panel collapsing or
    // opening, the composer growing, the window resizing.
    const ro = new ResizeObserver(() => {
      if (following.current) toBottom();
      else setAtBottom(distanceFromBottom(el) <= FOLLOW_SLACK_PX);
    });
    ro.observe(el);
    if (inner) ro.observe(inner);
    return () => {
      el.removeEventListener("scroll", onScroll);
      ro.disconnect();
    };
  }, [scroller, content, toBottom]);

  const control = useMemo<ScrollControl>(
    () => ({
      follow: () => {
        following.current = true;
        setAtBottom(true);
        toBottom();
      },
      reveal: (target: HTMLElement) => {
        const el = scroller.current;
        if (!el) return;
        if (following.current) toBottom();
        const box = el.getBoundingClientRect();
        const r = target.getBoundingClientRect();
        if (r.top < box.top || r.bottom > box.bottom) target.scrollIntoView({ block: "nearest" });
      },
    }),
    [scroller, toBottom],
  );
  return { atBottom, control };
}
