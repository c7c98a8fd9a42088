// pages.test.mjs - the browser pages (web/) in Debian's Chromium against the real cardpostd:
// live updates, moves by clicking, what a spectator's browser receives, the replay viewer,
// the league standings, and the phone layout. Set CARDPOST_SCREENSHOTS=DIR to also save
// desktop and phone screenshots of every page there (docs/screenshots/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startDaemon, launch, ok, req, players, playRandom, rng, cardsIn, overflowX } from './harness.mjs';

let d, ctx, base, P;
const SHOTS = process.env.CARDPOST_SCREENSHOTS;
const rand = rng(20261122);

before(async () => {
  d = await startDaemon();
  base = d.base;
  ctx = await launch();
  P = await players(base, ['ann', 'bob', 'cat', 'dan', 'eve']);
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
  await page.goto(base + '/assets/style.css');
  await page.evaluate(t => { localStorage.clear(); if (t) localStorage.setItem('cardpost-token', t); }, token || '');
  return page;
}
async function shot(page, name) {
  if (!SHOTS) return;
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}
const tok = seats => seats.map(p => p.token);
const text = (page, sel) => page.locator(sel).first().textContent();

test('a live match page follows a move made elsewhere, without a reload', async () => {
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[0].id, P[1].id] }, P[0].token);
  const page = await newPage();
  await page.goto(`${base}/matches/${m.id}`);
  await page.locator('#seq').waitFor();
  assert.equal(await text(page, '#seq'), String(m.seq));
  await page.evaluate(() => { window.__sameDocument = true; });
  const before_ = await page.locator('#board [data-card]').evaluateAll(es => es.map(e => e.dataset.card).join(' '));
  const seat = m.to_move[0];
  const mine = await ok(base, 'GET', `/v1/matches/${m.id}`, undefined, P[seat].token);
  const after_ = await ok(base, 'POST', `/v1/matches/${m.id}/moves`, { move: mine.legal[0] }, P[seat].token);
  await page.waitForFunction(s => document.getElementById('seq') && document.getElementById('seq').textContent === String(s), after_.seq, { timeout: 10000 });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
  const now = await page.locator('#board [data-card]').evaluateAll(es => es.map(e => e.dataset.card).join(' '));
  assert.notEqual(now, before_, 'the table changed');
  assert.match(mine.legal[0], /^lead /);
  const led = mine.legal[0].split(' ')[1];
  assert.equal(await page.locator(`.trick [data-card="${led}"]`).count(), 1, 'the led card is in the trick');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a game without a drawer of its own is shown by the generic view and played by clicking', async () => {
  // web/game-snag.js withheld: the page is what a new game gets before it has a drawer.
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[0].id, P[1].id] }, P[0].token);
  const seat = m.to_move[0];
  const page = await newPage(P[seat].token);
  await page.route('**/assets/game-snag.js', r => r.fulfill({ status: 404, body: '' }));
  await page.goto(`${base}/matches/${m.id}`);
  await page.locator('#seq').waitFor();
  await page.locator('#moves button[data-move]').first().waitFor();
  assert.equal(await page.locator('.bar').count(), 0, 'drawn without the Snag drawer');
  const mine = await ok(base, 'GET', `/v1/matches/${m.id}`, undefined, P[seat].token);
  const hand = await page.locator('.seat.me .hand [data-card]').evaluateAll(es => es.map(e => e.dataset.card));
  assert.deepEqual(hand, mine.view.hands[seat].cards, 'the hand is drawn as cards');
  assert.match(await text(page, '.seat.me .total'), new RegExp('^0 / ' + m.target + '$'));
  assert.equal(await page.locator('details.raw pre.raw').count(), 1, 'the whole view is there, folded');
  // Every legal move can be played: a highlighted card, or a button.
  const buttons = await page.locator('#moves button[data-move]').evaluateAll(es => es.map(e => e.dataset.move));
  const clickable = await page.locator('#board .card.playable').evaluateAll(es => es.map(e => e.dataset.card));
  for (const mv of mine.legal) assert.ok(buttons.includes(mv) || clickable.includes(mv.split(' ')[1]), mv + ' can be played');
  const mv = mine.legal[0];
  if (buttons.includes(mv)) await page.locator(`#moves button[data-move="${mv}"]`).click();
  else await page.locator(`#board .card.playable[data-card="${mv.split(' ')[1]}"]`).first().click();
  await page.waitForFunction(s => document.getElementById('seq') && document.getElementById('seq').textContent !== String(s), mine.seq, { timeout: 10000 });
  const log = await ok(base, 'GET', `/v1/matches/${m.id}/log`);
  assert.deepEqual(log.events[log.events.length - 1], { seat, move: mv, seq: mine.seq });
  assert.deepEqual(page.errors, []);
  await page.close();
});

let hearts;   // the Hearts match of the next test, still running afterwards
test('a player signs in with the token form, passes three cards and plays a card by clicking', async () => {
  const seats = P.slice(0, 4);
  hearts = await ok(base, 'POST', '/v1/matches', { game: 'hearts', players: seats.map(p => p.id) }, P[0].token);
  const page = await newPage();
  const urls = [];   // every request the page makes (issue 18: its stream, no read per move)
  page.on('request', r => urls.push(r.method() + ' ' + r.url()));
  await page.goto(`${base}/matches/${hearts.id}`);
  await page.locator('#token').fill(P[0].token);
  await page.locator('#signin-form button').click();
  await page.locator('#whoami').waitFor();
  assert.match(await text(page, '#whoami'), /ann/);
  assert.equal(await page.evaluate(() => localStorage.getItem('cardpost-token')), P[0].token);
  assert.ok(!page.url().includes(P[0].token), 'the token is not in the URL');
  await page.locator('#confirm-pass').waitFor();
  assert.equal(await page.locator('#confirm-pass').isDisabled(), true);
  const hand = page.locator('.seat.me .hand .card.selectable');
  assert.equal(await hand.count(), 13);
  const picked = [];
  for (const i of [0, 5, 12]) {
    const c = hand.nth(i);
    picked.push(await c.getAttribute('data-card'));
    await c.click();
  }
  await page.locator('#confirm-pass:not([disabled])').click();
  await page.waitForFunction(() => !document.getElementById('confirm-pass'), null, { timeout: 10000 });
  const log = await ok(base, 'GET', `/v1/matches/${hearts.id}/log`, undefined, P[0].token);
  const mine = log.events.filter(e => e.seat === 0);
  assert.equal(mine.length, 1);
  const order = c => 'CDHS'.indexOf(c[1]) * 13 + '23456789TJQKA'.indexOf(c[0]);
  assert.equal(mine[0].move, 'pass ' + picked.sort((a, b) => order(a) - order(b)).join(' '));

  // The others move through the API until ann is to play; the page follows on its own, on
  // the pushed views of her own stream (opened with a ticket, never the token in a URL),
  // without reading the match again.
  const ticketed = u => /^GET .*\/events\?ticket=cps_[0-9a-f]{64}$/.test(u);
  for (let i = 0; i < 200 && !urls.some(ticketed); i++) await new Promise(r => setTimeout(r, 50));
  assert.ok(urls.some(ticketed), "the seat's stream opens with a ticket");
  assert.ok(!urls.some(u => u.includes(P[0].token)), 'the token is in no URL');
  const readsBefore = urls.filter(u => u === `GET ${base}/v1/matches/${hearts.id}`).length;
  for (let k = 0; k < 60; k++) {
    const v = await ok(base, 'GET', `/v1/matches/${hearts.id}`);
    if (v.to_move.includes(0) && v.view.phase === 'play') break;
    await playRandom(base, hearts.id, { [v.to_move[0]]: P[v.to_move[0]].token }, rand, 1);
  }
  const v = await ok(base, 'GET', `/v1/matches/${hearts.id}`, undefined, P[0].token);
  assert.deepEqual(v.to_move, [0]);
  await page.waitForFunction(s => document.getElementById('seq').textContent === String(s), v.seq, { timeout: 10000 });
  assert.equal(urls.filter(u => u === `GET ${base}/v1/matches/${hearts.id}`).length, readsBefore, "the page follows the others' moves without a GET of its view");
  const playable = page.locator('.seat.me .card.playable');
  await playable.first().waitFor();
  assert.equal(await playable.count(), v.legal.filter(m => m.startsWith('play ')).length);
  const card = await playable.first().getAttribute('data-card');
  await shot(page, 'match-player-desktop');
  await playable.first().click();
  await page.waitForFunction(s => document.getElementById('seq').textContent !== String(s), v.seq, { timeout: 10000 });
  const log2 = await ok(base, 'GET', `/v1/matches/${hearts.id}/log`);
  assert.deepEqual(log2.events[log2.events.length - 1], { seat: 0, move: 'play ' + card, seq: v.seq }, 'the clicked card is the last move of the log');
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await overflowX(page) <= 0, 'no horizontal overflow at 390 px (player)');
  await shot(page, 'match-player-phone');
  await page.locator('#signout').click();
  await page.locator('#token').waitFor();
  assert.equal(await page.evaluate(() => localStorage.getItem('cardpost-token')), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a spectator\'s browser never receives a card the spectator may not see', async () => {
  const id = hearts.id;
  const page = await newPage();
  const bodies = [];
  page.on('response', async r => {
    if (!(r.headers()['content-type'] || '').includes('json')) return;
    try { bodies.push({ url: r.url(), body: await r.json() }); } catch (e) { bodies.push({ url: r.url(), body: null }); }
  });
  // The rest arrives over its event stream, whose body 'response' cannot read: every message
  // the page's EventSource delivers (the daemon names them `state` and `event`) is recorded
  // in the page, before the page's own listeners see it.
  await page.addInitScript(() => {
    window.__streamed = [];
    const Native = window.EventSource;
    window.EventSource = class extends Native {
      constructor(...a) {
        super(...a);
        for (const type of ['state', 'event', 'message']) {
          this.addEventListener(type, ev => window.__streamed.push({ url: this.url, type, data: ev.data }));
        }
      }
    };
  });
  const streamed = () => page.evaluate(() => window.__streamed);
  async function allowed() {
    const view = await ok(base, 'GET', `/v1/matches/${id}`);
    const log = await ok(base, 'GET', `/v1/matches/${id}/log`);
    return { view, set: new Set([...cardsIn(view), ...cardsIn(log)]) };
  }
  async function check(expectSeq) {
    await page.waitForFunction(s => document.getElementById('seq') && document.getElementById('seq').textContent === String(s), expectSeq, { timeout: 10000 });
    await page.waitForTimeout(300);
    const { view, set } = await allowed();
    assert.equal(view.seq, expectSeq);
    // The check means something: the seats' hands are secret and not in the allowed set.
    for (let s = 0; s < 4; s++) {
      const own = await ok(base, 'GET', `/v1/matches/${id}`, undefined, P[s].token);
      assert.ok(own.view.hands[s].cards.length > 0);
      for (const c of own.view.hands[s].cards) assert.ok(!set.has(c), `seat ${s}'s ${c} is hidden from spectators`);
    }
    assert.ok(bodies.some(b => b.url.endsWith(`/v1/matches/${id}`)), 'the page read the match');
    for (const b of bodies) {
      assert.ok(b.body, 'a JSON body was read: ' + b.url);
      for (const c of cardsIn(b.body)) assert.ok(set.has(c), `${b.url} showed ${c} to a spectator`);
    }
    // The stream was read, up to the state the page shows, and held no hidden card either.
    const msgs = await streamed();
    const states = msgs.filter(m => m.type === 'state').map(m => JSON.parse(m.data));
    assert.ok(msgs.every(m => m.url.endsWith(`/v1/matches/${id}/events`)), "the spectator's stream, no ticket");
    assert.ok(states.some(v => v.seq === expectSeq), `the stream brought the state at seq ${expectSeq}`);
    for (const m of msgs) for (const c of cardsIn(JSON.parse(m.data))) assert.ok(set.has(c), `the stream's ${m.type} showed ${c} to a spectator`);
    const shown = await page.locator('[data-card]').evaluateAll(es => es.map(e => e.dataset.card));
    for (const c of shown) assert.ok(set.has(c), `the page drew ${c} for a spectator`);
    return msgs;
  }
  await page.goto(`${base}/matches/${id}`);
  const v0 = await ok(base, 'GET', `/v1/matches/${id}`);
  const first = await check(v0.seq);
  await shot(page, 'match-live-desktop');
  const v1 = await playRandom(base, id, tok(P.slice(0, 4)), rand, 3);
  const msgs = await check(v1.seq);
  assert.ok(bodies.length >= 1);
  // The moves came over the stream after the first check: their events, and a state.
  const later = msgs.slice(first.length);
  const log = await ok(base, 'GET', `/v1/matches/${id}/log`);
  assert.ok(v1.seq - v0.seq >= 3, "three moves (and a deal, if one ended a hand)");
  assert.deepEqual(later.filter(m => m.type === 'event').map(m => JSON.parse(m.data)), log.events.filter(e => e.seq >= v0.seq), "the moves' events");
  assert.ok(later.some(m => m.type === 'state'), 'a state after the moves');
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await overflowX(page) <= 0, 'no horizontal overflow at 390 px (spectator)');
  await shot(page, 'match-live-phone');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the replay viewer reaches the final scores by stepping, by jumping and by playing', async () => {
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[2].id, P[3].id], options: { target: 3 } }, P[2].token);
  const fin = await playRandom(base, m.id, [P[2].token, P[3].token], rand);
  assert.equal(fin.status, 'finished');
  const r = await ok(base, 'GET', `/v1/matches/${m.id}/replay`);
  const n = r.steps.length;
  const final = fin.result.totals.map(String);
  const page = await newPage();
  await page.goto(`${base}/matches/${m.id}`);
  await page.locator('#replay').waitFor();
  const scores = () => page.locator('#scores td.score').allTextContents();
  assert.equal(await text(page, '#stepno'), `step 1 / ${n}`);
  assert.deepEqual(await scores(), r.steps[0].totals.map(String));
  // Cards are drawn, not written as codes: a rank, a suit symbol, a colour.
  const c0 = page.locator('#board .card[data-card]').first();
  const code = await c0.getAttribute('data-card');
  assert.match(await c0.locator('.suit').textContent(), /^[\u2660\u2663\u2665\u2666]$/);
  assert.ok(await c0.evaluate((e, red) => e.classList.contains(red ? 'red' : 'black'), 'DH'.includes(code[1])));
  assert.ok(!(await page.locator('#board').textContent()).includes(code), 'no card code as text');
  for (let i = 1; i < n; i++) await page.locator('#next').click();
  assert.equal(await text(page, '#stepno'), `step ${n} / ${n}`);
  assert.deepEqual(await scores(), final);
  await shot(page, 'match-replay-desktop');
  await page.locator('#prev').click();
  assert.equal(await text(page, '#stepno'), `step ${n - 1} / ${n}`);
  await page.locator('#first').click();
  assert.deepEqual(await scores(), r.steps[0].totals.map(String));
  // Jumping: to each hand's deal, and to the end.
  const hands = await page.locator('#hand option').allTextContents();
  assert.ok(hands.includes('hand 1') && hands.includes('the end'));
  const lastHand = 'hand ' + Math.max(...hands.filter(h => /^hand \d+$/.test(h)).map(h => Number(h.slice(5))));
  await page.locator('#hand').selectOption({ label: lastHand });
  const at = Number((await text(page, '#stepno')).match(/step (\d+)/)[1]) - 1;
  assert.ok(r.steps[at].event.deal, 'a hand starts at its deal');
  assert.equal(r.steps[at].hands_done, Number(lastHand.slice(5)) - 1);
  await page.locator('#hand').selectOption({ label: 'the end' });
  assert.deepEqual(await scores(), final);
  // The slider and playing at a chosen speed.
  await page.locator('#slider').fill('0');
  assert.equal(await text(page, '#stepno'), `step 1 / ${n}`);
  await page.locator('#speed').selectOption('16');
  await page.locator('#play').click();
  await page.waitForFunction(t => document.getElementById('stepno').textContent === t, `step ${n} / ${n}`, { timeout: 30000 });
  assert.deepEqual(await scores(), final);
  // The log download is the verifiable log.
  const href = await page.locator('#download-log').getAttribute('href');
  assert.equal(href, `/v1/matches/${m.id}/log`);
  assert.ok(await page.locator('#download-log').getAttribute('download'));
  const log = await ok(base, 'GET', href);
  assert.ok(log.seed && log.result);
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await overflowX(page) <= 0, 'no horizontal overflow at 390 px (replay)');
  await shot(page, 'match-replay-phone');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the league page shows the standings the API reports; the front page lists the league', async () => {
  const lg = await ok(base, 'POST', '/v1/leagues', { name: 'Tuesday Snag', game: 'snag', options: { target: 2 } }, P[0].token);
  for (const p of P.slice(0, 4)) {
    const r = await req(base, 'POST', `/v1/leagues/${lg.id}/members`, { player: p.id }, P[0].token);
    assert.ok(r.status === 201 || (r.status === 409 && r.body.code === 'already_member'), JSON.stringify(r.body));
  }
  const sch = await ok(base, 'POST', `/v1/leagues/${lg.id}/schedule`, {}, P[0].token);
  assert.ok(sch.matches.length >= 6);
  const byId = Object.fromEntries(P.map(p => [p.id, p.token]));
  for (const id of sch.matches.slice(1)) {
    const v = await ok(base, 'GET', `/v1/matches/${id}`);
    await playRandom(base, id, v.players.map(p => byId[p.id]), rand);
  }
  const running = await ok(base, 'GET', `/v1/matches/${sch.matches[0]}`);
  assert.equal(running.status, 'active');
  const st = await ok(base, 'GET', `/v1/leagues/${lg.id}/standings`);
  const page = await newPage();
  await page.goto(`${base}/leagues/${lg.id}`);
  await page.locator('#standings').waitFor();
  const rows = await page.locator('#standings tbody tr').evaluateAll(trs => trs.map(tr => [...tr.children].map(c => c.textContent)));
  const fmt = v => (typeof v === 'number' && !Number.isInteger(v) ? String(Math.round(v * 100) / 100) : String(v));
  assert.deepEqual(rows, st.standings.map(s => ['rank', 'name', 'played', 'won', 'drawn', 'lost', 'points', 'for', 'against', 'rating'].map(k => fmt(s[k]))));
  assert.ok(st.standings.some(s => s.played > 0));
  const act = page.locator(`#active [data-match="${running.id}"]`);
  assert.equal(await act.count(), 1);
  const names = Object.fromEntries(running.players.map(p => [p.seat, p.name]));
  assert.match(await act.textContent(), new RegExp('to move: ' + running.to_move.map(s => names[s]).join(', ')));
  const totals = await act.locator('.total').allTextContents();
  assert.deepEqual(totals, running.totals.map(t => `${t} / ${running.target}`));
  assert.equal(await page.locator('#finished li.match').count(), sch.matches.length - 1);
  await shot(page, 'league-desktop');
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await overflowX(page) <= 0, 'no horizontal overflow at 390 px (league)');
  await shot(page, 'league-phone');
  await page.locator(`#active [data-match="${running.id}"] a`).click();
  await page.waitForURL(`${base}/matches/${running.id}`);
  await page.locator('#seq').waitFor();

  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(base + '/');
  const card = page.locator(`#leagues [data-league="${lg.id}"]`);
  await card.waitFor();
  const list = await ok(base, 'GET', '/v1/leagues');
  const mine = list.leagues.find(l => l.id === lg.id);
  assert.equal(await card.locator('h2').textContent(), 'Tuesday Snag');
  assert.equal(await card.locator('.members').textContent(), String(mine.members));
  assert.equal(await card.locator('.active').textContent(), String(mine.matches_active));
  assert.equal(await card.locator('.finished').textContent(), String(mine.matches_finished));
  await shot(page, 'index-desktop');
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await overflowX(page) <= 0, 'no horizontal overflow at 390 px (front page)');
  await shot(page, 'index-phone');
  await card.click();
  await page.waitForURL(`${base}/leagues/${lg.id}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a pending match shows who is awaited; the invited seat accepts by clicking and the table appears', async () => {
  const ivy = await ok(base, 'POST', '/v1/players', { name: 'ivy' }); // asked before being seated
  const lg = await ok(base, 'POST', '/v1/leagues', { name: 'Invitations', game: 'snag' }, P[0].token);
  for (const t of [P[0].token, P[1].token, ivy.token]) await ok(base, 'POST', `/v1/leagues/${lg.id}/members`, {}, t);
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[1].id, ivy.id], league: lg.id }, P[1].token);
  assert.equal(m.status, 'pending');
  const league = await newPage();
  await league.goto(`${base}/leagues/${lg.id}`);
  const item = league.locator(`#active [data-match="${m.id}"]`);
  await item.waitFor();
  assert.match(await item.textContent(), /waiting for the players to accept/);
  assert.deepEqual(league.errors, []);
  await league.close();
  const page = await newPage(ivy.token);
  await page.goto(`${base}/matches/${m.id}`);
  await page.locator('#invitation').waitFor();
  assert.equal(await text(page, '#status'), 'pending');
  assert.match(await text(page, '#waiting'), /Waiting for: ivy/);
  await shot(page, 'pending-desktop');
  await page.locator('#accept').click();
  await page.locator('#seq').waitFor();
  assert.equal(await text(page, '#status'), 'active');
  assert.ok(await page.locator('#board [data-card]').count() > 0, 'the dealt table');
  const v = await ok(base, 'GET', `/v1/matches/${m.id}`);
  assert.equal(v.status, 'active');
  const spectator = await newPage();
  const declined = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[2].id, ivy.id] }, P[2].token);
  await ok(base, 'POST', `/v1/matches/${declined.id}/decline`, undefined, ivy.token);
  await spectator.goto(`${base}/matches/${declined.id}`);
  await spectator.locator('#cancelled').waitFor();
  assert.match(await text(spectator, '#cancelled'), /declined/);
  assert.deepEqual(page.errors, []);
  assert.deepEqual(spectator.errors, []);
  await page.close();
  await spectator.close();
});

test('every page fits a phone: no horizontal overflow at 390x844 for every game', async () => {
  const page = await newPage(P[0].token);
  await page.setViewportSize({ width: 390, height: 844 });
  const games = [['hearts', P.slice(0, 5), { seats: 5 }], ['horse-thief', P.slice(0, 4), { seats: 4 }],
    ['horseshoe', P.slice(0, 2), {}], ['snag', P.slice(0, 2), {}], ['speed', P.slice(0, 2), {}]];
  for (const [game, seats, options] of games) {
    const m = await ok(base, 'POST', '/v1/matches', { game, players: seats.map(p => p.id), options }, P[0].token);
    await playRandom(base, m.id, tok(seats), rand, 6);
    await page.goto(`${base}/matches/${m.id}`);
    await page.locator('#board .table').waitFor();
    assert.ok(await overflowX(page) <= 0, `no horizontal overflow at 390 px (${game}, player)`);
    await ok(base, 'POST', `/v1/matches/${m.id}/moves`, { move: 'resign' }, seats[1].token);
    await page.locator('#replay').waitFor({ timeout: 10000 });
    await page.locator('#last').click();
    assert.ok(await overflowX(page) <= 0, `no horizontal overflow at 390 px (${game}, replay)`);
    if (game === 'speed' || game === 'horse-thief') await shot(page, `match-${game}-replay-phone`);
  }
  assert.deepEqual(page.errors, []);
  await page.close();
});
