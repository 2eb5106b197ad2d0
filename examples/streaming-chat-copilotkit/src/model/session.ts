// The host's session routes (with auth.tokens): GET /session says whether
// the host requires authentication and who is signed in; POST /logout ends
// the browser's session (same-origin only; the cookie is HttpOnly, so only
// the host can clear it).

export const SESSION_URL = "/session";
export const LOGOUT_URL = "/logout";

export interface SessionInfo {
  /** The host requires a token (and so shows a sign-in page without a session). */
  authRequired: boolean;
  principal?: string;
  /** The request rode a session cookie (Sign out ends it). */
  session?: boolean;
}

/** Parses GET /session's answer; undefined for anything else (an older host answers with the page). */
export function parseSession(contentType: string | null, body: unknown): SessionInfo | undefined {
  if (!contentType?.startsWith("application/json") || !body || typeof body !== "object") return undefined;
  const v = body as { auth_required?: unknown; principal?: unknown; session?: unknown };
  if (typeof v.auth_required !== "boolean") return undefined;
  return {
    authRequired: v.auth_required,
    ...(typeof v.principal === "string" ? { principal: v.principal } : {}),
    ...(typeof v.session === "boolean" ? { session: v.session } : {}),
  };
}

export async function fetchSession(f: typeof fetch = fetch): Promise<SessionInfo | undefined> {
  try {
    const res = await f(SESSION_URL, { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!res.ok) return undefined;
    return parseSession(res.headers.get("Content-Type"), await res.json());
  } catch {
    return undefined;
  }
}
