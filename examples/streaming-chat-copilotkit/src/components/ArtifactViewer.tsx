// An artifact opened in the app: text artifacts are fetched from the host's
// artifact route and shown in a dialog (markdown rendered by <Markdown>, so
// no raw HTML from the remote and no image loads; other text as plain
// text), with a download link. The route itself keeps serving the bytes
// sandboxed (Content-Security-Policy: sandbox) for the download and for
// anyone who opens it directly.

import { useEffect, useRef, useState } from "react";
import { formatBytes } from "../model/links";
import { Markdown } from "./Markdown";

/** Artifacts larger than this are offered for download only. */
export const MAX_PREVIEW_BYTES = 1 << 20;

export type PreviewKind = "markdown" | "text";

/** How an artifact is shown in the app, or undefined: download only. */
export function previewKind(mimeType: string | undefined, name: string): PreviewKind | undefined {
  const mt = (mimeType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mt === "text/markdown" || mt === "text/x-markdown" || (!mt && /\.(md|markdown)$/i.test(name))) return "markdown";
  if (mt.startsWith("text/") || mt === "application/json" || mt.endsWith("+json") || mt === "application/x-ndjson" || mt === "application/yaml") return "text";
  if (!mt && /\.(txt|log|json|ya?ml|csv)$/i.test(name)) return "text";
  return undefined;
}

export interface ViewedArtifact {
  name: string;
  href: string;
  mimeType?: string | undefined;
  sizeBytes?: number | undefined;
  kind: PreviewKind;
}

type Load = { state: "loading" } | { state: "ok"; text: string } | { state: "error"; message: string };

/** Reads an artifact's text, bounded. */
export async function fetchArtifactText(href: string, f: typeof fetch = fetch): Promise<Load> {
  try {
    const res = await f(href, { headers: { Accept: "text/*, application/json" } });
    if (!res.ok) return { state: "error", message: `The host answered HTTP ${res.status}.` };
    const text = await res.text();
    if (text.length > MAX_PREVIEW_BYTES) return { state: "error", message: "Too large to show here: download it." };
    return { state: "ok", text };
  } catch {
    return { state: "error", message: "The host could not be reached." };
  }
}

export function ArtifactViewer({ artifact, onClose }: { artifact: ViewedArtifact; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [load, setLoad] = useState<Load>({ state: "loading" });
  useEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
    let live = true;
    void fetchArtifactText(artifact.href).then((l) => live && setLoad(l));
    return () => {
      live = false;
    };
  }, [artifact.href]);
  return (
    <dialog
      ref={dialog}
      className="artifact-viewer"
      data-testid="artifact-viewer"
      aria-label={`Artifact ${artifact.name}`}
      onClose={onClose}
      onClick={(e) => {
        if (e.target === dialog.current) dialog.current?.close(); // a click on the backdrop
      }}
    >
      <header className="artifact-viewer-head">
        <span className="artifact-viewer-title" title={artifact.name}>
          {artifact.name}
        </span>
        <span className="muted">
          {artifact.mimeType}
          {artifact.sizeBytes ? ` · ${formatBytes(artifact.sizeBytes)}` : ""}
        </span>
        <a className="btn-link" href={artifact.href} download={artifact.name} data-testid="artifact-download">
          Download
        </a>
        <button type="button" className="btn-ghost" data-testid="artifact-close" onClick={() => dialog.current?.close()}>
          Close
        </button>
      </header>
      <div className="artifact-viewer-body" data-testid="artifact-viewer-body" data-state={load.state}>
        {load.state === "loading" && <p className="muted">Loading…</p>}
        {load.state === "error" && <p className="artifact-error">{load.message}</p>}
        {load.state === "ok" &&
          (artifact.kind === "markdown" ? <Markdown text={load.text} /> : <pre className="artifact-text">{load.text}</pre>)}
      </div>
    </dialog>
  );
}
