// Real-browser test of loci's web UI (scripts/browser-test.sh runs it):
// Chromium driven by playwright-core against a real `loci serve` on a copy
// of a vault (obsidian-help/en). It logs in with the token URL, searches
// with the keyboard, opens a result with j + Enter, follows a backlink,
// filters, opens a note with a callout, an image embed and math, looks at
// the graph, tags and files views, and watches the status page's progress
// bar advance while it rewrites many notes (the watcher syncs them). Every
// step saves a screenshot; any failed check, page error or CSP violation
// fails the run.
//
// Environment: LOCI_BIN (the loci binary), LOCI_VAULT_SRC (the vault to
// copy), LOCI_BROWSER_DIR (where playwright-core is installed),
// CHROMIUM (the browser), ARTIFACTS (screenshots and logs).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const require = createRequire(path.join(process.env.LOCI_BROWSER_DIR, "node_modules", "x.js"));
const { chromium } = require("playwright-core");

const bin = process.env.LOCI_BIN, src = process.env.LOCI_VAULT_SRC, art = process.env.ARTIFACTS;
const t0 = Date.now();
const failures = [];
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
function check(ok, what, detail) {
  if (ok) log("ok  ", what);
  else { log("FAIL", what, detail === undefined ? "" : JSON.stringify(detail)); failures.push(what); }
}

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); });
    s.on("error", rej);
  });
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loci-browser-"));
const vault = path.join(tmp, "vault");
fs.cpSync(src, vault, { recursive: true });
fs.rmSync(path.join(vault, ".loci"), { recursive: true, force: true });

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
let server;
try {
  // The help vault's notes embed Engelbart.jpg, which the copy lacks: draw
  // one (a real JPEG, from a canvas) into its attachments folder.
  {
    const p = await browser.newPage();
    const b64 = await p.evaluate(() => {
      const c = document.createElement("canvas");
      c.width = 240; c.height = 160;
      const g = c.getContext("2d"), gr = g.createLinearGradient(0, 0, 240, 160);
      gr.addColorStop(0, "#3558c9"); gr.addColorStop(1, "#d9822b");
      g.fillStyle = gr; g.fillRect(0, 0, 240, 160);
      g.fillStyle = "#fff"; g.font = "24px sans-serif"; g.fillText("Engelbart", 60, 90);
      return c.toDataURL("image/jpeg", 0.9).split(",")[1];
    });
    fs.mkdirSync(path.join(vault, "Attachments"), { recursive: true });
    fs.writeFileSync(path.join(vault, "Attachments", "Engelbart.jpg"), Buffer.from(b64, "base64"));
    await p.close();
  }

  const port = await freePort(), token = "browser-test-" + Date.now() + "-abcdefgh";
  const base = `http://127.0.0.1:${port}`;
  const out = fs.openSync(path.join(art, "serve.log"), "w");
  server = spawn(bin, ["serve", vault, "--addr", `127.0.0.1:${port}`, "--enable-writes"], { env: { ...process.env, LOCI_TOKEN: token }, stdio: ["ignore", out, out] });
  let up = false;
  for (let i = 0; i < 300 && !up; i++) {
    try { up = (await fetch(base + "/healthz")).ok; } catch { await new Promise((r) => setTimeout(r, 100)); }
  }
  if (!up) throw new Error("loci serve did not come up (see serve.log)");
  log("serving", vault, "at", base);

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const problems = [];
  const where = () => new URL(page.url()).pathname + new URL(page.url()).search;
  page.on("pageerror", (e) => problems.push(where() + ": page error: " + e.message));
  page.on("console", (m) => {
    if (m.type() !== "error" || /favicon\.ico$/.test((m.location() || {}).url || "")) return;
    problems.push(where() + ": " + m.text().slice(0, 160));
  });
  const shot = (name) => page.screenshot({ path: path.join(art, name + ".png"), fullPage: true });

  // 1. Log in with the token URL: a cookie, and the token leaves the address bar.
  await page.goto(`${base}/?token=${token}`);
  check(page.url() === base + "/" && (await page.locator("#q").count()) === 1, "login by token URL lands on / without the token", page.url());

  // Wait for the first full index before searching.
  const status = () => page.evaluate(() => fetch("/ui/status.json", { cache: "no-store" }).then((r) => r.json()));
  for (let i = 0; i < 600; i++) {
    const s = await status();
    if (s.notes >= 171 && !s.sync.running) break;
    await page.waitForTimeout(100);
  }

  // 2. Search with the keyboard ("/", words, Enter), open the first result
  // with j + Enter, follow a backlink, then filter by folder.
  await page.keyboard.press("/");
  await page.keyboard.type("callout");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#results li.result");
  const hits = await page.locator("#results li.result").count();
  check(hits > 0, "search 'callout' with / and Enter finds notes", hits);
  await shot("01-search");
  // The note page names its note first: ".note p.path" is "path · N lines · etag …".
  const shown = async () => ((await page.locator(".note p.path").first().textContent()) || "").split(" · ")[0];
  const first = (await page.locator("#results li.result .path").first().textContent()) || "";
  await page.keyboard.press("j");
  await Promise.all([page.waitForURL(/\/ui\/note\?/), page.keyboard.press("Enter")]);
  const opened = await shown();
  check(opened !== "" && (first === opened || first.startsWith(opened + " › ")), "j + Enter opens the first result", { first, opened });
  const back = page.locator("#backlinks a").first();
  if (await back.count()) {
    const from = (await back.textContent()) || "";
    await Promise.all([page.waitForURL((u) => u.searchParams.get("path") === from), back.click()]);
    check((await shown()) === from, "a backlink opens the linking note", { from, url: page.url() });
  } else check(false, "the first result has a backlink", page.url());
  await page.goto(`${base}/?q=link&folder=${encodeURIComponent("Linking notes and files")}`);
  const paths = await page.locator("#results li.result .path").allTextContents();
  check(paths.length > 0 && paths.every((p) => p.startsWith("Linking notes and files/")), "search filtered by folder stays in it", paths.slice(0, 3));

  // 3. A note with callouts, an image embed and math.
  const note = "Editing and formatting/Advanced formatting syntax.md";
  await page.goto(`${base}/ui/note?path=${encodeURIComponent(note)}`);
  const callouts = await page.locator(".note .callout").count();
  check(callouts > 0, "callout rendered as an element (.callout)", callouts);
  const img = page.locator('.note img[src*="Engelbart"]').first();
  let width = 0;
  if (await img.count()) {
    await img.scrollIntoViewIfNeeded();
    width = await img.evaluate((el) => el.complete ? el.naturalWidth : new Promise((r) => { el.onload = () => r(el.naturalWidth); el.onerror = () => r(0); }));
  }
  check(width > 0, "image embed loads (naturalWidth > 0)", width);
  let math = 0;
  try { await page.waitForSelector(".note .katex, .note math", { timeout: 10000 }); math = await page.locator(".note .katex, .note math").count(); } catch {}
  check(math > 0, "math rendered (.katex or <math>)", math);
  let local = 0;
  try { await page.waitForSelector("#local-graph svg a.node", { timeout: 10000 }); local = await page.locator("#local-graph svg a.node").count(); } catch {}
  check(local > 1, "local graph beside the note has nodes", local);
  await shot("02-note");

  // 4. The whole graph: nodes drawn, "showing N of M".
  await page.goto(`${base}/ui/graph`);
  let nodes = 0;
  try { await page.waitForSelector("#graph svg a.node", { timeout: 15000 }); nodes = await page.locator("#graph svg a.node").count(); } catch {}
  const countText = await page.locator("#graph-count").textContent();
  check(nodes > 50 && countText.includes(`Showing ${nodes} of `), "graph view draws nodes and says how many", { nodes, countText });
  await shot("03-graph");

  // 5. Tags and files.
  await page.goto(`${base}/ui/tags`);
  const tags = await page.locator("#tags li").count();
  check(tags > 0, "tag pane lists tags", tags);
  await shot("04-tags");
  await page.goto(`${base}/ui/files`);
  const files = await page.locator("#tree li.file").count();
  check(files >= 171, "file tree lists every note", files);
  await shot("05-files");

  // 6. Live progress: rewrite every note while the status page watches.
  await page.goto(`${base}/ui/status`);
  const watcher = await page.locator("#watcher-state").innerText();
  check(/^watching/.test(watcher), "status page shows the watcher watching", watcher);
  await page.waitForFunction(() => (document.getElementById("live-state") || {}).textContent.startsWith("Live"), null, { timeout: 10000 });
  await page.evaluate(() => {
    window.__seen = [];
    const bar = document.getElementById("sync-bar");
    new MutationObserver(() => window.__seen.push([+bar.getAttribute("data-done"), +bar.getAttribute("data-total")]))
      .observe(bar, { attributes: true, attributeFilter: ["data-done"] });
  });
  const notes = [];
  (function walk(d) {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && !e.name.startsWith(".")) walk(p);
      else if (e.isFile() && e.name.endsWith(".md")) notes.push(p);
    }
  })(vault);
  for (const f of notes) fs.appendFileSync(f, `\n\nbrowser-test edit ${Date.now()}\n`);
  log("rewrote", notes.length, "notes");
  let seen = [], advanced = false, idle = false;
  for (let i = 0; i < 300; i++) {
    seen = await page.evaluate(() => window.__seen);
    advanced = seen.some(([d, t], j) => j > 0 && d > seen[j - 1][0] && seen[j - 1][1] === t);
    if (i === 3) await shot("06-status-syncing");
    if (advanced) {
      const s = await status();
      const last = seen[seen.length - 1];
      idle = !s.sync.running && (!s.watcher || s.watcher.queue === 0) && last[0] === last[1];
      if (idle) break;
    }
    await page.waitForTimeout(100);
  }
  check(advanced && idle, "status progress bar advances during the sync, then shows it complete", { seen: seen.slice(0, 12), idle });
  const edited = await page.evaluate(() => fetch("/?q=%22browser-test%20edit%22&mode=lexical").then((r) => r.text()));
  check(/results 1–20/.test(edited), "the rewritten notes are searchable after the live sync", edited.match(/results [^<]*/));
  await page.waitForTimeout(300);
  await shot("07-status-after");

  // 7. Activity: a write made through the API appears without a reload.
  await page.goto(`${base}/ui/activity`);
  await page.waitForSelector('body[data-live="open"]', { timeout: 10000 });
  const before = await page.locator("#results li.result").count();
  const res = await fetch(`${base}/v1/ops/capture_note`, {
    method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ title: "Browser test capture", content: "captured while the activity page watched", apply: true }),
  });
  check(res.ok, "capture_note through REST", res.status);
  let after = before;
  try {
    await page.waitForFunction((n) => document.querySelectorAll("#results li.result").length > n, before, { timeout: 10000 });
    after = await page.locator("#results li.result").count();
  } catch {}
  const top = (await page.locator("#results li.result").first().textContent()) || "";
  check(after > before && top.includes("capture_note"), "activity page shows the new write live", { before, after, top: top.slice(0, 80) });
  await shot("08-activity");

  check(problems.filter((p) => /Content Security Policy|Refused to/.test(p)).length === 0, "no CSP violation", problems);
  check(problems.length === 0, "no page error", problems);
} catch (e) {
  check(false, "run", String(e && e.stack || e));
} finally {
  await browser.close();
  if (server) { server.kill("SIGTERM"); await new Promise((r) => server.once("exit", r)); }
  fs.rmSync(tmp, { recursive: true, force: true });
}
log(`${failures.length ? "FAILED" : "passed"} in ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${art}`);
process.exit(failures.length ? 1 : 0);
