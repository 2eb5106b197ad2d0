import { useState } from "react";
import { formatBytes } from "../model/links";
import type { ArtifactView } from "../model/types";
import { ArtifactViewer, MAX_PREVIEW_BYTES, previewKind, type ViewedArtifact } from "./ArtifactViewer";

export interface ArtifactItem {
  key: string;
  name: string;
  mimeType?: string | undefined;
  sizeBytes?: number | undefined;
  href?: string | undefined;
  error?: string | undefined;
}

export function fromViews(views: ArtifactView[]): ArtifactItem[] {
  return views.map((a) => ({
    key: a.id,
    name: a.name,
    mimeType: a.mimeType,
    sizeBytes: a.sizeBytes,
    href: a.href,
    error: a.error ? a.error.message ?? a.error.code : undefined,
  }));
}

/** Text artifacts open in the app's viewer; the rest (and oversized ones) download. */
function viewable(a: ArtifactItem): ViewedArtifact | undefined {
  const kind = previewKind(a.mimeType, a.name);
  if (!a.href || !kind || (a.sizeBytes ?? 0) > MAX_PREVIEW_BYTES) return undefined;
  return { name: a.name, href: a.href, mimeType: a.mimeType, sizeBytes: a.sizeBytes, kind };
}

export function ArtifactList({ items, label }: { items: ArtifactItem[]; label: string }) {
  const [open, setOpen] = useState<ViewedArtifact | undefined>();
  if (items.length === 0) return null;
  return (
    <>
      {open && <ArtifactViewer artifact={open} onClose={() => setOpen(undefined)} />}
      <ul className="artifacts" aria-label={label}>
        {items.map((a) => (
          <li key={a.key} className="artifact">
            <span className="artifact-icon" aria-hidden="true">
              ▤
            </span>
            {a.href ? (
              <a
                href={a.href}
                target="_blank"
                rel="noreferrer"
                data-testid="artifact-link"
                download={a.name}
                onClick={(e) => {
                  const v = viewable(a);
                  // A plain click opens the viewer; ctrl/cmd/shift-click and
                  // middle-click keep the browser's own behaviour.
                  if (!v || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
                  e.preventDefault();
                  setOpen(v);
                }}
              >
                {a.name}
              </a>
            ) : (
              <span className="artifact-name">{a.name}</span>
            )}
            {a.mimeType && <span className="muted">{a.mimeType}</span>}
            {a.sizeBytes !== undefined && a.sizeBytes > 0 && <span className="muted">{formatBytes(a.sizeBytes)}</span>}
            {a.error && <span className="artifact-error">{a.error}</span>}
          </li>
        ))}
      </ul>
    </>
  );
}
