// settings.js - /settings: the signed-in player's email and webhook URL (PATCH
// /v1/players/me), the notification preferences per channel and type, vacation (POST/DELETE
// /v1/players/me/vacation, days left this year), the webhook secret, and the last deliveries
// with every attempt (GET /v1/players/me/deliveries) to debug a webhook.
'use strict';
(() => {
  const { el, api } = cp;
  const content = document.getElementById('content');
  const errorBox = document.getElementById('error');
  const TYPES = ['match_started', 'turn', 'reminder', 'timeout', 'match_over', 'invitation', 'league_invitation'];
  const ms = t => new Date(t).toLocaleString();  // the deliveries' times are in milliseconds
  const fail = e => { errorBox.textContent = e.message || String(e); };
  const say = (msg) => { document.getElementById('saved-status').textContent = msg; };
  const field = (id, label, attrs) => el('p.field', el('label', { for: id, text: label }), el('input', { id, name: id, ...attrs }));

  async function patch(body, what) {
    errorBox.textContent = '';
    try { await api('/v1/players/me', { method: 'PATCH', auth: true, body }); await draw(); say(what + ' saved'); }
    catch (e) { fail(e); }
  }

  function prefsTable(me) {
    const p = me.preferences || {};
    const box = (ch, t) => el('input', { type: 'checkbox', id: 'pref-' + ch + '-' + t, checked: !(p[ch] && p[ch][t] === false),
      'aria-label': t.replace('_', ' ') + ' by ' + ch,
      onchange: ev => patch({ preferences: { [ch]: { ...(p[ch] || {}), [t]: ev.target.checked } } }, 'preference') });
    const flag = (k, label) => el('p', el('input', { type: 'checkbox', id: 'pref-' + k, checked: !!p[k],
      onchange: ev => patch({ preferences: { [k]: ev.target.checked } }, 'preference') }), ' ', el('label', { for: 'pref-' + k, text: label }));
    return el('section', el('h2', { text: 'Notifications' }),
      el('table.prefs', el('caption.muted', { text: 'send me, per kind of news' }),
        el('thead', el('tr', el('th', { scope: 'col', text: 'news' }), el('th', { scope: 'col', text: 'email' }), el('th', { scope: 'col', text: 'webhook' }))),
        el('tbody', TYPES.map(t => el('tr', el('th', { scope: 'row', text: t.replace('_', ' ') }), el('td', box('email', t)), el('td', box('webhook', t)))))),
      flag('email_when_watching', 'email me even while I watch the match'),
      flag('seat_without_asking', 'let others seat me in matches and leagues without asking'));
  }

  function vacation(me) {
    const v = me.vacation || {};
    const days = field('vacation-days', 'days', { type: 'number', min: 1, max: Math.max(1, v.days_left || 1), value: 1, required: true });
    return el('section', el('h2', { text: 'Vacation' }),
      el('p', { id: 'vacation-state', text: v.on_vacation ? 'On vacation until ' + cp.fmtTime(v.until) + '. Your clocks stand still.' : 'Not on vacation.' }),
      el('p', { id: 'vacation-left', text: v.days_left + ' days left this year (' + v.days_used + ' used).' }),
      v.on_vacation
        ? el('button', { type: 'button', id: 'vacation-end', text: 'end my vacation', onclick: async () => {
          errorBox.textContent = '';
          try { await api('/v1/players/me/vacation', { method: 'DELETE', auth: true }); await draw(); say('vacation ended'); } catch (e) { fail(e); }
        } })
        : el('form.row', { id: 'vacation-form', onsubmit: async ev => {
          ev.preventDefault(); errorBox.textContent = '';
          try { await api('/v1/players/me/vacation', { method: 'POST', auth: true, body: { days: Number(document.getElementById('vacation-days').value) } }); await draw(); say('vacation started'); }
          catch (e) { fail(e); }
        } }, days, el('button', { type: 'submit', text: 'take a vacation', disabled: !v.days_left })));
  }

  function deliveries(list) {
    return el('section.deliveries', el('h2', { text: 'Last deliveries' }),
      list.length ? el('ul.own-list', { id: 'deliveries' }, list.slice(0, 30).map(d => el('li', { dataset: { delivery: d.id } },
        el('details', el('summary', { text: d.type + ' by ' + d.channel + (d.match ? ', match #' + d.match : '') + ': ' + d.status + ', ' + d.attempts + ' attempt' + (d.attempts === 1 ? '' : 's') }),
          el('p.muted', { text: 'created ' + ms(d.created_at) + (d.delivered_at ? ', delivered ' + ms(d.delivered_at) : '') + (d.next_attempt ? ', next try ' + ms(d.next_attempt) : '') + (d.webhook_id ? ', webhook-id ' + d.webhook_id : '') }),
          d.last_error ? el('p', { text: 'last error: ' + d.last_error }) : null,
          el('ol', (d.attempt_log || []).map(a => el('li', { text: ms(a.at) + ': ' + (a.ok ? 'ok' : 'failed') + (a.status ? ' (' + a.status + ')' : '') + (a.error ? ' ' + a.error : '') + (a.duration_ms !== undefined ? ', ' + a.duration_ms + ' ms' : '') })))))))
        : el('p.muted', { text: 'Nothing sent to you yet.' }));
  }

  async function draw() {
    if (!cp.token()) {
      content.replaceChildren(el('p', 'Sign in on ', el('a', { href: '/account', text: 'your account page' }), ' first.'));
      return;
    }
    const [me, dl] = await Promise.all([api('/v1/players/me', { auth: true }), api('/v1/players/me/deliveries', { auth: true })]);
    const email = field('email', 'email', { type: 'email', value: me.email || '', autocomplete: 'email' });
    const hook = field('webhook', 'webhook URL', { type: 'url', value: me.webhook_url || '' });
    const opt = id => { const v = document.getElementById(id).value.trim(); return v ? v : null; };
    const focused = document.activeElement && document.activeElement.id;  // kept across the redraw
    content.replaceChildren(
      el('p.muted', { id: 'saved-status', role: 'status' }),
      el('section', el('h2', { text: 'Email and webhook' }),
        el('form', { id: 'contact', onsubmit: ev => { ev.preventDefault(); patch({ email: opt('email'), webhook_url: opt('webhook') }, 'email and webhook'); } },
          email, me.email ? el('p.muted', { text: me.email_confirmed ? 'confirmed' : 'not confirmed yet: see your account page for the code' }) : null,
          hook, me.webhook_disabled ? el('p.error', { text: 'webhook disabled' }) : null,
          el('button', { type: 'submit', text: 'save' }))),
      el('section', el('h2', { text: 'Webhook secret' }),
        el('p', { text: 'Verify the webhook-signature header with this secret (Standard Webhooks).' }),
        el('details', el('summary', { text: 'show the secret' }), el('code', { id: 'secret', text: me.webhook_secret || '' }))),
      prefsTable(me), vacation(me), deliveries(dl.deliveries || []));
    const again = focused && (document.getElementById(focused) ||
      document.getElementById(focused === 'vacation-end' ? 'vacation-days' : focused === 'vacation-days' ? 'vacation-end' : ''));
    if (again) again.focus();
  }
  draw().catch(fail);
})();
