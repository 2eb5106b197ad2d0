import { describe, expect, it } from "vitest";
import { fetchSession, parseSession } from "../src/model/session";

describe("session", () => {
  it("reads the host's GET /session", () => {
    expect(parseSession("application/json; charset=utf-8", { auth_required: true, principal: "alice", session: true })).toEqual({
      authRequired: true,
      principal: "alice",
      session: true,
    });
    expect(parseSession("application/json", { auth_required: false })).toEqual({ authRequired: false });
  });

  it("takes anything else for a host without session routes", () => {
    expect(parseSession("text/html", "<!doctype html>")).toBeUndefined();
    expect(parseSession("application/json", { error: { code: "x" } })).toBeUndefined();
    expect(parseSession(null, null)).toBeUndefined();
  });

  it("fetches it, and a failure shows no Sign out", async () => {
    const ok = (async () =>
      new Response(JSON.stringify({ auth_required: true, principal: "bob", session: false }), {
        headers: { "Content-Type": "application/json" },
      })) as typeof fetch;
    expect(await fetchSession(ok)).toEqual({ authRequired: true, principal: "bob", session: false });
    const down = (async () => {
      throw new TypeError("Failed to fetch");
    }) as typeof fetch;
    expect(await fetchSession(down)).toBeUndefined();
    const html = (async () => new Response("<!doctype html>", { headers: { "Content-Type": "text/html" } })) as typeof fetch;
    expect(await fetchSession(html)).toBeUndefined();
  });
});
