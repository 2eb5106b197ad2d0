#!/usr/bin/env node
// Browser end-to-end test of the streaming-chat web UI
// (examples/streaming-chat-copilotkit), driven by playwright-core in Debian's
// chromium against a host that is already running:
//
//   node tests/browser/e2e.mjs http://127.0.0.1:8080 [--expect-delegation] [--flows basic,stop,reload]
//
// It starts no server. Flows, each in a fresh browser context:
//   basic  - send a message; the nested subagent panel shows streaming text
//            BEFORE its tool card has a result, then the final state: finished
//            badge, result summary, a working artifact link, the parent's
//            final text.
//   stop   - start a run, press Stop, the run (and its card) show cancelled.
//   reload - reload mid-delegation: the transcript is still there at once,
//            the stream resumes, and it ends with the finished state exactly
//            once (same text as an uninterrupted run: nothing lost or doubled).
//
// The delegation assertions are data-driven: they apply to every
// delegate_to_* tool card the host streams. With --expect-delegation (or
// E2E_EXPECT_DELEGATION=1) a run without one fails; without it such a run
// only gets the plain-chat checks and a SKIP line.
//
// Environment: SCREENSHOT_DIR (default tests/browser/out), CHROMIUM (default
// /usr/bin/chromium), E2E_TIMEOUT_MS (per wait, default 30000),
// E2E_MESSAGE (the chat message).
// Exit code 0 when every flow passed; the last line is "N passed, N failed".

import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const base = args.find((a) => !a.startsWith("--"));
if (!base || !/^https?:\/\//.test(base)) {
  console.error("usage: node tests/browser/e2e.mjs http://HOST:PORT [--expect-delegation] [--flows basic,stop,reload]");
  process.exit(2);
}
const flag = (name) => args.includes(`--${name}`);
const flowsArg = (() => {
  const i = args.findIndex((a) => a === "--flows" || a.startsWith("--flows="));
  if (i < 0) return "basic,stop,reload";
  return args[i].includes("=") ? args[i].split("=")[1] : args[i + 1];
})();
const FLOWS = flowsArg.split(",").map((s) => s.trim()).filter(Boolean);
const EXPECT_DELEGATION = flag("expect-delegation") || process.env.E2E_EXPECT_DELEGATION === "1";
const SHOTS = resolve(process.env.SCREENSHOT_DIR || resolve(here, "out"));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TIMEOUT = Number(process.env.E2E_TIMEOUT_MS || 30000);
const MESSAGE = process.env.E2E_MESSAGE || "Find the current A2A Go SDK streaming API shape.";
const root = base.replace(/\/+$/, "");

mkdirSync(SHOTS, { recursive: true });

class Failure extends Error {}
function check(cond, msg) {
  if (!cond) throw new Failure(msg);
}
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

async function newPage(browser, name) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const errors = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console.error: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const u = r.url();
    // The stream that a reload or Stop tears down is expected to abort.
    if (!u.startsWith(root) || /\/agui(\/|$)/.test(new URL(u).pathname)) return;
    errors.push(`request failed: ${u} ${r.failure()?.errorText ?? ""}`);
  });
  page.on("request", (r) => {
    if (!r.url().startsWith(root) && !r.url().startsWith("data:")) errors.push(`off-origin request: ${r.url()}`);
  });
  await page.addInitScript(installRecorder);
  return { context, page, errors, name };
}

async function shot(page, file) {
  const path = resolve(SHOTS, file);
  await page.screenshot({ path, fullPage: true });
  log(`screenshot ${path}`);
}

async function open(page) {
  await page.goto(`${root}/`, { waitUntil: "domcontentloaded" });
  await page.getByTestId("composer-input").waitFor();
}

async function send(page, text) {
  await page.getByTestId("composer-input").fill(text);
  await page.getByTestId("composer-send").click();
  await page.getByTestId("user-message").last().waitFor();
}

/** Waits until the newest run is no longer running; returns its status. */
async function waitRunEnd(page) {
  await page.waitForFunction(
    () => {
      const runs = document.querySelectorAll('[data-testid="run"]');
      const last = runs[runs.length - 1];
      return last && last.getAttribute("data-status") !== "running";
    },
    null,
    { timeout: TIMEOUT * 2 },
  );
  return page.evaluate(() => {
    const runs = document.querySelectorAll('[data-testid="run"]');
    return runs[runs.length - 1].getAttribute("data-status");
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
 * Answers every input_required subagent that shows up until the run ends
 * (data-driven: the embedded demo never asks). Resolves to the answers sent.
 */
function answerInputs(page) {
  let sent = 0;
  let stop = false;
  const loop = (async () => {
    while (!stop) {
      const box = page.locator('[data-testid="subagent-input"]:not([disabled])').first();
      if (await box.count().catch(() => 0)) {
        await box.fill("Use the latest release.").catch(() => undefined);
        await page.getByTestId("subagent-input-send").first().click().catch(() => undefined);
        sent++;
      }
      await page.waitForTimeout(100).catch(() => undefined);
    }
    return sent;
  })();
  return { done: () => ((stop = true), loop) };
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
      index: kids.findIndex((k) => k.contains(c)),
      result: c.querySelector('[data-testid="tool-result"]') ? true : false,
      summary: c.querySelector('[data-testid="tool-result-summary"]')?.textContent || "",
      resultArtifacts: c.querySelectorAll('[data-testid="tool-result"] [data-testid="artifact-link"]').length,
      panels: [...c.querySelectorAll('[data-testid="subagent-panel"]')].map((p) => ({
        id: p.getAttribute("data-delegation-id") || "",
        phase: p.getAttribute("data-phase") || "",
        badge: p.querySelector('[data-testid="subagent-badge"]')?.textContent || "",
        name: p.querySelector('[data-testid="subagent-name"]')?.textContent || "",
        text: p.querySelector('[data-testid="subagent-text"]')?.textContent || "",
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

async function timeline(page) {
  return page.evaluate(() => window.__e2e.timeline.map((e) => ({ t: e.t, cards: e.cards })));
}

function streamedBeforeResult(tl) {
  return tl.some((e) => e.cards.some((c) => isDelegationTool(c.tool) && !c.hasResult && c.panels.some((p) => p.textLen > 0)));
}

// ---- flows -------------------------------------------------------------------

const reference = {}; // what an uninterrupted run shows (compared by the reload flow)

async function basicFlow(browser) {
  const { context, page, errors } = await newPage(browser, "basic");
  try {
    await open(page);
    await shot(page, "00-empty.png");
    await send(page, MESSAGE);
    const answers = answerInputs(page);
    const first = await waitMidOrEnd(page);
    if (first === "mid") await shot(page, "01-subagent-streaming.png");
    const status = await waitRunEnd(page);
    const answered = await answers.done();
    if (answered > 0) log(`answered ${answered} input_required subagent(s)`);
    await shot(page, "02-final.png");
    const r = await readRun(page);
    check(status === "finished", `run ended ${status}, want finished`);
    check(/finished/i.test(r.badge), `run badge says "${r.badge}"`);
    check(r.texts.some((t) => t.text.trim()), "no assistant text");
    const delegating = r.cards.some((c) => isDelegationTool(c.tool));
    if (delegating || EXPECT_DELEGATION) {
      check(delegating, "the host streamed no delegate_to_* tool call (run with a host that delegates, or drop --expect-delegation)");
      const tl = await timeline(page);
      check(streamedBeforeResult(tl), "the subagent panel never showed text before its tool result arrived");
      log(`subagent text was visible before the tool result (${tl.length} rendered states recorded)`);
      await assertFinishedDelegations(page, r);
    } else {
      log("SKIP delegation assertions: the host streamed no delegate_to_* tool call");
    }
    const resume = await page.evaluate(() => sessionStorage.getItem("agentadaptor.resume.v1"));
    check(resume === null, "the resume cursor is still stored after the run finished");
    reference.cards = r.cards.map((c) => ({ tool: c.tool, panels: c.panels.map((p) => p.text) }));
    reference.texts = r.texts.map((t) => t.text);
    check(errors.length === 0, errors.join("; "));
  } finally {
    await context.close();
  }
}

async function stopFlow(browser) {
  const { context, page, errors } = await newPage(browser, "stop");
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
  const { context, page, errors } = await newPage(browser, "reload");
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

// ---- main --------------------------------------------------------------------

const all = { basic: basicFlow, stop: stopFlow, reload: reloadFlow };
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
console.log(`e2e: ${root} (flows: ${FLOWS.join(", ")}; expect delegation: ${EXPECT_DELEGATION}; screenshots: ${SHOTS})`);
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
      failed++;
      console.log(`not ok - ${name}: ${err instanceof Failure ? err.message : err?.stack || err}`);
    }
  }
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
