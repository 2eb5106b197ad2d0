import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { Markdown, safeUrl } from "../src/components/Markdown";

const html = (text: string) => renderToStaticMarkup(<Markdown text={text} />);

describe("Markdown (agent text)", () => {
  it("renders markdown: emphasis, lists, code, GFM tables", () => {
    const out = html("Here is **bold** and `code`:\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
    expect(out).toContain("<strong>bold</strong>");
    expect(out).toContain("<code>code</code>");
    expect(out).toContain("<li>one</li>");
    expect(out).toContain("<table>");
  });

  it("never renders raw HTML: it is shown as text", () => {
    const out = html('Hi <script>alert(1)</script> <img src=x onerror="alert(2)"> <b>b</b>');
    expect(out).not.toMatch(/<script|<img|<b>/);
    expect(out).toContain("&lt;script&gt;");
  });

  it("keeps only http(s), mailto and #fragment links; they open in a new tab without referrer", () => {
    const out = html("[ok](https://example.com/a) [mail](mailto:a@b.c) [bad](javascript:alert(1)) [data](data:text/html,x) [rel](../etc/passwd)");
    expect(out).toContain('<a href="https://example.com/a" target="_blank" rel="noopener noreferrer nofollow">ok</a>');
    expect(out).toContain('href="mailto:a@b.c"');
    expect(out).not.toMatch(/javascript:|data:text|\.\.\/etc/);
    expect(out).toContain('<span class="md-link-dropped">bad</span>');
    expect(safeUrl(" JAVASCRIPT:alert(1)")).toBeUndefined();
    expect(safeUrl("#notes")).toBe("#notes");
  });

  it("never loads images: an image becomes a link to its source", () => {
    const out = html("![a chart](https://tracker.example/pixel.png) ![x](javascript:alert(1))");
    expect(out).not.toContain("<img");
    expect(out).toContain('<a href="https://tracker.example/pixel.png" target="_blank" rel="noopener noreferrer nofollow" class="md-image">[image: a chart]</a>');
    expect(out).toContain('<span class="md-image">[image: x]</span>');
  });

  it("marks a message that is still streaming (the caret is CSS)", () => {
    expect(renderToStaticMarkup(<Markdown text="Hel" streaming />)).toContain('data-streaming="true"');
  });
});
