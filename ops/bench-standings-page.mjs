// ops/bench-standings-page.mjs - how long headless Chromium takes to show a league page with
// all its standings rows: from navigation until #standings holds ROWS rows, RUNS times, each
// in a fresh page. Used by ops/bench-standings; needs tests/browser's playwright-core.
//   node ops/bench-standings-page.mjs BASE_URL LEAGUE_ID ROWS [RUNS]
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '../tests/browser/'));
const { chromium } = require('playwright-core');
const [base, league, rows, runs = '10'] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), 'cardpost-bench-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const times = [];
try {
  for (let i = 0; i < Number(runs); i++) {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 900 });
    const start = performance.now();
    await page.goto(`${base}/leagues/${league}`);
    await page.waitForFunction(n => document.querySelectorAll('#standings tbody tr').length >= n,
      Number(rows), { timeout: 30000, polling: 'raf' });
    times.push(performance.now() - start);
    await page.close();
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
times.sort((a, b) => a - b);
const at = p => times[Math.min(times.length - 1, Math.floor(p / 100 * times.length))];
console.log(JSON.stringify({ runs: times.length, p50_ms: at(50), max_ms: times[times.length - 1],
  min_ms: times[0] }));
