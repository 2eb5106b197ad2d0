import { createContext, useContext, useSyncExternalStore } from "react";
import { chatPhase, lastRun, type ChatPhase } from "../model/reducer";
import type { ChatState, RunView } from "../model/types";
import type { ChatStore } from "./store";

export const StoreContext = createContext<ChatStore | null>(null);

/** The run a tool-call card belongs to (CopilotKit's renderer knows only the call). */
export const RunIdContext = createContext<string>("");

export function useStore(): ChatStore {
  const s = useContext(StoreContext);
  if (!s) throw new Error("useStore outside StoreContext");
  return s;
}

export function useChatState(): ChatState {
  const store = useStore();
  return useSyncExternalStore(store.subscribe, store.getState, store.getState);
}

export function useRun(runId: string): RunView | undefined {
  const store = useStore();
  const get = () => store.getState().runs[runId];
  return useSyncExternalStore(store.subscribe, get, get);
}

export function useBusy(): boolean {
  const store = useStore();
  return useSyncExternalStore(store.subscribe, store.isBusy, store.isBusy);
}

/** Whether runId is the conversation's newest run. */
export function useIsLastRun(runId: string): boolean {
  const store = useStore();
  const get = () => lastRun(store.getState())?.runId === runId;
  return useSyncExternalStore(store.subscribe, get, get);
}

/** idle, working, waiting (for the user's answer), reconnecting or offline. */
export function useChatPhase(): ChatPhase {
  const store = useStore();
  const get = () => chatPhase(store.getState(), store.isBusy(), store.isReconnecting());
  return useSyncExternalStore(store.subscribe, get, get);
}
