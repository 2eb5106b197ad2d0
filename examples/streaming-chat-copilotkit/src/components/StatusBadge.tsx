export type Tone = "neutral" | "active" | "success" | "warning" | "danger";

const tones: Record<string, Tone> = {
  running: "active",
  starting: "active",
  working: "active",
  input_required: "warning",
  completed: "success",
  finished: "success",
  failed: "danger",
  error: "danger",
  cancelled: "neutral",
  interrupted: "warning",
};

export function StatusBadge({ status, testId }: { status: string; testId?: string }) {
  const tone = tones[status] ?? "neutral";
  return (
    <span className={`badge badge-${tone}`} data-testid={testId} data-status={status}>
      {tone === "active" && <span className="pulse" aria-hidden="true" />}
      {status.replace(/_/g, " ")}
    </span>
  );
}
