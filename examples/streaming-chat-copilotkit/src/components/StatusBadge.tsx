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
  disconnected: "neutral",
};

const labels: Record<string, string> = {
  input_required: "needs input",
  disconnected: "unknown",
  interrupted: "connection lost",
};

const titles: Record<string, string> = {
  disconnected: "The connection to the host was lost before this ended: its outcome is unknown.",
};

export function StatusBadge({ status, testId, label }: { status: string; testId?: string; label?: string }) {
  const tone = tones[status] ?? "neutral";
  const text = label ?? labels[status] ?? status.replace(/_/g, " ");
  return (
    <span className={`badge badge-${tone}`} data-testid={testId} data-status={status} title={titles[status]}>
      {tone === "active" && <span className="pulse" aria-hidden="true" />}
      {text.charAt(0).toUpperCase() + text.slice(1)}
    </span>
  );
}
