// account.test.mjs - the player's own pages (issue 17) in Chromium against the real cardpostd
// with a real SMTP relay (tests/peers/smtp_sink.py): sign up with an email, the token shown
// once, the emailed code confirmed, sign out and in, a new token; my matches (whose turn,
// an invitation accepted, the tab's title); settings (a preference, a vacation, a delivery).
// CARDPOST_SCREENSHOTS=DIR also saves desktop and phone screenshots of each page there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startDaemon, startSmtpSink, launch, ok, req, players, overflowX, OPERATOR } from './harness.mjs';

let d, sink, ctx, base, P, me;
const SHOTS = process.env.CARDPOST_SCREENSHOTS;

before(async () => {
  sink = await startSmtpSink();
  d = await startDaemon({ CARDPOST_SMTP_URL: sink.url, CARDPOST_MAIL_FROM: 'cardpost@account.test',
    CARDPOST_ALLOW_PRIVATE_WEBHOOKS: '1' });
  base = d.base;
  ctx = await launch();
  P = await players(base, ['ann', 'bob']);
});
after(async () => {
  if (ctx) await ctx.close_();
  if (d) await d.stop();
  if (sink) await sink.stop();
});

async function newPage(token) {
  const page = await ctx.newPage();
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  await page.goto(base + '/assets/style.css');
  await page.evaluate(t => { localStorage.clear(); if (t) localStorage.setItem('cardpost-token', t); }, token || '');
  return page;
}
async function shots(page, name) {
  if (!SHOTS) return;
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: path.join(SHOTS, name + '-desktop.png'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await overflowX(page), 0, name + ' fits a phone');
  await page.screenshot({ path: path.join(SHOTS, name + '-phone.png'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}
async function until(f, what, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise(r => setTimeout(r, 100));
  }
}
// The code of the newest confirmation email to `address` (quoted-printable soft breaks undone).
function code(address) {
  for (const m of sink.messages().reverse()) {
    if (!m.rcpt_tos.includes(address)) continue;
    const c = m.raw.replace(/=\r?\n/g, '').match(/\b(cpc_[0-9a-f]{32})\b/);
    if (c) return c[1];
  }
  return null;
}

test('sign up with an email: the token shown once, the emailed code confirmed, sign out and in, a new token', async () => {
  const page = await newPage();
  for (const p of ['/me', '/settings']) {
    await page.goto(base + p);
    await page.locator('#content a[href="/account"]').waitFor();  // signed out: sent to sign in
  }
  await page.goto(base + '/account');
  await page.locator('#signup').waitFor();
  await shots(page, 'account-signup');
  // A wrong token is refused with the API's detail (what the API answers the same request).
  const unknown = await req(base, 'GET', '/v1/players/me', undefined, 'cpt_not-a-token');
  assert.equal(unknown.status, 401);
  assert.ok(unknown.body.detail, 'the refusal has a detail');
  await page.fill('#signin-token', 'cpt_not-a-token');
  await page.click('#signin-page button[type=submit]');
  const shown = await until(async () => page.locator('#error[role=alert]').textContent(), 'the error');
  assert.ok(shown.includes(unknown.body.detail), `the error shows the API's detail: ${shown}`);

  await page.fill('#name', 'zoe');
  await page.fill('#email', 'zoe@account.test');
  await page.keyboard.press('Enter');
  const tokenBox = page.locator('#new-token');
  await tokenBox.waitFor();
  const token = await tokenBox.inputValue();
  assert.match(token, /^cpt_/);
  assert.equal(await page.isDisabled('#continue'), true, 'no going on before the token is saved');
  await shots(page, 'account-token');
  await page.focus('#saved');
  await page.keyboard.press('Space');
  await page.click('#continue');
  await page.locator('#confirm').waitFor();
  assert.equal(await page.locator('#new-token').count(), 0, 'the token is shown once');
  assert.equal(await page.evaluate(() => localStorage.getItem('cardpost-token')), token);
  me = await ok(base, 'GET', '/v1/players/me', undefined, token);
  me.token = token;
  assert.equal(me.email_confirmed, false);

  const c = await until(() => code('zoe@account.test'), 'the confirmation email');
  await shots(page, 'account-confirm');
  await page.fill('#code', 'cpc_' + '0'.repeat(32));
  await page.click('#confirm button[type=submit]');
  await until(async () => /code/i.test(await page.locator('#error').textContent()), 'the wrong code refused');
  await page.fill('#code', c);
  await page.click('#confirm button[type=submit]');
  await page.locator('#email-state').waitFor();
  assert.equal((await ok(base, 'GET', '/v1/players/me', undefined, token)).email_confirmed, true);
  await shots(page, 'account');

  await page.click('#signout');
  await page.locator('#signup').waitFor();
  assert.equal(await page.evaluate(() => localStorage.getItem('cardpost-token')), null);
  await page.fill('#signin-token', token);
  await page.keyboard.press('Enter');
  await page.locator('#whoami').waitFor();
  assert.match(await page.locator('#whoami').textContent(), /zoe/);

  page.once('dialog', dlg => dlg.accept());
  await page.click('#rotate');
  await page.locator('#new-token').waitFor();
  const fresh = await page.locator('#new-token').inputValue();
  assert.notEqual(fresh, token);
  await page.check('#saved');
  await page.click('#continue');
  await page.locator('#whoami').waitFor();
  assert.equal((await req(base, 'GET', '/v1/players/me', undefined, token)).status, 401, 'the old token is dead');
  assert.equal(await page.evaluate(() => localStorage.getItem('cardpost-token')), fresh);
  me.token = fresh;
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('my matches: the one waiting for me with its countdown first, an invitation accepted and one declined, the title counts', async () => {
  assert.ok(me, 'signed up');
  // zoe creates a match with bob (seated without asking): it starts; bob moves if he leads.
  const m = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [me.id, P[1].id], clock: { move_seconds: 3600 } }, me.token);
  if (!m.to_move.includes(0)) {
    const bob = await ok(base, 'GET', `/v1/matches/${m.id}`, undefined, P[1].token);
    await ok(base, 'POST', `/v1/matches/${m.id}/moves`, { move: bob.legal[0] }, P[1].token);
  }
  // ann invites zoe (who did not let others seat her without asking).
  const inv = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[0].id, me.id] }, P[0].token);
  assert.equal(inv.status, 'pending');

  const page = await newPage(me.token);
  await page.goto(base + '/me');
  await page.locator(`#yours li[data-match="${m.id}"]`).waitFor();
  await until(async () => (await page.title()).startsWith('(1) '), 'the title counting one match');
  assert.match(await page.locator(`#yours li[data-match="${m.id}"] .countdown`).textContent(), /left/);
  const row = page.locator(`#invitations li[data-match="${inv.id}"]`);
  await row.waitFor();
  await shots(page, 'me');
  await row.getByRole('button', { name: /^accept/ }).focus();
  await page.keyboard.press('Enter');
  await until(async () => (await page.locator(`#invitations li[data-match="${inv.id}"]`).count()) === 0, 'the invitation answered');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'invitations-h', 'the focus stays near the answered invitation');
  const after_ = await ok(base, 'GET', `/v1/matches/${inv.id}`, undefined, me.token);
  assert.equal(after_.status, 'active', 'the match started once zoe accepted');
  // A second invitation, declined.
  const inv2 = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[0].id, me.id] }, P[0].token);
  await page.reload();
  await page.locator(`#invitations li[data-match="${inv2.id}"]`).getByRole('button', { name: /^decline/ }).click();
  await until(async () => (await page.locator(`#invitations li[data-match="${inv2.id}"]`).count()) === 0, 'the invitation declined');
  const gone = await ok(base, 'GET', `/v1/matches/${inv2.id}`, undefined, me.token);
  assert.equal(gone.status, 'cancelled');
  await page.locator(`#finished li[data-match="${inv2.id}"]`, { hasText: 'declined' }).waitFor();
  // A move made elsewhere reaches the page through the player's stream.
  const mine = await ok(base, 'GET', `/v1/matches/${m.id}`, undefined, me.token);
  await ok(base, 'POST', `/v1/matches/${m.id}/moves`, { move: mine.legal[0] }, me.token);
  await page.locator(`#yours li[data-match="${m.id}"]`).waitFor({ state: 'detached', timeout: 10000 });
  // So does a match that starts while the page is open (its 30 s refresh would be too late).
  const fresh = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [me.id, P[0].id] }, OPERATOR);
  await page.locator(`li[data-match="${fresh.id}"]`).waitFor({ timeout: 5000 });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('settings: a preference turned off, a vacation taken and ended, the confirmation email among the deliveries, the attempts of a failing webhook', async () => {
  assert.ok(me, 'signed up');
  const page = await newPage(me.token);
  await page.goto(base + '/settings');
  await page.locator('#pref-email-turn').waitFor();
  await page.focus('#pref-email-turn');
  await page.keyboard.press('Space');
  await until(async () => /saved/.test(await page.locator('#saved-status').textContent()), 'the preference saved');
  const rec = await ok(base, 'GET', '/v1/players/me', undefined, me.token);
  assert.equal(rec.preferences.email.turn, false);
  assert.equal(rec.preferences.webhook.turn, true);
  assert.equal(await page.isChecked('#pref-email-turn'), false);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'pref-email-turn', 'the focus stays on the checkbox');
  // Every type has its row, the league's invitation too; off by a click, saved.
  assert.equal(await page.isChecked('#pref-webhook-league_invitation'), true);
  await page.click('#pref-webhook-league_invitation');
  await until(async () => (await ok(base, 'GET', '/v1/players/me', undefined, me.token)).preferences.webhook.league_invitation === false, 'the league invitation turned off');

  await page.fill('#vacation-days', '2');
  await page.click('#vacation-form button[type=submit]');
  await page.locator('#vacation-end').waitFor();
  assert.equal((await ok(base, 'GET', '/v1/players/me', undefined, me.token)).vacation.on_vacation, true);
  assert.match(await page.locator('#vacation-state').textContent(), /until/);
  await shots(page, 'settings');
  await page.click('#vacation-end');
  await page.locator('#vacation-form').waitFor();
  assert.equal((await ok(base, 'GET', '/v1/players/me', undefined, me.token)).vacation.on_vacation, false);

  const li = page.locator('#deliveries li', { hasText: 'email_confirm' }).first();
  await li.waitFor();
  await li.locator('summary').click();
  assert.match(await li.textContent(), /delivered/);
  // A webhook nobody listens to: the invitation's delivery shows its failed attempt.
  await page.fill('#webhook', 'http://127.0.0.1:9/hook');
  await page.click('#contact button[type=submit]');
  await until(async () => /saved/.test(await page.locator('#saved-status').textContent()), 'the webhook saved');
  assert.equal((await ok(base, 'GET', '/v1/players/me', undefined, me.token)).webhook_url, 'http://127.0.0.1:9/hook');
  const inv = await ok(base, 'POST', '/v1/matches', { game: 'snag', players: [P[1].id, me.id] }, P[1].token);
  await until(async () => {
    const dl = (await ok(base, 'GET', '/v1/players/me/deliveries', undefined, me.token)).deliveries;
    return dl.some(x => x.channel === 'webhook' && x.match === inv.id && x.attempts > 0);
  }, 'the webhook attempted');
  await page.reload();
  const hook = page.locator('#deliveries li', { hasText: 'invitation by webhook' }).first();
  await hook.locator('summary').click();
  assert.match(await hook.locator('ol li').first().textContent(), /failed/);
  assert.match(await hook.textContent(), /last error/);
  const when = (await hook.locator('p.muted').textContent()).split(', webhook-id')[0];
  assert.doesNotMatch(when, /\d{5}/, 'times in milliseconds read as such: ' + when);
  assert.ok(when.includes(String(new Date().getFullYear())), when);
  await shots(page, 'settings-deliveries');
  // A refusal shows the API's detail (what the API answers the same PATCH).
  const refused = await req(base, 'PATCH', '/v1/players/me', { email: 'not an address', webhook_url: 'http://127.0.0.1:9/hook' }, me.token);
  assert.equal(refused.status, 422);
  assert.ok(refused.body.detail, 'the refusal has a detail');
  await page.fill('#email', 'not an address');
  await page.evaluate(() => { document.getElementById('email').type = 'text'; });
  await page.click('#contact button[type=submit]');
  const shown = await until(async () => page.locator('#error').textContent(), 'the refusal shown');
  assert.ok(shown.includes(refused.body.detail), `the error shows the API's detail: ${shown}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});
