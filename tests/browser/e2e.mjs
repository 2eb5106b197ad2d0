#!/usr/bin/env node
// Browser end-to-end test of the streaming-chat web UI
// (examples/streaming-chat-copilotkit), driven by playwright-core in Debian's
// chromium against hosts that are already running:
//
//   node tests/browser/e2e.mjs http://127.0.0.1:8080 [--expect-delegation]
//        [--ask-url http://127.0.0.1:8081] [--flows basic,followup,...]
//
// It starts no server. Flows, each in a fresh browser context (1280x700
// unless said otherwise):
//   basic    - send a message; the nested subagent panel shows streaming
//              text BEFORE its tool card has a result, then the final state:
//              finished badge, result summary, a working artifact link, the
//              parent's final text, which is in view without any scrolling
//              by the test (the transcript follows the stream), and so is
//              the user's message above it (the whole exchange); a text
//              artifact opens in the app's viewer, markdown rendered, with
//              a download link.
//   followup - a second message in the same thread is answered too: its
//              objective and answers are about the new words, the request
//              carries the same thread id and the whole conversation.
//   newchat  - New chat empties the transcript and starts a new thread: the
//              next request has a new thread id and no history, and a reload
//              does not bring the old conversation back.
//   stop     - start a run, press Stop, the run (and its card) show cancelled.
//   reload   - reload mid-delegation: the transcript is still there at once,
//              the stream resumes, and it ends with the finished state exactly
//              once (same text as an uninterrupted run: nothing lost or doubled).
//   offline  - the stream is cut and re-attaching fails: the run shows
//              "connection lost" (not failed, no streaming caret, one
//              notice); Reconnect replays the rest from the host.
//   gone     - the host forgot the run (a restart): the re-attach gets the
//              host's 404; the run reads "ended on the host", the header
//              "Ready" (not "Connection lost"), and the next message works.
//   phone    - 390x844 and 360x740: header on one line, nothing wider than
//              the screen, the placeholder and the final answer in view (at
//              390x844 the whole exchange, and the artifact viewer).
//   input    - (needs --ask-url: a host whose remote agent asks a question)
//              the answer box comes into view by itself, the header says the
//              UI waits for the user, the question is shown once, and the
//              user's answer appears in the subagent's conversation.
//   signin   - (needs --auth-url: a host with auth.tokens, E2E_TOKEN: one of
//              its tokens, E2E_LOGIN_LINK: a fresh one-time link) / without
//              a session is an HTML sign-in page, not JSON; a wrong token is
//              refused on the page; the right one opens the app, which
//              answers a message and shows Sign out; Sign out ends the
//              session (a reload shows the sign-in page again); the login
//              link signs in once, and used again leads to the sign-in page.
//
// The delegation assertions are data-driven: they apply to every
// delegate_to_* tool card the host streams. With --expect-delegation (or
// E2E_EXPECT_DELEGATION=1) a run without one fails; without it such a run
// only gets the plain-chat checks and a SKIP line.
//
// Every wait is on a DOM state (no sleeps). Environment: SCREENSHOT_DIR
// (default tests/browser/out), CHROMIUM (default /usr/bin/chromium),
// E2E_TIMEOUT_MS (per wait, default 30000), E2E_MESSAGE (the chat message).
// Exit code 0 when every flow passed; the last line is "N passed, N failed".

import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
function option(name) {
  const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return undefined;
  return args[i].includes("=") ? args[i].slice(args[i].indexOf("=") + 1) : args[i + 1];
}
const positional = args.filter((a, i) => !a.startsWith("--") && !["--flows", "--ask-url", "--auth-url"].includes(args[i - 1]));
const base = positional[0];
if (!base || !/^https?:\/\//.test(base)) {
  console.error("usage: node tests/browser/e2e.mjs http://HOST:PORT [--expect-delegation] [--ask-url http://HOST:PORT] [--flows basic,stop,...]");
  process.exit(2);
}
const ASK = option("ask-url")?.replace(/\/+$/, "");
const AUTH = option("auth-url")?.replace(/\/+$/, "");
const ALL_FLOWS = ["basic", "followup", "newchat", "stop", "reload", "offline", "gone", "phone", "input", "signin"];
const FLOWS = (option("flows") ?? ALL_FLOWS.join(",")).split(",").map((s) => s.trim()).filter(Boolean);
const EXPECT_DELEGATION = args.includes("--expect-delegation") || process.env.E2E_EXPECT_DELEGATION === "1";
const SHOTS = resolve(process.env.SCREENSHOT_DIR || resolve(here, "out"));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TIMEOUT = Number(process.env.E2E_TIMEOUT_MS || 30000);
const MESSAGE = process.env.E2E_MESSAGE || "Find the current A2A Go SDK streaming API shape.";
const FOLLOWUP = "And how do I cancel a streaming task?";
const root = base.replace(/\/+$/, "");
const DESKTOP = { width: 1280, height: 700 };
const RESUME_KEY = "agentadaptor.resume.v2";
const TRANSCRIPT_KEY = "agentadaptor.transcript.v2";

mkdirSync(SHOTS, { recursive: true });

class Failure extends Error {}
function check(cond, msg) {
  if (!cond) throw new Failure(msg);
}
class Skip extends Error {}
function log(msg) {
  console.log(`  ${msg}`);
}

// Records what the page shows after every DOM change, so "text before the
// result" is judged on every rendered state rather than on a lucky poll.
function installRecorder() {
  window.__e2e = { timeline: [] };
  const snap = () => {
    const cards = [...document.querySelectorAll('[data-testid="tool-card"]')].map((c) => ({
      tool: c.getAttribute("data-tool-name") || "",
      status: c.getAttribute("data-status") || "",
      hasResult: !!c.querySelector('[data-testid="tool-result"]'),
      panels: [...c.querySelectorAll('[data-testid="subagent-panel"]')].map((p) => ({
        id: p.getAttribute("data-delegation-id") || "",
        phase: p.getAttribute("data-phase") || "",
        textLen: (p.querySelector('[data-testid="subagent-text"]')?.textContent || "").length,
      })),
    }));
    const s = JSON.stringify(cards);
    const tl = window.__e2e.timeline;
    if (tl.length === 0 || tl[tl.length - 1].s !== s) tl.push({ t: performance.now(), s, cards });
  };
  let queued = false;
  const start = () => {
    new MutationObserver(() => {
      if (queued) return;
      queued = true;
      queueMicrotask(() => {
        queued = false;
        snap();
      });
    }).observe(document.documentElement, { subtree: true, childList: true, characterData: true, attributes: true });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}

const isDelegationTool = (name) => /(^|__|\.)delegate_to_[A-Za-z0-9_-]+$/.test(name);

/**
 * A fresh context. allowErrors: console errors and failed /agui requests
 * are expected (the offline flow cuts the connection on purpose).
 */
async function newPage(browser, { viewport = DESKTOP, allowErrors = false, origin = root } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const errors = [];
  const posts = [];
  page.on("console", (m) => {
    if (m.type() === "error" && !allowErrors) errors.push(`console.error: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const u = r.url();
    // The stream that a reload or Stop tears down is expected to abort.
    if (!u.startsWith(origin) || /\/agui(\/|$)/.test(new URL(u).pathname)) return;
    errors.push(`request failed: ${u} ${r.failure()?.errorText ?? ""}`);
  });
  page.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith("data:")) errors.push(`off-origin request: ${u}`);
    if (r.method() === "POST" && new URL(u).pathname === "/agui") posts.push(JSON.parse(r.postData() || "{}"));
  });
  await page.addInitScript(installRecorder);
  return { context, page, errors, posts };
}

async function shot(page, file) {
  const path = resolve(SHOTS, file);
  await page.screenshot({ path });
  log(`screenshot ${path}`);
}

async function open(page, origin = root) {
  await page.goto(`${origin}/`, { waitUntil: "domcontentloaded" });
  await page.getByTestId("composer-input").waitFor();
}

async function send(page, text) {
  const before = await page.getByTestId("user-message").count();
  await page.getByTestId("composer-input").fill(text);
  await page.getByTestId("composer-send").click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="user-message"]').length > n, before);
}

/** Waits until the newest run is no longer running; returns its status. */
async function waitRunEnd(page, runs = 1) {
  await page.waitForFunction(
    (n) => {
      const all = document.querySelectorAll('[data-testid="run"]');
      const last = all[all.length - 1];
      return all.length >= n && last && last.getAttribute("data-status") !== "running";
    },
    runs,
    { timeout: TIMEOUT * 2 },
  );
  return page.evaluate(() => {
    const all = document.querySelectorAll('[data-testid="run"]');
    return all[all.length - 1].getAttribute("data-status");
  });
}

/** True when some delegation card shows subagent text and has no result yet. */
function midDelegation() {
  return [...document.querySelectorAll('[data-testid="tool-card"]')].some(
    (c) =>
      !c.querySelector('[data-testid="tool-result"]') &&
      [...c.querySelectorAll('[data-testid="subagent-text"]')].some((t) => (t.textContent || "").length > 0),
  );
}

/** Waits for mid-delegation or the end of the run, whichever comes first. */
async function waitMidOrEnd(page) {
  const mid = page.waitForFunction(midDelegation, null, { timeout: TIMEOUT * 2, polling: "raf" }).then(() => "mid");
  const end = waitRunEnd(page).then(() => "end");
  const first = await Promise.race([mid, end]);
  mid.catch(() => undefined);
  end.catch(() => undefined);
  return first;
}

/**
 * In the page: whether el is entirely inside the transcript's visible area
 * (or, for the composer, the viewport) and not covered by anything else.
 */
function inViewJs() {
  window.__inView = (el) => {
    if (!el) return false;
    const sc = document.querySelector('[data-testid="transcript-scroller"]');
    const box = sc && sc.contains(el) ? sc.getBoundingClientRect() : { top: 0, bottom: innerHeight, left: 0, right: innerWidth };
    const r = el.getBoundingClientRect();
    if (r.height === 0 || r.top < box.top - 1 || r.bottom > box.bottom + 1 || r.left < -1 || r.right > innerWidth + 1) return false;
    const hit = document.elementFromPoint(r.left + Math.min(12, r.width / 2), r.top + Math.min(12, r.height / 2));
    return !!hit && (el === hit || el.contains(hit));
  };
}

/** Waits (on the page's own scrolling: the test never scrolls) until the newest run's final text and footer are in view. */
async function waitFinalInView(page) {
  await page.evaluate(inViewJs);
  await page
    .waitForFunction(() => {
      const runs = document.querySelectorAll('[data-testid="run"]');
      const run = runs[runs.length - 1];
      const texts = run ? run.querySelectorAll('[data-testid="assistant-message"]') : [];
      return window.__inView(texts[texts.length - 1]) && window.__inView(run.querySelector('[data-testid="run-status"]'));
    }, null, { timeout: 5000 })
    .catch(() => {
      throw new Failure("the final answer or the run's end is not in view (hidden below the fold or behind the composer)");
    });
}

/**
 * Waits (the test never scrolls) until the latest exchange is in view as a
 * whole: the user's newest message (not under the top bar) down to the
 * run's end.
 */
async function waitExchangeInView(page, where) {
  await page.evaluate(inViewJs);
  await page
    .waitForFunction(() => {
      const users = document.querySelectorAll('[data-testid="user-message"]');
      const runs = document.querySelectorAll('[data-testid="run"]');
      const run = runs[runs.length - 1];
      return window.__inView(users[users.length - 1]) && run && window.__inView(run.querySelector('[data-testid="run-status"]'));
    }, null, { timeout: 5000 })
    .catch(async () => {
      const m = await page.evaluate(() => {
        const u = [...document.querySelectorAll('[data-testid="user-message"]')].at(-1)?.getBoundingClientRect();
        const sc = document.querySelector('[data-testid="transcript-scroller"]').getBoundingClientRect();
        return { userTop: u?.top, scrollerTop: sc.top };
      });
      throw new Failure(`${where}: the latest exchange is not in view as a whole (the user's message is cut at the top): ${JSON.stringify(m)}`);
    });
}

/** Opens the first visible text artifact in the app's viewer and checks it. */
async function checkArtifactViewer(page, shotName) {
  const link = page.locator('[data-testid="artifact-link"]:visible').first();
  const href = await link.getAttribute("href");
  const pagesBefore = page.context().pages().length;
  await link.click();
  const viewer = page.getByTestId("artifact-viewer");
  await viewer.waitFor();
  await page.locator('[data-testid="artifact-viewer-body"][data-state="ok"]').waitFor();
  const v = await page.evaluate(() => {
    const d = document.querySelector('[data-testid="artifact-viewer"]');
    const body = d.querySelector('[data-testid="artifact-viewer-body"]');
    const r = d.getBoundingClientRect();
    const dl = d.querySelector('[data-testid="artifact-download"]');
    return {
      open: d.open,
      headings: [...body.querySelectorAll("h1,h2,h3")].map((h) => h.textContent),
      strong: body.querySelectorAll("strong").length,
      rawMarkdown: /(^|\n)#\s|\*\*/.test(body.textContent || ""),
      download: dl?.getAttribute("download"),
      downloadHref: dl?.getAttribute("href"),
      inside: r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight,
      scripts: body.querySelectorAll("script,iframe,img").length,
    };
  });
  check(v.open && v.inside, `the artifact viewer is not open inside the window: ${JSON.stringify(v)}`);
  check(v.headings.length > 0 && v.strong > 0 && !v.rawMarkdown, `the markdown artifact is not rendered: ${JSON.stringify(v)}`);
  check(v.scripts === 0, "the artifact viewer rendered active content");
  check(v.download && v.downloadHref === href, `the viewer's download link: ${JSON.stringify(v)}`);
  check(page.context().pages().length === pagesBefore, "opening the artifact opened another tab");
  const res = await page.request.get(`${new URL(page.url()).origin}${href}`);
  check(res.ok() && /sandbox/.test(res.headers()["content-security-policy"] || ""), `the artifact route lost its sandbox CSP: ${JSON.stringify(res.headers())}`);
  await shot(page, shotName);
  await page.getByTestId("artifact-close").click();
  await viewer.waitFor({ state: "hidden" });
  log(`artifact ${href.split("/").pop()} shown in the app (markdown rendered, download link, route still sandboxed)`);
}

/** Waits until the header states the conversation's phase (idle, working, waiting, reconnecting, offline). */
async function waitState(page, state) {
  await page
    .locator(`[data-testid="agent-state"][data-state="${state}"]`)
    .waitFor({ timeout: 5000 })
    .catch(async () => {
      const got = await page.getByTestId("agent-state").getAttribute("data-state");
      throw new Failure(`the header says "${got}", want "${state}"`);
    });
}

/** The final DOM state of the newest run. */
async function readRun(page) {
  return page.evaluate(() => {
    const runs = document.querySelectorAll('[data-testid="run"]');
    const run = runs[runs.length - 1];
    const kids = [...run.children];
    const cards = [...run.querySelectorAll('[data-testid="tool-card"]')].map((c) => ({
      tool: c.getAttribute("data-tool-name") || "",
      status: c.getAttribute("data-status") || "",
      badge: c.querySelector('[data-testid="tool-badge"]')?.textContent || "",
      index: kids.findIndex((k) => k.contains(c)),
      result: c.querySelector('[data-testid="tool-result"]') ? true : false,
      summary: c.querySelector('[data-testid="tool-result-summary"]')?.textContent || "",
      resultArtifacts: c.querySelectorAll('[data-testid="tool-result"] [data-testid="artifact-link"]').length,
      panels: [...c.querySelectorAll('[data-testid="subagent-panel"]')].map((p) => ({
        id: p.getAttribute("data-delegation-id") || "",
        phase: p.getAttribute("data-phase") || "",
        expanded: p.getAttribute("data-expanded") === "true",
        badge: p.querySelector('[data-testid="subagent-badge"]')?.textContent || "",
        name: p.querySelector('[data-testid="subagent-name"]')?.textContent || "",
        text: p.querySelector('[data-testid="subagent-text"]')?.textContent || "",
        errors: p.querySelectorAll('[data-testid="subagent-error"]').length,
        artifacts: [...p.querySelectorAll('[data-testid="artifact-link"]')].map((a) => a.getAttribute("href") || ""),
      })),
    }));
    const texts = [...run.querySelectorAll('[data-testid="assistant-message"]')].map((m) => ({
      text: m.textContent || "",
      index: kids.indexOf(m),
    }));
    return {
      runId: run.getAttribute("data-run-id") || "",
      status: run.getAttribute("data-status") || "",
      badge: run.querySelector('[data-testid="run-status"]')?.textContent || "",
      runs: runs.length,
      users: document.querySelectorAll('[data-testid="user-message"]').length,
      cards,
      texts,
      unclaimed: run.querySelectorAll('[data-testid="unclaimed-delegation"]').length,
      state: document.querySelector('[data-testid="agent-state"]')?.getAttribute("data-state") || "",
    };
  });
}

/** The delegation assertions on a finished run, for every delegate_to_* card. */
async function assertFinishedDelegations(page, r) {
  const cards = r.cards.filter((c) => isDelegationTool(c.tool));
  check(cards.length > 0, "no delegate_to_* tool card");
  check(r.unclaimed === 0, `${r.unclaimed} delegation(s) still unclaimed at the end of the run`);
  for (const c of cards) {
    check(c.status === "completed", `tool card ${c.tool} is ${c.status}, want completed`);
    check(c.result, `tool card ${c.tool} has no result section`);
    check(c.summary.trim().length > 0, `tool card ${c.tool} shows no result summary`);
    check(c.panels.length > 0, `tool card ${c.tool} has no subagent panel`);
    const ids = c.panels.map((p) => p.id);
    check(new Set(ids).size === ids.length, `a delegation is shown twice: ${ids.join(", ")}`);
    for (const p of c.panels) {
      check(p.phase === "completed", `subagent ${p.id} is ${p.phase}, want completed`);
      check(/completed/i.test(p.badge), `subagent ${p.id} badge says "${p.badge}"`);
      check(p.name.trim().length > 0, `subagent ${p.id} has no agent name`);
      check(p.text.trim().length > 0, `subagent ${p.id} shows no text`);
      for (const href of p.artifacts) {
        check(
          new RegExp(`^/agui/runs/${encodeURIComponent(r.runId)}/delegations/[^/]+/artifacts/[^/]+$`).test(href),
          `artifact link ${href} is not the host's artifact route`,
        );
        const res = await page.request.get(`${root}${href}`);
        check(res.ok(), `artifact ${href}: HTTP ${res.status()}`);
      }
    }
  }
  for (const c of cards.filter((x) => x.resultArtifacts > 0)) {
    // The result lists artifacts: the subagent panel must have shown them live.
    check(c.panels.some((p) => p.artifacts.length > 0), `tool card ${c.tool}: its result lists artifacts but no subagent panel links one`);
  }
  const lastCard = Math.max(...cards.map((c) => c.index));
  const after = r.texts.filter((t) => t.index > lastCard && t.text.trim().length > 0);
  check(after.length > 0, "no parent text after the delegation (the parent did not resume)");
  log(`delegations ok: ${cards.map((c) => `${c.tool}[${c.panels.map((p) => p.id).join(",")}]`).join(" ")}`);
}

/** With a delegating host: the newest run delegated `words` and its subagent answered about them. */
function assertAbout(r, words) {
  const cards = r.cards.filter((c) => isDelegationTool(c.tool));
  if (cards.length === 0 && !EXPECT_DELEGATION) return;
  check(cards.some((c) => c.panels.some((p) => p.text.includes(words))), `no subagent answered about "${words}": ${JSON.stringify(cards.map((c) => c.panels.map((p) => p.text)))}`);
}

async function timeline(page) {
  return page.evaluate(() => window.__e2e.timeline.map((e) => ({ t: e.t, cards: e.cards })));
}

function streamedBeforeResult(tl) {
  return tl.some((e) => e.cards.some((c) => isDelegationTool(c.tool) && !c.hasResult && c.panels.some((p) => p.textLen > 0)));
}

// ---- flows -------------------------------------------------------------------

const reference = {}; // what an uninterrupted run shows (compared by the reload flow)

async function basicFlow(browser) {
  const { context, page, errors } = await newPage(browser);
  try {
    await open(page);
    await page.waitForLoadState("networkidle");
    check((await page.getByTestId("sign-out").count()) === 0, "Sign out is shown by a host without tokens");
    await shot(page, "00-empty.png");
    await send(page, MESSAGE);
    const first = await waitMidOrEnd(page);
    if (first === "mid") await shot(page, "01-subagent-streaming.png");
    const status = await waitRunEnd(page);
    check(status === "finished", `run ended ${status}, want finished`);
    await waitFinalInView(page);
    await waitExchangeInView(page, "1280x700");
    log("the whole exchange (the user's message to the run's end) is in view at 1280x700 without scrolling");
    await shot(page, "02-final.png");
    const r = await readRun(page);
    check(/finished/i.test(r.badge), `run badge says "${r.badge}"`);
    check(r.texts.some((t) => t.text.trim()), "no assistant text");
    await waitState(page, "idle");
    const delegating = r.cards.some((c) => isDelegationTool(c.tool));
    if (delegating || EXPECT_DELEGATION) {
      check(delegating, "the host streamed no delegate_to_* tool call (run with a host that delegates, or drop --expect-delegation)");
      const tl = await timeline(page);
      check(streamedBeforeResult(tl), "the subagent panel never showed text before its tool result arrived");
      log(`subagent text was visible before the tool result (${tl.length} rendered states recorded)`);
      await assertFinishedDelegations(page, r);
      assertAbout(r, MESSAGE);
      await checkArtifactViewer(page, "17-artifact-viewer.png");
      // A finished subagent is collapsed; its toggle opens it.
      const panel = page.getByTestId("subagent-panel").last();
      check((await panel.getAttribute("data-expanded")) === "false", "a completed subagent is not collapsed");
      await panel.getByTestId("subagent-toggle").click();
      await page.waitForFunction(() => {
        const ps = document.querySelectorAll('[data-testid="subagent-panel"]');
        return ps[ps.length - 1].getAttribute("data-expanded") === "true";
      });
      check(await panel.getByTestId("subagent-text").isVisible(), "the opened subagent shows no text");
      check(!(await panel.getByTestId("subagent-details").evaluate((d) => d.open)), "the remote ids are not behind a closed Details toggle");
      await shot(page, "06-subagent-open.png");
      // The whole conversation with the subagent open, for docs/screenshot-subagent.png.
      await page.setViewportSize({ width: 1280, height: 1000 });
      await page.evaluate(inViewJs);
      await page.waitForFunction(() => window.__inView(document.querySelector('[data-testid="user-message"]')) && window.__inView(document.querySelector('[data-testid="run-status"]')));
      await shot(page, "12-docs-subagent.png");
    } else {
      log("SKIP delegation assertions: the host streamed no delegate_to_* tool call");
    }
    const resume = await page.evaluate((k) => sessionStorage.getItem(k), RESUME_KEY);
    check(resume === null, "the resume cursor is still stored after the run finished");
    reference.cards = r.cards.map((c) => ({ tool: c.tool, panels: c.panels.map((p) => p.text) }));
    reference.texts = r.texts.map((t) => t.text);
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function followupFlow(browser) {
  const { context, page, errors, posts } = await newPage(browser);
  try {
    await open(page);
    await send(page, MESSAGE);
    check((await waitRunEnd(page, 1)) === "finished", "the first run did not finish");
    await send(page, FOLLOWUP);
    const status = await waitRunEnd(page, 2);
    check(status === "finished", `the second run ended ${status}, want finished`);
    await waitFinalInView(page);
    await shot(page, "07-second-message.png");
    const r = await readRun(page);
    check(r.runs === 2 && r.users === 2, `${r.runs} runs and ${r.users} user messages, want 2 and 2`);
    check(r.texts.some((t) => t.text.trim()), "the second message got no assistant text");
    assertAbout(r, FOLLOWUP);
    if (r.cards.some((c) => isDelegationTool(c.tool))) await assertFinishedDelegations(page, r);
    check(posts.length === 2, `${posts.length} POST /agui, want 2`);
    check(posts[1].threadId === posts[0].threadId, "the second message went to another thread");
    const users = posts[1].messages.filter((m) => m.role === "user").map((m) => m.content);
    check(JSON.stringify(users) === JSON.stringify([MESSAGE, FOLLOWUP]), `the second request's user messages: ${JSON.stringify(users)}`);
    log(`second message answered in thread ${posts[1].threadId}`);
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function newChatFlow(browser) {
  const { context, page, errors, posts } = await newPage(browser);
  try {
    await open(page);
    await send(page, MESSAGE);
    check((await waitRunEnd(page)) === "finished", "the run did not finish");
    await page.getByTestId("new-chat").click();
    await page.getByTestId("empty-state").waitFor();
    const saved = await page.evaluate((k) => JSON.parse(sessionStorage.getItem(k) || "null"), TRANSCRIPT_KEY);
    check(saved && saved.threadId !== posts[0].threadId && saved.state.entries.length === 0, `after New chat sessionStorage holds ${JSON.stringify(saved)?.slice(0, 200)}`);
    // A reload (pagehide flushes the store) must not bring the old conversation back.
    await page.reload({ waitUntil: "domcontentloaded" });
    await page.getByTestId("empty-state").waitFor();
    check((await page.getByTestId("user-message").count()) === 0, "the old conversation came back after a reload");
    await send(page, FOLLOWUP);
    check((await waitRunEnd(page)) === "finished", "the new chat's run did not finish");
    const r = await readRun(page);
    check(r.runs === 1 && r.users === 1, `the new chat shows ${r.runs} runs and ${r.users} user messages, want 1 and 1`);
    assertAbout(r, FOLLOWUP);
    const last = posts.at(-1);
    check(last.threadId === saved.threadId && last.threadId !== posts[0].threadId, "the new chat's request did not use the new thread id");
    check(last.messages.length === 1 && last.messages[0].content === FOLLOWUP, `the new chat's request carried history: ${JSON.stringify(last.messages).slice(0, 300)}`);
    log(`new thread ${last.threadId} without history`);
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function stopFlow(browser) {
  const { context, page, errors } = await newPage(browser);
  try {
    await open(page);
    await send(page, MESSAGE);
    await page.locator('[data-testid="run"][data-status="running"]').waitFor();
    if (EXPECT_DELEGATION) await page.getByTestId("subagent-panel").first().waitFor();
    await page.getByTestId("stop-button").click();
    const status = await waitRunEnd(page);
    await shot(page, "03-stopped.png");
    const r = await readRun(page);
    check(status === "cancelled", `run ended ${status} after Stop, want cancelled`);
    check(/cancelled/i.test(r.badge), `run badge says "${r.badge}"`);
    for (const c of r.cards.filter((x) => isDelegationTool(x.tool))) {
      // A delegation that really finished before the cancel reached it keeps
      // its structured "completed" result; anything else must read cancelled.
      const finishedFirst = c.status === "completed" && c.summary.trim().length > 0;
      check(finishedFirst || c.status === "cancelled", `tool card ${c.tool} is ${c.status} after Stop, want cancelled`);
      for (const p of c.panels) {
        check(p.phase !== "working" && p.phase !== "starting", `subagent ${p.id} is still ${p.phase} after Stop`);
        if (!finishedFirst && p.phase !== "cancelled") log(`note: subagent ${p.id} ended ${p.phase} although its run was cancelled`);
      }
      log(`tool card ${c.tool}: ${c.status}; subagents: ${c.panels.map((p) => p.phase).join(", ") || "none"}`);
    }
    check(await page.getByTestId("composer-send").isVisible(), "the composer did not come back after Stop");
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function reloadFlow(browser) {
  const { context, page, errors } = await newPage(browser);
  try {
    await open(page);
    await send(page, MESSAGE);
    let first;
    if (EXPECT_DELEGATION) {
      first = await waitMidOrEnd(page);
      check(first === "mid", "the run ended before a subagent was mid-way: nothing to reload into");
    } else {
      await page.waitForFunction(
        () => [...document.querySelectorAll('[data-testid="assistant-message"]')].some((m) => (m.textContent || "").length > 0) ||
          document.querySelector('[data-testid="run"]:not([data-status="running"])'),
      );
      first = await page.evaluate(() => (document.querySelector('[data-testid="run"]:not([data-status="running"])') ? "end" : "mid"));
    }
    const before = await readRun(page);
    await page.reload({ waitUntil: "domcontentloaded" });
    await page.getByTestId("user-message").first().waitFor();
    const restored = await readRun(page);
    await shot(page, "04-after-reload.png");
    check(restored.users === 1, `the reloaded page shows ${restored.users} user messages, want 1`);
    check(restored.runId === before.runId, `the reloaded page shows run ${restored.runId}, want ${before.runId}`);
    if (first === "mid" && before.cards.length > 0) {
      check(restored.cards.length >= 1, "the reloaded page lost the tool card");
    }
    const status = await waitRunEnd(page);
    await shot(page, "05-resumed-final.png");
    const r = await readRun(page);
    check(r.runs === 1 && r.users === 1, `after resume: ${r.runs} runs and ${r.users} user messages, want 1 and 1`);
    if (EXPECT_DELEGATION) {
      check(status === "finished", `the resumed run ended ${status}, want finished`);
      await assertFinishedDelegations(page, r);
      const finished = r.cards.flatMap((c) => c.panels).filter((p) => p.phase === "completed");
      check(new Set(finished.map((p) => p.id)).size === finished.length, "a finished subagent is shown more than once");
      if (reference.cards) {
        const got = r.cards.map((c) => ({ tool: c.tool, panels: c.panels.map((p) => p.text) }));
        check(JSON.stringify(got) === JSON.stringify(reference.cards), `subagent text after resume differs from an uninterrupted run:\n${JSON.stringify(got)}\n${JSON.stringify(reference.cards)}`);
        check(JSON.stringify(r.texts.map((t) => t.text)) === JSON.stringify(reference.texts), "parent text after resume differs from an uninterrupted run");
      }
    } else {
      check(["finished", "interrupted", "error", "cancelled"].includes(status), `unexpected end state ${status}`);
      log(`resume: the run ended "${status}" (a host with the replay endpoint continues it to "finished")`);
    }
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

/**
 * The host's real stream is cut after its first subagent text (the rest of
 * the POST response is dropped) and every re-attach fails: the run must read
 * "connection lost", distinct from a failure. Then the routes are restored
 * and Reconnect replays the rest from the host's buffer.
 */
async function offlineFlow(browser) {
  const { context, page, errors } = await newPage(browser, { allowErrors: true });
  try {
    let cut = 0;
    await page.route(`${root}/agui`, async (route) => {
      if (route.request().method() !== "POST") return route.fallback();
      const res = await route.fetch();
      const frames = (await res.text()).split("\n\n");
      // Cut after the first subagent text (or, with a host that does not
      // delegate, the first parent text).
      let n = frames.findIndex((f) => f.includes('"subagent.text.delta"'));
      if (n < 0) n = frames.findIndex((f) => f.includes('"TEXT_MESSAGE_CONTENT"'));
      n = n < 0 ? 2 : n + 1;
      cut = n;
      await route.fulfill({ status: 200, headers: { "Content-Type": "text/event-stream" }, body: frames.slice(0, n).join("\n\n") + "\n\n" });
    });
    let refused = 0;
    await page.route(`${root}/agui/runs/*/events*`, (route) => {
      refused++;
      return route.abort("connectionrefused");
    });
    await open(page);
    await send(page, MESSAGE);
    await page.locator('[data-testid="run"][data-status="interrupted"]').waitFor({ timeout: TIMEOUT * 2 });
    await page.getByTestId("connection-lost").waitFor();
    await shot(page, "08-connection-lost.png");
    const r = await readRun(page);
    check(refused >= 1, "the UI never tried to re-attach");
    await waitState(page, "offline");
    check(/connection lost/i.test(r.badge), `the run's badge says "${r.badge}", want connection lost`);
    const shown = await page.evaluate(() => ({
      failed: document.querySelectorAll('[data-status="failed"], [data-phase="failed"], [data-status="error"]').length,
      carets: document.querySelectorAll("[data-streaming]").length,
      notices: document.querySelectorAll('[data-testid="connection-lost"], [data-testid="request-error"], [data-testid="run-notice"]').length,
    }));
    check(shown.failed === 0, `a lost connection is shown as failed (${shown.failed} failed badges)`);
    check(shown.carets === 0, "a streaming caret is still on after the connection was lost");
    check(shown.notices === 1, `the lost connection is reported ${shown.notices} times, want once`);
    log(`stream cut after ${cut} frames, ${refused} re-attach(es) refused: "connection lost", no failure, no caret`);
    // The host is reachable again: Reconnect resumes from the cursor.
    await page.unroute(`${root}/agui/runs/*/events*`);
    await page.getByTestId("reconnect").click();
    const status = await waitRunEnd(page);
    check(status === "finished", `after Reconnect the run ended ${status}, want finished`);
    await waitFinalInView(page);
    await waitState(page, "idle");
    const after = await readRun(page);
    if (EXPECT_DELEGATION) await assertFinishedDelegations(page, after);
    log("Reconnect replayed the rest of the run");
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

/**
 * The host forgot the run (it restarted): the stream is cut after the first
 * subagent text and the re-attach reaches the host's real answer for a run
 * it does not know (404). The UI must say so — the run ended on the host,
 * outcome unknown — with the header "Ready", not "Connection lost", no
 * Reconnect, and the next message must be answered.
 */
async function goneFlow(browser) {
  const { context, page, errors } = await newPage(browser, { allowErrors: true });
  try {
    await page.route(`${root}/agui`, async (route) => {
      if (route.request().method() !== "POST") return route.fallback();
      const res = await route.fetch();
      const frames = (await res.text()).split("\n\n");
      let n = frames.findIndex((f) => f.includes('"subagent.text.delta"'));
      if (n < 0) n = frames.findIndex((f) => f.includes('"TEXT_MESSAGE_CONTENT"'));
      n = n < 0 ? 2 : n + 1;
      await route.fulfill({ status: 200, headers: { "Content-Type": "text/event-stream" }, body: frames.slice(0, n).join("\n\n") + "\n\n" });
    });
    let asked = 0;
    await page.route(`${root}/agui/runs/*/events*`, (route) => {
      asked++;
      // What a restarted host answers: it never heard of this run.
      return route.continue({ url: `${root}/agui/runs/run-the-host-forgot-${Date.now()}/events` });
    });
    await open(page);
    await send(page, MESSAGE);
    await page.getByTestId("run-gone").waitFor({ timeout: TIMEOUT * 2 });
    check(asked >= 1, "the UI never asked the host for the run again");
    await waitState(page, "idle");
    const shown = await page.evaluate(() => ({
      header: document.querySelector('[data-testid="agent-state"]')?.textContent || "",
      lost: document.querySelectorAll('[data-testid="connection-lost"]').length,
      reconnect: document.querySelectorAll('[data-testid="reconnect"]').length,
      footer: document.querySelector('[data-testid="run-gone"]')?.textContent || "",
      carets: document.querySelectorAll("[data-streaming]").length,
    }));
    check(!/connection lost|offline/i.test(shown.header), `the header says "${shown.header}" for a run the host no longer knows`);
    check(shown.lost === 0 && shown.reconnect === 0, `a run the host no longer knows reads as a lost connection: ${JSON.stringify(shown)}`);
    check(/no longer knows this run/i.test(shown.footer) && /outcome is unknown/i.test(shown.footer), `the run's footer says: ${shown.footer}`);
    check(shown.carets === 0, "a streaming caret is still on");
    await shot(page, "19-run-gone.png");
    await page.unroute(`${root}/agui`);
    await page.unroute(`${root}/agui/runs/*/events*`);
    await send(page, FOLLOWUP);
    check((await waitRunEnd(page, 2)) === "finished", "the next message after a forgotten run was not answered");
    log(`after ${asked} re-attach(es) answered 404: "Ready", the run ended on the host (outcome unknown), the next message answered`);
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function phoneFlow(browser) {
  for (const viewport of [
    { width: 390, height: 844 },
    { width: 360, height: 740 },
  ]) {
    const { context, page, errors } = await newPage(browser, { viewport });
    try {
      await open(page);
      const layout = () =>
        page.evaluate(() => {
          const bar = document.querySelector(".topbar").getBoundingClientRect();
          const h1 = document.querySelector(".brand h1");
          const parts = [".brand", '[data-testid="agent-state"]', '[data-testid="new-chat"]'].map((s) => document.querySelector(s).getBoundingClientRect());
          const ta = document.querySelector('[data-testid="composer-input"]');
          return {
            width: document.documentElement.scrollWidth,
            scrollerWidth: document.querySelector('[data-testid="transcript-scroller"]').scrollWidth,
            barHeight: bar.height,
            titleClipped: h1.scrollWidth > h1.clientWidth,
            overlap: parts.some((r, j) => j > 0 && r.left < parts[j - 1].right - 1),
            oneLine: parts.every((r) => Math.abs(r.top + r.height / 2 - (bar.top + bar.height / 2)) < 8),
            placeholderFits: (() => {
              const cs = getComputedStyle(ta);
              const ctx = document.createElement("canvas").getContext("2d");
              ctx.font = cs.font;
              const room = ta.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
              return ctx.measureText(ta.placeholder).width <= room && ta.clientHeight < 48;
            })(),
          };
        });
      const check360 = (l, when) => {
        check(l.width <= viewport.width, `${when}: the page is ${l.width}px wide at ${viewport.width}px`);
        check(l.scrollerWidth <= viewport.width, `${when}: the transcript is ${l.scrollerWidth}px wide at ${viewport.width}px`);
        check(l.oneLine && !l.overlap && !l.titleClipped && l.barHeight < 60, `${when}: the header does not fit one line: ${JSON.stringify(l)}`);
        check(l.placeholderFits, `${when}: the composer's placeholder is clipped`);
      };
      check360(await layout(), "empty");
      await send(page, MESSAGE);
      await page.getByTestId("stop-button").waitFor();
      check360(await layout(), "while the agent works");
      check((await waitRunEnd(page)) === "finished", "the run did not finish");
      await waitFinalInView(page);
      check360(await layout(), "after a run");
      if (viewport.height >= 844) await waitExchangeInView(page, `${viewport.width}x${viewport.height}`);
      await shot(page, `09-phone-${viewport.width}.png`);
      if (viewport.height >= 844 && EXPECT_DELEGATION) await checkArtifactViewer(page, "18-artifact-viewer-390.png");
      log(`${viewport.width}x${viewport.height}: header on one line, nothing wider than the screen, final answer${viewport.height >= 844 ? " and the whole exchange" : ""} in view`);
      check(errors.length === 0, errors.join("; "));
    } finally {
      await context.close();
    }
  }
}

async function inputFlow(browser) {
  if (!ASK) throw new Skip("needs --ask-url (a host whose remote agent asks for input)");
  const { context, page, errors } = await newPage(browser, { origin: ASK });
  const ANSWER = "their sleeping positions";
  try {
    await open(page, ASK);
    await send(page, "How do penguins sleep?");
    await page.evaluate(inViewJs);
    // The answer box comes into view by itself, with the focus.
    await page.getByTestId("subagent-input").waitFor({ timeout: TIMEOUT * 2 });
    await page
      .waitForFunction(() => window.__inView(document.querySelector('[data-testid="subagent-input"]')), null, { timeout: 5000 })
      .catch(() => {
        throw new Failure("the answer box of the waiting subagent is not in view");
      });
    await page.waitForFunction(() => document.activeElement?.getAttribute("data-testid") === "subagent-input");
    await shot(page, "10-input-required.png");
    const asking = await page.evaluate(() => {
      const panel = document.querySelector('[data-testid="subagent-panel"][data-phase="input_required"]');
      const q = panel?.querySelector('[data-testid="subagent-question"]')?.textContent?.replace(/^Question/, "").trim() || "";
      const all = document.querySelector('[data-testid="transcript-scroller"]').textContent || "";
      return {
        question: q,
        occurrences: q ? all.split(q).length - 1 : 0,
        state: document.querySelector('[data-testid="agent-state"]')?.getAttribute("data-state"),
        banner: !!document.querySelector('[data-testid="waiting-banner"]'),
        placeholder: document.querySelector('[data-testid="composer-input"]')?.getAttribute("placeholder"),
      };
    });
    check(asking.question.length > 0, "the waiting subagent shows no question");
    check(asking.occurrences === 1, `the question is shown ${asking.occurrences} times, want once`);
    await waitState(page, "waiting");
    check(asking.banner && !/working/i.test(asking.placeholder || ""), `the composer does not point to the question: ${JSON.stringify(asking)}`);
    log(`question "${asking.question}" shown once, in view and focused; header: waiting`);
    await page.getByTestId("subagent-input").fill(ANSWER);
    await page.getByTestId("subagent-input-send").click();
    await page.getByTestId("subagent-answer").filter({ hasText: ANSWER }).waitFor({ state: "attached" });
    const status = await waitRunEnd(page);
    check(status === "finished", `the run ended ${status} after the answer, want finished`);
    await waitFinalInView(page);
    const r = await readRun(page);
    const panel = r.cards.flatMap((c) => c.panels)[0];
    check(panel && panel.phase === "completed", `the subagent ended ${panel?.phase}`);
    check(panel.text.includes(`Your answer${ANSWER}`) || panel.text.includes(ANSWER), "the user's answer is not in the subagent's conversation");
    // Open the finished subagent to show the conversation with the answer.
    await page.getByTestId("subagent-toggle").click();
    await page.getByTestId("subagent-answer").waitFor();
    await shot(page, "11-input-answered.png");
    log(`the answer "${ANSWER}" is in the conversation; the run finished`);
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function signinFlow(browser) {
  if (!AUTH) throw new Skip("needs --auth-url (a host with auth.tokens), E2E_TOKEN and E2E_LOGIN_LINK");
  const TOKEN = process.env.E2E_TOKEN;
  const LINK = process.env.E2E_LOGIN_LINK;
  check(TOKEN && LINK, "--auth-url needs E2E_TOKEN and E2E_LOGIN_LINK");
  const signInShown = async (page, why) => {
    const form = page.getByTestId("signin-form");
    await form.waitFor({ timeout: 5000 }).catch(() => {
      throw new Failure(`${why}: no sign-in page`);
    });
    const shown = await page.evaluate(() => ({
      text: document.body.innerText,
      type: document.querySelector('input[name="token"]')?.getAttribute("type"),
      app: !!document.querySelector('[data-testid="composer-input"]'),
    }));
    check(shown.type === "password" && !shown.app, `${why}: the sign-in page has no token field: ${JSON.stringify(shown)}`);
    check(!/^\s*[{[]/.test(shown.text) && !shown.text.includes('"error"') && !shown.text.includes("\\u003c"), `${why}: the page shows raw JSON: ${shown.text.slice(0, 200)}`);
    return shown.text;
  };
  // Sign in with the token on the page; use the app; sign out.
  {
    const { context, page, errors } = await newPage(browser, { origin: AUTH });
    try {
      await page.goto(`${AUTH}/`, { waitUntil: "domcontentloaded" });
      await signInShown(page, "/ without a session");
      await shot(page, "13-signin.png");
      await page.locator('input[name="token"]').fill("not-the-token-0123456789");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByTestId("signin-error").waitFor();
      check(/not valid/i.test(await page.getByTestId("signin-error").innerText()), "a wrong token: no error on the page");
      await page.locator('input[name="token"]').fill(TOKEN);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByTestId("composer-input").waitFor();
      check(new URL(page.url()).pathname === "/", `after signing in the browser is at ${page.url()}`);
      const cookies = await context.cookies(AUTH);
      const c = cookies.find((x) => x.name === "agentadaptor_session");
      check(c && c.httpOnly && c.sameSite === "Strict", `session cookie ${JSON.stringify(cookies)}`);
      await page.getByTestId("sign-out").waitFor();
      await send(page, MESSAGE);
      check((await waitRunEnd(page)) === "finished", "the signed-in run did not finish");
      await waitFinalInView(page);
      await shot(page, "14-signed-in.png");
      await page.getByTestId("sign-out").click();
      await signInShown(page, "after Sign out");
      check(!(await context.cookies(AUTH)).some((x) => x.name === "agentadaptor_session"), "Sign out left the session cookie");
      const stored = await page.evaluate(() => sessionStorage.length);
      check(stored === 0, `Sign out left ${stored} items of the conversation in sessionStorage`);
      // The revoked session, replayed, is refused by the host.
      const replay = await page.request.get(`${AUTH}/session`, { headers: { Cookie: `${c.name}=${c.value}` } });
      check(replay.status() === 401, `the revoked session cookie replayed: HTTP ${replay.status()}`);
      await page.reload({ waitUntil: "domcontentloaded" });
      await signInShown(page, "a reload after Sign out");
      log("sign-in page -> wrong token refused -> token accepted -> run finished -> Sign out -> sign-in page");
      check(errors.filter((e) => !/401/.test(e)).length === 0, errors.join("; "));
    } finally {
      await context.close();
    }
  }
  // The one-time link signs in once; used again it leads to the sign-in page.
  {
    const { context, page } = await newPage(browser, { origin: AUTH });
    try {
      await page.goto(LINK, { waitUntil: "domcontentloaded" });
      await page.getByTestId("composer-input").waitFor();
      await page.getByTestId("sign-out").waitFor();
      check(new URL(page.url()).pathname === "/", `the login link left the browser at ${page.url()}`);
    } finally {
      await context.close();
    }
    const again = await newPage(browser, { origin: AUTH });
    try {
      await again.page.goto(LINK, { waitUntil: "domcontentloaded" });
      const text = await signInShown(again.page, "a used login link");
      check(/already used or has expired/i.test(text) && !/restart/i.test(text), `a used login link says: ${text.slice(0, 300)}`);
      await again.page.setViewportSize({ width: 390, height: 844 });
      await shot(again.page, "15-signin-link-used-390.png");
      await again.page.locator('input[name="token"]').fill(TOKEN);
      await again.page.getByRole("button", { name: "Sign in" }).click();
      await again.page.getByTestId("composer-input").waitFor();
      await again.page.getByTestId("sign-out").waitFor();
      for (const width of [390, 360]) {
        await again.page.setViewportSize({ width, height: 844 });
        const l = await again.page.evaluate(() => {
          const bar = document.querySelector(".topbar").getBoundingClientRect();
          const h1 = document.querySelector(".brand h1");
          const parts = [".brand", '[data-testid="agent-state"]', '[data-testid="new-chat"]', '[data-testid="sign-out"]'].map((s) => document.querySelector(s).getBoundingClientRect());
          return {
            width: document.documentElement.scrollWidth,
            titleClipped: h1.scrollWidth > h1.clientWidth,
            overlap: parts.some((r, j) => j > 0 && r.left < parts[j - 1].right - 1),
            oneLine: parts.every((r) => Math.abs(r.top + r.height / 2 - (bar.top + bar.height / 2)) < 8),
          };
        });
        check(l.width <= width && l.oneLine && !l.overlap && !l.titleClipped, `at ${width} px the header with Sign out does not fit: ${JSON.stringify(l)}`);
      }
      await again.page.setViewportSize({ width: 390, height: 844 });
      await shot(again.page, "16-signed-in-390.png");
      log("the login link signed in once; used again it showed the sign-in page, whose token form signed in");
    } finally {
      await again.context.close();
    }
  }
}

// ---- main --------------------------------------------------------------------

const all = {
  basic: basicFlow,
  followup: followupFlow,
  newchat: newChatFlow,
  stop: stopFlow,
  reload: reloadFlow,
  offline: offlineFlow,
  gone: goneFlow,
  phone: phoneFlow,
  input: inputFlow,
  signin: signinFlow,
};
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
let passed = 0;
let failed = 0;
console.log(`e2e: ${root} (flows: ${FLOWS.join(", ")}; expect delegation: ${EXPECT_DELEGATION}; ask host: ${ASK ?? "none"}; auth host: ${AUTH ?? "none"}; screenshots: ${SHOTS})`);
try {
  for (const name of FLOWS) {
    const fn = all[name];
    if (!fn) {
      console.log(`not ok - ${name}: unknown flow`);
      failed++;
      continue;
    }
    const t0 = Date.now();
    try {
      await fn(browser);
      passed++;
      console.log(`ok - ${name} (${Date.now() - t0} ms)`);
    } catch (err) {
      if (err instanceof Skip) {
        console.log(`ok - ${name} # SKIP ${err.message}`);
        passed++;
        continue;
      }
      failed++;
      console.log(`not ok - ${name}: ${err instanceof Failure ? err.message : err?.stack || err}`);
    }
  }
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
