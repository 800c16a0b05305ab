#!/usr/bin/env bash
# End-to-end test of the web UI in headless Chromium (not run in CI: it
# downloads playwright-core from npm). It builds loci, serves a copy of the
# demo vault, opens the login URL `loci serve` prints, searches with the
# keyboard ("/" then Enter), opens a result with j + Enter, follows a
# backlink, checks the status page and saves screenshots.
#
# Needs: go, node, npm and Debian's chromium (apt-get install -y chromium).
# Usage: scripts/e2e-web.sh [OUTDIR]   (default /tmp/loci-e2e)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/loci-e2e}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/loci" ./cmd/loci
cp -r demo/vault "$work/vault"
rm -rf "$work/vault/.loci"
LOCI_TOKEN=e2e-token-$RANDOM$RANDOM$RANDOM "$work/loci" serve "$work/vault" --addr 127.0.0.1:0 --log-level warn >"$work/banner" 2>"$work/stderr" &
pid=$!
url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^  web UI   //p' "$work/banner")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "loci serve did not start"; cat "$work/stderr"; exit 1; }

mkdir -p "$work/node"
(cd "$work/node" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund playwright-core@1 >/dev/null)
cat >"$work/node/e2e.js" <<'JS'
const { chromium } = require('playwright-core');
const [url, out, exe] = process.argv.slice(2);
(async () => {
  const browser = await chromium.launch({
    executablePath: exe,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage();
  const step = (m) => console.log('ok   ' + m);
  try {
    await page.goto(url);
    if (page.url().includes('token=')) throw new Error('token still in the address bar: ' + page.url());
    step('logged in from the printed URL; redirected to ' + new URL(page.url()).pathname);
    await page.keyboard.press('/');
    await page.keyboard.type('zettelkasten');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#results li.result');
    const n = await page.locator('#results li.result').count();
    step(`search "zettelkasten": ${n} results`);
    await page.keyboard.press('j');
    await Promise.all([page.waitForURL(/\/ui\/note\?/), page.keyboard.press('Enter')]);
    const title = await page.locator('.note h1').first().innerText();
    step('opened the first result with j + Enter: ' + title);
    await page.screenshot({ path: out + '/note.png', fullPage: true });
    const back = page.locator('#backlinks a').first();
    const backName = await back.innerText();
    await Promise.all([page.waitForURL(/\/ui\/note\?/), back.click()]);
    const title2 = await page.locator('.note h1').first().innerText();
    if (!page.url().includes(encodeURIComponent(backName.split('/')[0]))) throw new Error('backlink went to ' + page.url());
    step(`followed the backlink ${backName}: ${title2}`);
    await page.screenshot({ path: out + '/e2e-web.png', fullPage: true });
    await page.goto(new URL('/ui/status', page.url()).href);
    const w = await page.locator('#watcher-state').innerText();
    if (!/^watching/.test(w)) throw new Error('watcher: ' + w);
    step('status page: watcher ' + w);
    await page.screenshot({ path: out + '/status.png', fullPage: true });
    console.log('PASS  screenshots in ' + out);
  } catch (e) {
    await page.screenshot({ path: out + '/failure.png', fullPage: true }).catch(() => {});
    console.error('FAIL  ' + e.message);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
})();
JS
node "$work/node/e2e.js" "$url" "$OUT" "$CHROMIUM"
