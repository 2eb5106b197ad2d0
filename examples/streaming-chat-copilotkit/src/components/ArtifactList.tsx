import { formatBytes } from "../model/links";
import type { ArtifactView } from "../model/types";

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

export function ArtifactList({ items, label }: { items: ArtifactItem[]; label: string }) {
  if (items.length === 0) return null;
  return (
    <ul className="artifacts" aria-label={label}>
      {items.map((a) => (
        <li key={a.key} className="artifact">
          <span className="artifact-icon" aria-hidden="true">
            ▤
          </span>
          {a.href ? (
            <a href={a.href} target="_blank" rel="noreferrer" data-testid="artifact-link" download={a.name}>
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
  );
}
