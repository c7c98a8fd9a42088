// a11y.test.mjs - accessibility of the existing pages (issue 17): axe-core (pinned in
// package-lock.json) finds no violation on every page in every state visited here (the
// leagues, a league, a live match as a seat and as a spectator, a Hearts pass and a Horse
// Thief discard being selected, a finished match and its replay, desktop and phone sizes);
// a whole Snag match is played by keyboard alone (Tab, Enter, Space) by both seats; the
// match page's title, its live region, the kept focus, the league page's finished matches
// by place and the standings on a phone; and the player's own pages (account, my matches,
// settings), signed out and in. CARDPOST_SCREENSHOTS=DIR saves screenshots there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startDaemon, launch, ok, req, players, playRandom, rng, overflowX } from './harness.mjs';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const SHOTS = process.env.CARDPOST_SCREENSHOTS;
const rand = rng(20261124);
let d, ctx, base, P;

before(async () => {
  d = await startDaemon();
  base = d.base;
  ctx = await launch();
  P = await players(base, ['ann', 'bob', 'cat', 'dan']);
});
after(async () => {
  if (ctx) await ctx.close_();
  if (d) await d.stop();
});

async function newPage(token) {
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  page.errors = errors;
  // The pages' Content-Security-Policy allows only the service's own scripts: axe is served
  // as if it were one of them.
  await page.route('**/assets/axe.min.js', r => r.fulfill({ path: AXE, contentType: 'application/javascript' }));
  await page.goto(base + '/assets/style.css');
  await page.evaluate(t => { localStorage.clear(); if (t) localStorage.setItem('cardpost-token', t); }, token || '');
  return page;
}
async function shot(page, name) {
  if (SHOTS) await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}
// axe-core over the page as it is now, at desktop and phone width: no violation at all.
async function axeClean(page, what) {
  for (const [w, h] of [[1280, 900], [390, 844]]) {
    await page.setViewportSize({ width: w, height: h });
    if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ url: base + '/assets/axe.min.js' });
    const found = await page.evaluate(async () => (await window.axe.run()).violations.map(v =>
      ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary) })));
    assert.deepEqual(found, [], `axe violations on ${what} at ${w}px:\n${JSON.stringify(found, null, 1)}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
const seqIs = (page, s) => page.waitForFunction(x => { const e = document.getElementById('seq'); return e && e.textContent === String(x); }, s, { timeout: 10000 });

let league, running, finishedHearts;
test('the leagues and a league page: axe-clean; finished matches list seats by place; the standings fit a phone', async () => {
  league = await ok(base, 'POST', '/v1/leagues', { name: 'Thursday Snag', game: 'snag', options: { target: 2 } }, P[0].token);
  for (const p of P) {
    const r = await req(base, 'POST', `/v1/leagues/${league.id}/members`, { player: p.id }, P[0].token);
    assert.ok(r.status === 201 || r.status === 409, JSON.stringify(r.body));
  }
  const sch = await ok(base, 'POST', `/v1/leagues/${league.id}/schedule`, {}, P[0].token);
  const byId = Object.fromEntries(P.map(p => [p.id, p.token]));
  for (const id of sch.matches.slice(1)) {
    const v = await ok(base, 'GET', `/v1/matches/${id}`);
    await playRandom(base, id, v.players.map(p => byId[p.id]), rand);
  }
  // A 4-seat Hearts match in progress, and one played to its end.
  running = (await ok(base, 'POST', '/v1/matches', { game: 'hearts', players: P.map(p => p.id), options: { target: 20 } }, P[0].token)).id;
  const fh = await ok(base, 'POST', '/v1/matches', { game: 'hearts', players: P.map(p => p.id), options: { target: 20 } }, P[0].token);
  await playRandom(base, fh.id, P.map(p => p.token), rand);
  finishedHearts = fh.id;
  const page = await newPage();
  await page.goto(base + '/');
  await page.locator(`#leagues [data-league="${league.id}"]`).waitFor();
  await axeClean(page, 'the leagues');
  await page.goto(`${base}/leagues/${league.id}`);
  await page.locator('#standings').waitFor();
  await axeClean(page, 'a league');
  // Finished matches: seats in the order of their places.
  const lg = await ok(base, 'GET', `/v1/leagues/${league.id}`);
  for (const m of lg.matches.filter(x => x.status === 'finished')) {
    const names = Object.fromEntries(m.players.map(p => [p.seat, p.name]));
    const want = m.result.ranking.flat().map(s => names[s]);
    const got = await page.locator(`#finished [data-match="${m.id}"] ul.seats .pname`).allTextContents();
    assert.deepEqual(got, want, `match ${m.id}'s seats by place`);
  }
  // The standings on a phone: no cut-off, the less important columns behind a button.
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await overflowX(page) <= 0);
  const visible = async () => page.locator('#standings thead th').evaluateAll(es => es.filter(e => e.offsetParent !== null).map(e => e.className));
  assert.deepEqual(await visible(), ['c-rank', 'c-name', 'c-played', 'c-won', 'c-lost', 'c-points']);
  const tableFits = await page.locator('#standings').evaluate(t => t.getBoundingClientRect().right <= document.documentElement.clientWidth);
  assert.ok(tableFits, 'the standings fit the phone without scrolling');
  await shot(page, 'standings-phone');
  await page.locator('#all-columns').focus();
  await page.keyboard.press('Enter');
  assert.equal((await visible()).length, 10, 'every column on demand');
  assert.equal(await page.locator('#all-columns').getAttribute('aria-pressed'), 'true');
  await page.evaluate(() => new Promise(r => setTimeout(r, 21000))).catch(() => {});
  assert.equal(await page.evaluate(() => document.activeElement.id), 'all-columns', 'the refresh every 20 s keeps the focus');
  await axeClean(page, 'a league, every column');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#all-columns').click();
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a live Hearts match as a seat and as a spectator: axe-clean, pass selection by keyboard with aria-pressed, the title, the live region', async () => {
  const v0 = await ok(base, 'GET', `/v1/matches/${running}`);
  const byId = Object.fromEntries(P.map(p => [p.id, p.token]));
  const toks = v0.players.map(p => byId[p.id]);
  const seat = v0.to_move[0];
  const spectator = await newPage();
  await spectator.goto(`${base}/matches/${running}`);
  await spectator.locator('#seq').waitFor();
  await axeClean(spectator, 'a live match (spectator)');
  assert.match(await spectator.title(), new RegExp(`hearts match #${running} · to move: `));
  assert.ok(await spectator.locator('.card.back[aria-label="face-down card"], .cards.backs[aria-label*="face-down card"]').count() > 0, 'backs are named');

  // The seat passes by keyboard: Tab to a card, Space and Enter toggle it, aria-pressed says so.
  const page = await newPage(toks[seat]);
  await page.goto(`${base}/matches/${running}`);
  await page.locator('#confirm-pass').waitFor();
  assert.match(await page.title(), new RegExp(`^\\(1\\) hearts match #${running} · your turn`));
  await axeClean(page, 'a live match (seat)');
  const hand = page.locator('.seat.me .hand .card.selectable');
  const first = await hand.first().getAttribute('data-card');
  assert.match(await hand.first().locator('.visually-hidden').textContent(), /^(\d+|jack|queen|king|ace) of (clubs|diamonds|hearts|spades)$/);
  for (let k = 0; k < 80 && await page.evaluate(() => !document.activeElement.classList.contains('selectable')); k++) await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.card), first, 'Tab reaches the first card of the hand');
  assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none', 'the focus is visible');
  await page.keyboard.press('Space');
  const sel = page.locator(`.seat.me .hand [data-card="${first}"]`);
  assert.equal(await sel.getAttribute('aria-pressed'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.card), first, 'the focus stays on the card');
  await page.keyboard.press('Tab');
  const second = await page.evaluate(() => document.activeElement.dataset.card);
  await page.keyboard.press('Enter');
  assert.equal(await page.locator(`.seat.me .hand [data-card="${second}"]`).getAttribute('aria-pressed'), 'true');
  assert.match(await page.locator('#announce').textContent(), /selected, 2 selected/);
  await axeClean(page, 'a Hearts pass selection');
  await shot(page, 'match-pass-desktop');
  await page.setViewportSize({ width: 390, height: 844 });
  // On a phone the player's own hand and the moves come before the table's centre.
  const order = await page.evaluate(() => ['#moves', '.seat.me .hand', '.centre'].map(s => document.querySelector(s).getBoundingClientRect().top));
  assert.ok(order[0] < order[2] && order[1] < order[2], 'moves and hand above the centre on a phone: ' + order);
  await shot(page, 'match-pass-phone');
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.keyboard.press('Space');
  assert.equal(await page.locator(`.seat.me .hand [data-card="${second}"]`).getAttribute('aria-pressed'), 'false', 'Space unselects');

  // A move made elsewhere is announced on the spectator's page.
  const other = v0.to_move.find(s => s !== seat);
  const mine = await ok(base, 'GET', `/v1/matches/${running}`, undefined, toks[other]);
  const after_ = await ok(base, 'POST', `/v1/matches/${running}/moves`, { move: mine.legal[0] }, toks[other]);
  await seqIs(spectator, after_.seq);
  await spectator.waitForFunction(() => /^(ann|bob|cat|dan): a hidden move/.test(document.getElementById('announce').textContent), null, { timeout: 10000 })
    .catch(async e => { throw new Error(e.message + ' announce: ' + await spectator.locator('#announce').textContent()); });
  assert.equal(await spectator.locator('#announce').getAttribute('aria-live'), 'polite');
  assert.deepEqual(page.errors, []);
  assert.deepEqual(spectator.errors, []);
  await page.close();
  await spectator.close();
});

test('a Horse Thief discard selection is axe-clean', async () => {
  const seats = P.slice(0, 3);
  const m = await ok(base, 'POST', '/v1/matches', { game: 'horse-thief', players: seats.map(p => p.id) }, P[0].token);
  let seat = null;
  for (let k = 0; k < 200 && seat === null; k++) {
    const v = await ok(base, 'GET', `/v1/matches/${m.id}`);
    assert.equal(v.status, 'active');
    for (const s of v.to_move) {
      const mine = await ok(base, 'GET', `/v1/matches/${m.id}`, undefined, seats[s].token);
      if (mine.legal.some(x => x.startsWith('discard ') && x.split(' ').length > 1)) { seat = s; break; }
    }
    if (seat === null) {
      // stay rather than drop, so that a discard comes
      const s = v.to_move[0];
      const mine = await ok(base, 'GET', `/v1/matches/${m.id}`, undefined, seats[s].token);
      const mv = mine.legal.find(x => x === 'stay') || mine.legal.filter(x => x !== 'resign')[Math.floor(rand() * (mine.legal.length - 1))] || mine.legal[0];
      await ok(base, 'POST', `/v1/matches/${m.id}/moves`, { move: mv }, seats[s].token);
    }
  }
  assert.notEqual(seat, null, 'a discard came');
  const page = await newPage(seats[seat].token);
  await page.goto(`${base}/matches/${m.id}`);
  await page.locator('#confirm-discard').waitFor();
  const card = page.locator('.seat.me .hand .card.selectable').first();
  await card.focus();
  await page.keyboard.press('Enter');
  assert.equal(await page.locator('.seat.me .hand .card.selectable').first().getAttribute('aria-pressed'), 'true');
  await axeClean(page, 'a discard selection');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a finished 4-seat Hearts match and its replay: axe-clean, no empty hole shown', async () => {
  const page = await newPage();
  await page.goto(`${base}/matches/${finishedHearts}`);
  await page.locator('#replay').waitFor({ timeout: 10000 }).catch(async e => { throw new Error(e.message + ' ' + page.errors.join('; ') + ' ' + await page.locator('main').textContent()); });
  assert.match(await page.title(), new RegExp(`hearts match #${finishedHearts} · finished`));
  await axeClean(page, 'a finished match');
  await page.locator('#last').click();
  await axeClean(page, 'the replay viewer at its end');
  const n = await page.locator('#slider').getAttribute('max');
  for (const at of [0, 1, Math.floor(Number(n) / 2), Number(n)]) {
    await page.locator('#slider').fill(String(at));
    const centre = await page.locator('#board .centre').textContent();
    assert.ok(!/hole/.test(centre), `no hole in a 4-seat game (step ${at}): ${centre}`);
  }
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a whole Snag match played by keyboard alone (Tab, Enter, Space) by both seats', async () => {
  const seats = P.slice(0, 2);
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: seats.map(p => p.id), options: { target: 1 } }, P[0].token);
  const page = await newPage();
  let signedAs = null, moves = 0, keyNo = 0, checked = false;
  for (;;) {
    const v = await ok(base, 'GET', `/v1/matches/${m.id}`);
    if (v.status !== 'active') break;
    const seat = v.to_move[0];
    if (signedAs !== seat) {
      // two players at one browser: each signs in with the header's form, by keyboard
      await page.evaluate(() => localStorage.clear());
      await page.goto(`${base}/matches/${m.id}`);
      await page.locator('#token').waitFor();
      for (let k = 0; k < 20 && await page.evaluate(() => document.activeElement.id !== 'token'); k++) await page.keyboard.press('Tab');
      await page.keyboard.type(seats[seat].token);
      await page.keyboard.press('Enter');
      await page.locator('#whoami').waitFor();
      signedAs = seat;
    }
    await seqIs(page, v.seq);
    await page.waitForFunction(() => { const h = document.getElementById('moves-title'); return h && h.textContent === 'Your move'; }, null, { timeout: 10000 });
    if (!checked) { await axeClean(page, 'a live Snag match (seat)'); checked = true; }
    const isMove = () => { const a = document.activeElement; return !!a && a.id !== 'resign' && a.id !== 'signout' && (a.classList.contains('playable') || !!(a.dataset && a.dataset.move && !a.disabled)); };
    let k = 0;
    for (; k < 200 && !(await page.evaluate(isMove)); k++) await page.keyboard.press('Tab');
    assert.ok(k < 200, 'a move is reachable by Tab');
    const before_ = v.seq;
    await page.keyboard.press(keyNo++ % 2 ? 'Space' : 'Enter');
    await page.waitForFunction(s => { const e = document.getElementById('seq'); return !e || e.textContent !== String(s); }, before_, { timeout: 10000 });
    const log = await ok(base, 'GET', `/v1/matches/${m.id}/log`);
    assert.equal(log.events[log.events.length - 1].seat, seat, 'the move came from the page');
    moves++;
    if (moves === 3) {
      // after a move the focus stays in the match (on the hand, or where it was), not on the page's body
      assert.ok(await page.evaluate(() => !!document.activeElement.closest('#main')), 'the focus is kept in the match');
      await shot(page, 'match-keyboard-desktop');
      await page.setViewportSize({ width: 390, height: 844 });
      await shot(page, 'match-keyboard-phone');
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    assert.ok(moves < 2000);
  }
  const fin = await ok(base, 'GET', `/v1/matches/${m.id}`);
  assert.equal(fin.status, 'finished');
  assert.equal(fin.result.resigned ?? null, null, 'played to the end, nobody resigned');
  await page.locator('#replay').waitFor({ timeout: 10000 });
  assert.ok(moves > 4, 'moves played: ' + moves);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a match waiting for its players, and one declined: axe-clean, accepted by keyboard', async () => {
  const ivy = await ok(base, 'POST', '/v1/players', { name: 'ivy' }); // asked before being seated
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[1].id, ivy.id] }, P[1].token);
  assert.equal(m.status, 'pending');
  const page = await newPage(ivy.token);
  await page.goto(`${base}/matches/${m.id}`);
  await page.locator('#accept').waitFor();
  assert.match(await page.title(), new RegExp(`snag match #${m.id} · pending`));
  await axeClean(page, 'a pending match (invited seat)');
  for (let k = 0; k < 30 && await page.evaluate(() => document.activeElement.id !== 'accept'); k++) await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.locator('#seq').waitFor();
  const declined = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[2].id, ivy.id] }, P[2].token);
  await ok(base, 'POST', `/v1/matches/${declined.id}/decline`, undefined, ivy.token);
  await page.goto(`${base}/matches/${declined.id}`);
  await page.locator('#cancelled').waitFor();
  await axeClean(page, 'a cancelled match');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('every game live as a seat and in its replay: axe-clean', async () => {
  const games = [['hearts', P.slice(0, 3), { seats: 3 }], ['horse-thief', P.slice(0, 4), { seats: 4 }],
    ['horseshoe', P.slice(0, 2), {}], ['speed', P.slice(0, 2), {}]];
  for (const [game, seats, options] of games) {
    const m = await ok(base, 'POST', '/v1/matches', { game, players: seats.map(p => p.id), options }, P[0].token);
    await playRandom(base, m.id, seats.map(p => p.token), rand, 6);
    const page = await newPage(seats[0].token);
    await page.goto(`${base}/matches/${m.id}`);
    await page.locator('#board .table').waitFor();
    await axeClean(page, `${game} (seat)`);
    await ok(base, 'POST', `/v1/matches/${m.id}/moves`, { move: 'resign' }, seats[1].token);
    await page.locator('#replay').waitFor({ timeout: 10000 });
    await page.locator('#last').click();
    await axeClean(page, `${game} (replay)`);
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test("the player's own pages (account, my matches, settings): axe-clean signed out and in", async () => {
  const signedOut = await newPage();
  await signedOut.goto(base + '/account');
  await signedOut.locator('main').waitFor();
  await signedOut.waitForLoadState('networkidle');
  await axeClean(signedOut, '/account signed out');
  await signedOut.close();
  // A player with a match waiting for them and an invitation (bob asks to be asked).
  await ok(base, 'PATCH', '/v1/players/me', { preferences: { seat_without_asking: false } }, P[1].token);
  await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[0].id, P[1].id], options: { target: 1 } }, P[0].token);
  for (const where of ['/account', '/me', '/settings']) {
    const page = await newPage(P[1].token);
    await page.goto(base + where);
    await page.locator('main').waitFor();
    await page.waitForLoadState('networkidle');
    await axeClean(page, where + ' signed in');
    assert.deepEqual(page.errors, [], `script errors on ${where}`);
    await page.close();
  }
});
