// Agent text as SAFE markdown (react-markdown + remark-gfm, no rehype-raw):
//   - raw HTML is never rendered: react-markdown shows it as text;
//   - links keep only http:, https: and mailto: targets (and #fragments);
//     anything else (javascript:, data:, relative paths) loses its href;
//     links open in a new tab without a referrer or opener;
//   - images are never loaded (no request leaves for an agent-chosen URL):
//     they are shown as a link to their source.

import type { ReactNode } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";

const plugins = [remarkGfm];

/** The URL an agent's link or image may point to, or undefined (dropped). */
export function safeUrl(url: string): string | undefined {
  const u = url.trim();
  if (/^(https?:\/\/|mailto:)/i.test(u)) return u;
  if (u.startsWith("#")) return u;
  return undefined;
}

const components: Components = {
  a: ({ href, children }) =>
    href ? (
      <a href={href} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    ) : (
      <span className="md-link-dropped">{children}</span>
    ),
  img: ({ src, alt }) => {
    const label = alt?.trim() ? `image: ${alt}` : "image";
    return typeof src === "string" && src ? (
      <a href={src} target="_blank" rel="noopener noreferrer nofollow" className="md-image">
        [{label}]
      </a>
    ) : (
      <span className="md-image">[{label}]</span>
    );
  },
  table: ({ children }) => (
    <div className="md-table">
      <table>{children}</table>
    </div>
  ),
};

export function Markdown({
  text,
  streaming = false,
  className = "",
  testId,
}: {
  text: string;
  streaming?: boolean;
  className?: string;
  testId?: string;
}): ReactNode {
  return (
    <div className={`md ${className}`} data-streaming={streaming ? "true" : undefined} data-testid={testId}>
      <ReactMarkdown remarkPlugins={plugins} components={components} urlTransform={(url) => safeUrl(url)}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
