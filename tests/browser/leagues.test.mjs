// leagues.test.mjs - the league flows in the browser (issue 17), walked as new users would
// against the real cardpostd in Chromium: an organiser signs up, creates a league on
// /leagues/new (game, options, clock, points), joins it, invites players by number (one
// accepts by keyboard, one declines, one invitation is withdrawn), another player joins by
// himself, the organiser schedules a round, the matches show, one is played to the end (by
// the API, for speed) and the standings follow; a member leaves and their running matches
// are resigned, and the organiser removes another, whose running match is resigned too.
// axe-core finds nothing on every state visited, at desktop and phone sizes.
// CARDPOST_SCREENSHOTS=DIR saves desktop and phone screenshots of each new page there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startDaemon, launch, ok, req, playRandom, rng, overflowX } from './harness.mjs';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const SHOTS = process.env.CARDPOST_SCREENSHOTS;
const rand = rng(20261125);
let d, ctx, base;

before(async () => {
  d = await startDaemon();
  base = d.base;
  ctx = await launch();
});
after(async () => {
  if (ctx) await ctx.close_();
  if (d) await d.stop();
});

async function newPage(token) {
  const page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  // The pages' Content-Security-Policy allows only the service's own scripts: axe is served
  // as if it were one of them.
  await page.route('**/assets/axe.min.js', r => r.fulfill({ path: AXE, contentType: 'application/javascript' }));
  await page.goto(base + '/assets/style.css');
  await page.evaluate(t => { localStorage.clear(); if (t) localStorage.setItem('cardpost-token', t); }, token || '');
  return page;
}
// axe-core over the page as it is now, at desktop and phone width: no violation at all.
async function axeClean(page, what) {
  for (const [w, h] of [[1280, 900], [390, 844]]) {
    await page.setViewportSize({ width: w, height: h });
    if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ url: base + '/assets/axe.min.js' });
    const found = await page.evaluate(async () => (await window.axe.run()).violations.map(v =>
      ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + n.failureSummary) })));
    assert.deepEqual(found, [], `axe violations on ${what} at ${w}px:\n${JSON.stringify(found, null, 1)}`);
    assert.equal(await overflowX(page), 0, what + ' fits ' + w + ' px');
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}
async function shots(page, name) {
  if (!SHOTS) return;
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: path.join(SHOTS, name + '-desktop.png'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: path.join(SHOTS, name + '-phone.png'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}
const text = async (page, sel) => (await page.locator(sel).textContent()).trim();
const focusedId = page => page.evaluate(() => document.activeElement && document.activeElement.id);
// Tab until the element `sel` has the focus (at most `max` presses).
async function tabTo(page, sel, max = 60) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate(s => document.activeElement === document.querySelector(s), sel)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error('Tab never reached ' + sel);
}
const statusSays = (page, re) => page.waitForFunction(r => new RegExp(r).test(document.getElementById('league-status').textContent), re.source, { timeout: 10000 });

let olga, pia, quinn, rex, league;

test('an organiser signs up and creates a league on /leagues/new: the fields follow the game; refusals are shown', async () => {
  const page = await newPage();
  await page.goto(base + '/leagues/new');
  await page.locator('#content a[href="/account"]').waitFor();   // signed out: sent to sign up
  await axeClean(page, 'new league, signed out');

  await page.goto(base + '/account');
  await page.fill('#name', 'olga');
  await page.keyboard.press('Enter');
  await page.locator('#new-token').waitFor();
  const token = await page.locator('#new-token').inputValue();
  await page.check('#saved');
  await page.click('#continue');
  await page.locator('#whoami').waitFor();
  olga = { ...(await ok(base, 'GET', '/v1/players/me', undefined, token)), token };

  await page.goto(base + '/');
  await page.locator('#new-league').click();
  await page.waitForURL(base + '/leagues/new');
  await page.locator('form#new-league').waitFor();
  // Hearts: the table size and the moon rule are asked; the points' default follows the seats.
  await page.selectOption('#game', 'hearts');
  assert.equal(await page.isVisible('#seats'), true);
  assert.equal(await page.isVisible('#moon'), true);
  assert.match(await text(page, '#points-hint'), /3, 2, 1, 0/);
  await page.fill('#seats', '5');
  assert.match(await text(page, '#points-hint'), /4, 3, 2, 1, 0/);
  assert.equal(await page.isVisible('#hours'), false, 'the custom clock is asked only when chosen');
  await page.selectOption('#clock', 'custom');
  assert.equal(await page.isVisible('#hours'), true);
  await axeClean(page, 'new league, Hearts with a clock of my choice');
  await shots(page, 'league-new');

  // Snag: two players, no table size, no moon; a points list of the wrong length is refused.
  await page.selectOption('#game', 'snag');
  assert.equal(await page.isVisible('#seats'), false);
  assert.equal(await page.isVisible('#moon'), false);
  assert.match(await text(page, '#points-hint'), /1, 0/);
  await page.fill('#name', 'Friday Snag');
  await page.fill('#target', '2');
  await page.fill('#hours', '48');
  await page.selectOption('#policy', 'forfeit');
  await page.fill('#points', '3, 1, 0');
  await page.click('#create');
  await page.waitForFunction(() => /points/.test(document.getElementById('error').textContent));
  assert.equal(new URL(page.url()).pathname, '/leagues/new', 'a refusal stays on the form');
  await axeClean(page, 'new league, refused');
  await page.fill('#points', '3, 1');
  await page.focus('#points');
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/leagues\/\d+$/);
  const id = Number(new URL(page.url()).pathname.split('/').pop());
  league = await ok(base, 'GET', `/v1/leagues/${id}`);
  assert.equal(league.name, 'Friday Snag');
  assert.equal(league.game, 'snag');
  assert.equal(league.options.target, 2);
  assert.deepEqual(league.clock, { move_seconds: 48 * 3600, policy: 'forfeit' });
  assert.deepEqual(league.points, [3, 1]);
  assert.equal(league.organizer, olga.id);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the organiser joins, invites by number, withdraws an invitation; players accept, decline and join', async () => {
  assert.ok(league, 'the league exists');
  const mk = async name => { const p = await ok(base, 'POST', '/v1/players', { name }); return p; };
  [pia, quinn, rex] = [await mk('pia'), await mk('quinn'), await mk('rex')];
  const sam = await mk('sam'), tom = await mk('tom');

  const page = await newPage(olga.token);
  page.on('dialog', dlg => dlg.accept());
  await page.goto(`${base}/leagues/${league.id}`);
  await page.locator('#you-organise').waitFor();
  assert.match(await text(page, '#you-state'), /not play/);
  await axeClean(page, 'a new league, its organiser');
  // The organiser plays too: join by keyboard; the focus goes to the panel's heading.
  await tabTo(page, '#join');
  await page.keyboard.press('Enter');
  await statusSays(page, /You joined Friday Snag/);
  await page.locator('#leave').waitFor();
  assert.equal(await focusedId(page), 'you-h');

  // Invite pia by typing her number and Enter; then the others. An unknown number is refused.
  for (const p of [pia, quinn, sam, tom]) {
    await page.fill('#invite-player', String(p.id));
    await page.focus('#invite-player');
    await page.keyboard.press('Enter');
    await statusSays(page, new RegExp(p.name + ' is invited'));
    assert.equal(await focusedId(page), 'invite-player', 'the focus stays in the field');
    assert.equal(await page.inputValue('#invite-player'), '');
  }
  await page.fill('#invite-player', '9999');
  await page.click('#invite-button');
  await page.waitForFunction(() => /9999/.test(document.getElementById('league-error').textContent));
  assert.equal(await page.locator(`#invited-list [data-player]`).count(), 4);
  await axeClean(page, 'organising: invitations waiting, a refusal');
  // sam's invitation is withdrawn; the focus waits on the invitations' heading.
  await page.click(`#withdraw-${sam.id}`);
  await statusSays(page, /Invitation of sam withdrawn/);
  assert.equal(await focusedId(page), 'invited-h');
  assert.deepEqual((await ok(base, 'GET', `/v1/leagues/${league.id}`)).invited.map(m => m.id).sort(), [pia.id, quinn.id, tom.id].sort());

  // pia finds the invitation on her own page, follows it, and accepts by keyboard there.
  const pp = await newPage(pia.token);
  await pp.goto(`${base}/me`);
  const inv = pp.locator(`#my-leagues [data-league="${league.id}"]`);
  await inv.waitFor();
  assert.match(await inv.textContent(), /invited to Friday Snag/);
  await axeClean(pp, 'my matches with a league invitation');
  await shots(pp, 'me-leagues');
  await inv.locator('a').click();
  await pp.waitForURL(`${base}/leagues/${league.id}`);
  await pp.locator('#accept-league').waitFor();
  assert.match(await text(pp, '#you-state'), /invited/);
  assert.equal(await pp.locator('#organise').count(), 0, 'only the organiser organises');
  await axeClean(pp, 'a league, invited');
  await shots(pp, 'league-invited');
  await tabTo(pp, '#accept-league');
  await pp.keyboard.press('Space');
  await statusSays(pp, /You joined Friday Snag/);
  assert.match(await text(pp, '#you-state'), /member/);
  assert.equal(await focusedId(pp), 'you-h');
  await axeClean(pp, 'a league, a member');
  assert.deepEqual(pp.errors, []);

  await pp.goto(`${base}/me`);
  await pp.locator(`#my-leagues [data-league="${league.id}"]`).waitFor();
  assert.match(await pp.locator(`#my-leagues [data-league="${league.id}"]`).textContent(), /you play in it/);
  await pp.close();

  // quinn declines on her own page (the focus waits on the leagues' heading); tom on the league's.
  const qp = await newPage(quinn.token);
  await qp.goto(`${base}/me`);
  await qp.locator(`#league-decline-${league.id}`).click();
  await qp.waitForFunction(() => /Your leagues \(0\)/.test(document.getElementById('leagues-h').textContent));
  assert.equal(await focusedId(qp), 'leagues-h');
  assert.deepEqual(qp.errors, []);
  await qp.close();
  const tp = await newPage(tom.token);
  await tp.goto(`${base}/leagues/${league.id}`);
  await tp.locator('#decline-league').click();
  await statusSays(tp, /Invitation declined/);
  await tp.locator('#join').waitFor();   // outside now, and free to join
  assert.deepEqual(tp.errors, []);
  await tp.close();

  // rex, never invited, joins by himself; a signed-out reader is asked to sign in.
  const anon = await newPage();
  await anon.goto(`${base}/leagues/${league.id}`);
  await anon.locator('#you a[href="/account"]').waitFor();
  await axeClean(anon, 'a league, signed out');
  await anon.evaluate(t => localStorage.setItem('cardpost-token', t), rex.token);
  await anon.reload();
  await anon.locator('#join').click();
  await statusSays(anon, /You joined/);
  await anon.close();

  const lg = await ok(base, 'GET', `/v1/leagues/${league.id}`);
  assert.deepEqual(lg.members.filter(m => !m.left_at).map(m => m.name).sort(), ['olga', 'pia', 'rex']);
  assert.deepEqual(lg.invited, []);
  // (the pages of one browser share localStorage: olga signs in again)
  await page.evaluate(t => localStorage.setItem('cardpost-token', t), olga.token);
  await page.reload();
  await page.locator('#member-list [data-player]').first().waitFor();
  assert.equal(await page.locator('#member-list [data-player]').count(), 3);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the organiser schedules a round: the matches show; one played to the end moves the standings; a member leaves', async () => {
  assert.ok(rex, 'the members are in');
  const page = await newPage(olga.token);
  page.on('dialog', dlg => dlg.accept());
  await page.goto(`${base}/leagues/${league.id}`);
  await page.locator('#schedule-button').waitFor();
  // By keyboard: Tab to the rounds, type 1, Enter.
  await tabTo(page, '#rounds');
  await page.keyboard.type('1');
  await page.keyboard.press('Enter');
  await statusSays(page, /3 matches scheduled/);
  assert.equal(await focusedId(page), 'rounds', 'the focus stays where it was');
  await page.locator('#active [data-match]').nth(2).waitFor();
  const lg = await ok(base, 'GET', `/v1/leagues/${league.id}`);
  assert.equal(lg.matches.length, 3);
  for (const m of lg.matches) {
    assert.equal(m.status, 'active');
    assert.equal(await page.locator(`#active [data-match="${m.id}"]`).count(), 1);
  }
  await axeClean(page, 'organising: a round scheduled');
  await shots(page, 'league-organise');

  // olga and pia play theirs to the end (through the API, for speed).
  const tokens = { [olga.id]: olga.token, [pia.id]: pia.token, [rex.id]: rex.token };
  const op = lg.matches.find(m => m.players.every(p => p.id === olga.id || p.id === pia.id));
  const end = await playRandom(base, op.id, op.players.map(p => tokens[p.id]), rand);
  assert.equal(end.status, 'finished');
  await page.reload();
  await page.locator(`#finished [data-match="${op.id}"]`).waitFor();
  const st = (await ok(base, 'GET', `/v1/leagues/${league.id}/standings`)).standings;
  const played = Object.fromEntries(st.map(s => [s.name, s.played]));
  assert.deepEqual(played, { olga: 1, pia: 1, rex: 0 });
  const winner = st[0];
  assert.equal(winner.points, 3, 'the first place gets the league\'s 3 points');
  const rows = await page.locator('#standings tbody tr').evaluateAll(trs => trs.map(tr =>
    [...tr.children].map(c => c.textContent)));
  assert.deepEqual(rows.map(r => [r[1], r[2], r[6]]), st.map(s => [s.name, String(s.played), String(s.points)]));
  await axeClean(page, 'a league with a finished match');
  assert.deepEqual(page.errors, []);
  await page.close();

  // rex leaves: his two running matches are resigned, and the standings count them.
  const rp = await newPage(rex.token);
  rp.on('dialog', dlg => dlg.accept());
  await rp.goto(`${base}/leagues/${league.id}`);
  await rp.locator('#leave').click();
  await statusSays(rp, /You left Friday Snag; 2 running matches were resigned/);
  await rp.locator('#join').waitFor();
  const after = Object.fromEntries((await ok(base, 'GET', `/v1/leagues/${league.id}/standings`)).standings.map(s => [s.name, s]));
  assert.equal(after.rex.played, 2);
  assert.equal(after.rex.lost, 2);
  assert.equal(await rp.locator('#active [data-match]').count(), 0, 'nothing is left running');
  assert.deepEqual(rp.errors, []);
  await rp.close();
});

test('the organiser removes a member: their running matches are resigned', async () => {
  assert.ok(pia, 'the members are in');
  const page = await newPage(olga.token);
  page.on('dialog', dlg => dlg.accept());
  await page.goto(`${base}/leagues/${league.id}`);
  await page.locator('#schedule-button').waitFor();
  await page.fill('#rounds', '1');
  await page.click('#schedule-button');
  await statusSays(page, /1 match scheduled/);
  const running = (await ok(base, 'GET', `/v1/leagues/${league.id}`)).matches.filter(m => m.status === 'active');
  assert.equal(running.length, 1, 'olga and pia have a match running');
  assert.equal(await page.locator(`#remove-${olga.id}`).count(), 0, 'the organiser leaves, not removes, themself');
  await page.locator(`#remove-${pia.id}`).waitFor();
  await axeClean(page, 'organising: members to remove');
  await page.click(`#remove-${pia.id}`);
  await statusSays(page, /pia was removed from Friday Snag; 1 running match was resigned/);
  assert.equal(await focusedId(page), 'members-h');
  const lg = await ok(base, 'GET', `/v1/leagues/${league.id}`);
  assert.deepEqual(lg.members.filter(m => !m.left_at).map(m => m.name), ['olga']);
  assert.equal(lg.matches.filter(m => m.status === 'active').length, 0, 'her match was resigned');
  assert.equal(await page.locator('#member-list [data-player]').count(), 1);
  await axeClean(page, 'organising: a member removed');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the front page marks the leagues the signed-in player organises; my matches lists them', async () => {
  const other = await ok(base, 'POST', '/v1/leagues', { name: 'Not mine', game: 'speed' }, pia.token);
  const page = await newPage(olga.token);
  await page.goto(base + '/');
  await page.locator(`#leagues [data-league="${league.id}"] .badge.you`).waitFor();
  assert.equal(await page.locator(`#leagues [data-league="${other.id}"] .badge.you`).count(), 0);
  await axeClean(page, 'the leagues, signed in');
  await page.goto(base + '/me');
  const mine = page.locator(`#my-leagues [data-league="${league.id}"]`);
  await mine.waitFor();
  assert.match(await mine.textContent(), /you organise it and you play in it/);
  assert.equal(await page.locator(`#my-leagues [data-league="${other.id}"]`).count(), 0);
  assert.equal((await req(base, 'GET', '/leagues/new')).status, 200);
  assert.deepEqual(page.errors, []);
  await page.close();
});
