#!/usr/bin/env node
// Opens a remote's text artifact in Debian's Chromium the way a user does:
// sends a chat message in the web UI of a running host, waits for the
// subagent's artifact link, opens it as a page, and prints what the browser
// shows. Without "; charset=utf-8" on the artifact response, Chromium
// decodes non-ASCII text ("Café – “quotes”") as windows-1252 (mojibake).
//
//   node tests/browser/artifact-charset.mjs http://127.0.0.1:PORT
//
// Prints one JSON line {text, characterSet, contentType}; exits non-zero
// when the UI shows no artifact link. CHROMIUM (default /usr/bin/chromium),
// E2E_TIMEOUT_MS (per wait, default 30000).
import { chromium } from "playwright-core";

const base = (process.argv[2] || "").replace(/\/+$/, "");
if (!/^https?:\/\//.test(base)) {
  console.error("usage: node tests/browser/artifact-charset.mjs http://HOST:PORT");
  process.exit(2);
}
const TIMEOUT = Number(process.env.E2E_TIMEOUT_MS || 30000);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.goto(`${base}/`, { waitUntil: "domcontentloaded" });
  await page.getByTestId("composer-input").fill("Write the café note.");
  await page.getByTestId("composer-send").click();
  const link = page.locator('a[href*="/artifacts/"]').first();
  await link.waitFor({ state: "attached" }); // a finished subagent is collapsed
  const href = await link.getAttribute("href");
  const res = await page.goto(new URL(href, base).toString(), { waitUntil: "load" });
  const out = await page.evaluate(() => ({ text: document.body.innerText, characterSet: document.characterSet }));
  out.contentType = res.headers()["content-type"] ?? "";
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (e) {
  console.error(String(e?.stack ?? e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
