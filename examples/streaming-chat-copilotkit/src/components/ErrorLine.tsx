import { conciseError } from "../model/reducer";
import type { ErrorInfo } from "../model/types";

/** A failure in one short line; the full message, code and flags behind a toggle. */
export function ErrorLine({
  error,
  testId,
  fallback,
  withDetails = true,
}: {
  error: ErrorInfo | undefined;
  testId?: string;
  fallback?: string;
  /** false: the caller shows the detail elsewhere (a subagent's own Details). */
  withDetails?: boolean;
}) {
  const { headline, detail } = conciseError(error, fallback);
  return (
    <div className="error-line" data-testid={testId} role="status">
      <span className="error-headline">{headline}</span>
      {detail && withDetails && (
        <details className="error-details">
          <summary>Details</summary>
          <pre>{detail}</pre>
        </details>
      )}
    </div>
  );
}
