import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { fetchArtifactText, MAX_PREVIEW_BYTES, previewKind } from "../src/components/ArtifactViewer";
import { Markdown } from "../src/components/Markdown";

describe("artifact viewer", () => {
  it("shows markdown rendered and other text as text; the rest downloads", () => {
    expect(previewKind("text/markdown", "notes.md")).toBe("markdown");
    expect(previewKind("text/markdown; charset=utf-8", "x")).toBe("markdown");
    expect(previewKind(undefined, "notes.md")).toBe("markdown");
    expect(previewKind("text/plain", "a.txt")).toBe("text");
    expect(previewKind("application/json", "a.json")).toBe("text");
    expect(previewKind("application/vnd.api+json", "a")).toBe("text");
    expect(previewKind("text/html", "page.html")).toBe("text"); // shown as source, never rendered
    expect(previewKind("image/png", "a.png")).toBeUndefined();
    expect(previewKind("application/pdf", "a.pdf")).toBeUndefined();
    expect(previewKind(undefined, "blob")).toBeUndefined();
  });

  it("reads the artifact's text from the host, bounded", async () => {
    const ok = (async () => new Response("# Notes\n\n**bold**")) as typeof fetch;
    expect(await fetchArtifactText("/a", ok)).toEqual({ state: "ok", text: "# Notes\n\n**bold**" });
    const gone = (async () => new Response("{}", { status: 404 })) as typeof fetch;
    expect(await fetchArtifactText("/a", gone)).toEqual({ state: "error", message: "The host answered HTTP 404." });
    const big = (async () => new Response("x".repeat(MAX_PREVIEW_BYTES + 1))) as typeof fetch;
    expect((await fetchArtifactText("/a", big)).state).toBe("error");
    const down = (async () => {
      throw new TypeError("Failed to fetch");
    }) as typeof fetch;
    expect(await fetchArtifactText("/a", down)).toEqual({ state: "error", message: "The host could not be reached." });
  });

  it("a remote's markdown artifact renders no raw HTML and loads nothing", () => {
    const out = renderToStaticMarkup(<Markdown text={'# Notes\n\n<script>alert(1)</script>\n\n<img src="https://evil.example/x.png" onerror="alert(2)">\n\n![i](https://evil.example/t.png)'} />);
    expect(out).toContain("<h1>Notes</h1>");
    expect(out).not.toMatch(/<script|<img|onerror="/);
    expect(out).toContain("&lt;script&gt;"); // shown as text
  });
});
