// account.js - /account: sign up (POST /v1/players), the token shown once with a "keep it"
// step, sign in by pasting a token (kept in localStorage as every page keeps it, cp.token),
// sign out, rotate the token (POST /v1/players/me/token) and confirm the email with its code.
'use strict';
(() => {
  const { el, api } = cp;
  const content = document.getElementById('content');
  const errorBox = document.getElementById('error');
  const fail = e => { errorBox.textContent = e.message || String(e); };
  const clear = () => { errorBox.textContent = ''; };
  const field = (id, label, attrs) => el('p.field', el('label', { for: id, text: label }), el('input', { id, name: id, ...attrs }));

  // The token, shown once: a copy button and a checkbox before going on.
  function showToken(tok, heading, then) {
    clear();
    const box = el('input', { id: 'new-token', readonly: true, value: tok, class: 'token-out' });
    const copied = el('span.muted', { role: 'status' });
    const saved = el('input', { type: 'checkbox', id: 'saved' });
    const go = el('button', { type: 'button', id: 'continue', text: 'continue', disabled: true, onclick: () => { cp.setToken(tok); then(); } });
    saved.addEventListener('change', () => { go.disabled = !saved.checked; });
    content.replaceChildren(el('section.keep',
      el('h2', { text: heading }),
      el('p', { text: 'This is your token: it is shown only now. Keep it somewhere safe (a password manager); it is how you sign in, here and from any bot.' }),
      el('label', { for: 'new-token', text: 'your token' }),
      el('p.token-row', box, ' ', el('button', { type: 'button', id: 'copy', text: 'copy', onclick: async () => {
        box.select();
        try { await navigator.clipboard.writeText(tok); copied.textContent = 'copied'; } catch (e) { copied.textContent = 'select the token and copy it'; }
      } }), ' ', copied),
      el('p', saved, ' ', el('label', { for: 'saved', text: 'I have saved my token' })),
      go));
    box.focus();
  }

  function signedOut() {
    const name = field('name', 'name', { required: true, maxlength: 64, autocomplete: 'nickname' });
    const email = field('email', 'email (optional; we send a code to confirm it)', { type: 'email', autocomplete: 'email' });
    const hook = field('webhook', 'webhook URL (optional)', { type: 'url' });
    const tokenIn = field('signin-token', 'your token', { type: 'password', autocomplete: 'off', required: true });
    content.replaceChildren(
      el('section', el('h2', { text: 'Sign up' }),
        el('form', { id: 'signup', onsubmit: async ev => {
          ev.preventDefault(); clear();
          const body = { name: document.getElementById('name').value.trim() };
          const e = document.getElementById('email').value.trim(), w = document.getElementById('webhook').value.trim();
          if (e) body.email = e;
          if (w) body.webhook_url = w;
          try { const p = await api('/v1/players', { method: 'POST', body }); showToken(p.token, 'Welcome, ' + p.name, draw); }
          catch (err) { fail(err); }
        } }, name, email, hook, el('button', { type: 'submit', text: 'sign up' }))),
      el('section', el('h2', { text: 'Sign in' }),
        el('form', { id: 'signin-page', onsubmit: async ev => {
          ev.preventDefault(); clear();
          const t = document.getElementById('signin-token').value.trim();
          cp.setToken(t);
          try { await api('/v1/players/me', { auth: true }); draw(); }
          catch (err) { cp.setToken(''); fail(err); }
        } }, tokenIn, el('button', { type: 'submit', text: 'sign in' }))));
  }

  async function signedIn() {
    let me;
    try { me = await api('/v1/players/me', { auth: true }); }
    catch (e) { if (e.status === 401) { cp.setToken(''); return signedOut(); } throw e; }
    const parts = [el('p', { id: 'whoami', text: 'Signed in as ' + me.name + ' (#' + me.id + ').' })];
    if (me.email && !me.email_confirmed) {
      parts.push(el('section', el('h2', { text: 'Confirm your email' }),
        el('p', { text: 'We sent a code to ' + me.email + '. Type it here; until then no email goes to that address.' }),
        el('form', { id: 'confirm', onsubmit: async ev => {
          ev.preventDefault(); clear();
          try { await api('/v1/players/me/email/confirm', { method: 'POST', auth: true, body: { code: document.getElementById('code').value.trim() } }); draw(); }
          catch (err) { fail(err); }
        } }, field('code', 'code from the email', { required: true, autocomplete: 'one-time-code' }), el('button', { type: 'submit', text: 'confirm' }))));
    } else if (me.email) {
      parts.push(el('p', { id: 'email-state', text: 'Email ' + me.email + ' is confirmed.' }));
    }
    parts.push(el('section', el('h2', { text: 'Token' }),
      el('p', { text: 'A new token replaces the old one at once: your bots and other browsers must use the new one.' }),
      el('button', { type: 'button', id: 'rotate', text: 'new token', onclick: async () => {
        if (!confirm('Replace your token? The old one stops working now.')) return;
        clear();
        try { const r = await api('/v1/players/me/token', { method: 'POST', auth: true }); showToken(r.token, 'Your new token', draw); }
        catch (err) { fail(err); }
      } })),
      el('p', el('a', { href: '/me', text: 'my matches' }), ' \u00b7 ', el('a', { href: '/settings', text: 'settings' })),
      el('button', { type: 'button', id: 'signout', text: 'sign out', onclick: () => { cp.setToken(''); clear(); draw(); } }));
    content.replaceChildren(...parts);
  }

  function draw() { (cp.token() ? signedIn() : Promise.resolve(signedOut())).catch(fail); }
  draw();
})();
