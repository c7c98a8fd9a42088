// harness.mjs - the shared harness of the browser tests: starts the real build/cardpostd
// (env CARDPOSTD, else build/cardpostd under the source root) on 127.0.0.1:0 with a fresh
// database in a temp dir, a JSON client for its API, a random player that finishes
// matches, and Debian's Chromium headless through playwright-core with a fresh profile.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SOURCE_ROOT = process.env.CARDPOST_SOURCE_ROOT || path.resolve(here, '../..');
export const CARDPOSTD = process.env.CARDPOSTD || path.join(SOURCE_ROOT, 'build/cardpostd');
export const OPERATOR = 'op-token-for-browser-tests-0123456789abcdef';
export const CARD_RE = /^[2-9TJQKA][CDHS]$/;

// Every page and test client comes from 127.0.0.1: no limits per address or token.
const UNLIMITED = Object.fromEntries(['RATE_PER_ADDRESS', 'RATE_PER_TOKEN',
  'MAX_CONNECTIONS_PER_ADDRESS', 'MAX_STREAMS_PER_ADDRESS', 'MAX_STREAMS']
  .map(k => ['CARDPOST_' + k, '0']));

export async function startDaemon(env = {}) {
  const tmp = mkdtempSync(path.join(tmpdir(), 'cardpost-web-'));
  const db = path.join(tmp, 'cardpost.db');
  const proc = spawn(CARDPOSTD, ['--db', db, '--listen', '127.0.0.1:0', '--operator-token', OPERATOR],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...UNLIMITED, ...env } });
  const base = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('cardpostd printed no address within 20 s')), 20000);
    proc.on('exit', code => reject(new Error('cardpostd exited with ' + code)));
    proc.stdout.on('data', d => {
      out += d;
      const m = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+) \(database (.*)\)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
  const d = { base, tmp, proc };
  d.stop = async () => {
    if (proc.exitCode === null) {
      const done = new Promise(r => proc.once('exit', r));
      proc.kill('SIGTERM');
      await done;
    }
    rmSync(tmp, { recursive: true, force: true });
  };
  return d;
}

// One API request; returns {status, body}. `token` adds Authorization.
export async function req(base, method, p, body, token) {
  const headers = {};
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(base + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let parsed = text;
  try { parsed = JSON.parse(text); } catch (e) { /* not JSON */ }
  return { status: r.status, body: parsed };
}
// The same, insisting on a 2xx answer.
export async function ok(base, method, p, body, token) {
  const r = await req(base, method, p, body, token);
  if (r.status < 200 || r.status > 299) throw new Error(`${method} ${p} -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function players(base, names) {
  const out = [];
  // (seated without being asked: the matches a test creates start at once)
  for (const name of names) out.push(await ok(base, 'POST', '/v1/players', { name, preferences: { seat_without_asking: true } }));
  return out;
}

// A deterministic PRNG (mulberry32), so a failing run can be repeated.
export function rng(seed) {
  let a = seed >>> 0;
  return () => { a = (a + 0x6D2B79F5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}
// Plays random legal moves (never resign) for the seats holding `tokens` (by seat), at
// most `limit` moves, or until the match is over. Returns the last spectator view.
export async function playRandom(base, id, tokens, rand, limit = 100000) {
  for (let k = 0; k < limit; k++) {
    const v = await ok(base, 'GET', `/v1/matches/${id}`);
    if (v.status !== 'active') return v;
    const seat = v.to_move[Math.floor(rand() * v.to_move.length)];
    const mine = await ok(base, 'GET', `/v1/matches/${id}`, undefined, tokens[seat]);
    if (!mine.legal.length) continue;
    const mv = mine.legal[Math.floor(rand() * mine.legal.length)];
    await ok(base, 'POST', `/v1/matches/${id}/moves`, { move: mv }, tokens[seat]);
  }
  return ok(base, 'GET', `/v1/matches/${id}`);
}

// Every card a JSON value names: card strings and the cards inside move texts.
export function cardsIn(value, out = new Set()) {
  if (typeof value === 'string') { for (const w of value.split(' ')) if (CARD_RE.test(w)) out.add(w); }
  else if (Array.isArray(value)) value.forEach(v => cardsIn(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach(v => cardsIn(v, out));
  return out;
}

export async function launch() {
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'cardpost-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  context.close_ = async () => { await context.close(); rmSync(userDataDir, { recursive: true, force: true }); };
  return context;
}

// No horizontal overflow: the document is no wider than the viewport.
export async function overflowX(page) {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

// tests/peers' real SMTP server (Debian's python3-aiosmtpd), for a daemon started with
// { CARDPOST_SMTP_URL: sink.url }. messages() reads what it received: [{raw, rcpt_tos}].
export async function startSmtpSink() {
  const dir = mkdtempSync(path.join(tmpdir(), 'cardpost-smtp-'));
  const proc = spawn('/usr/bin/python3', [path.join(SOURCE_ROOT, 'tests/peers/smtp_sink.py'), dir, '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('smtp_sink.py printed no port within 20 s')), 20000);
    proc.on('exit', code => reject(new Error('smtp_sink.py exited with ' + code)));
    proc.stdout.on('data', d => {
      out += d;
      const m = out.match(/smtp-sink: listening on 127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
  });
  return {
    url: 'smtp://127.0.0.1:' + port,
    messages: () => readdirSync(dir).filter(n => n.endsWith('.eml')).sort().map(n => ({
      raw: readFileSync(path.join(dir, n), 'utf8'),
      ...JSON.parse(readFileSync(path.join(dir, n.slice(0, -4) + '.json'), 'utf8')),
    })),
    stop: async () => {
      if (proc.exitCode === null) { const done = new Promise(r => proc.once('exit', r)); proc.kill('SIGTERM'); await done; }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
