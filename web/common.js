// common.js - shared by the cardpost pages (index, league, match): the API client, the
// player's token (localStorage only, never in a URL), element building and cards drawn with
// rank and suit symbol. Loaded before the page's own script; defines the global `cp`.
'use strict';
const cp = (() => {
  const TOKEN_KEY = 'cardpost-token';
  const SUITS = { C: '\u2663', D: '\u2666', H: '\u2665', S: '\u2660' };
  const SUIT_NAMES = { C: 'clubs', D: 'diamonds', H: 'hearts', S: 'spades' };
  const CARD_RE = /^[2-9TJQKA][CDHS]$/;

  function token() { try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; } }
  function setToken(t) { if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY); }

  // GET/POST JSON; `auth` adds the stored token. Throws an Error carrying the problem's
  // status, code and detail on a non-2xx answer.
  async function api(path, { method = 'GET', body, auth = false } = {}) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (auth && token()) headers.Authorization = 'Bearer ' + token();
    const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (!r.ok) {
      const err = new Error((data && (data.detail || data.title)) || ('HTTP ' + r.status));
      err.status = r.status; err.code = data && data.code;
      throw err;
    }
    return data;
  }

  // el('div.a.b', {attrs}, children...): a small hyperscript. Attributes starting with
  // "on" are listeners; `text` sets textContent.
  function el(spec, attrs, ...kids) {
    const [tag, ...classes] = spec.split('.');
    const e = document.createElement(tag || 'div');
    if (classes.length) e.className = classes.join(' ');
    if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) { kids.unshift(attrs); attrs = null; }
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'text') e.textContent = v;
      else if (k === 'class') { const c = String(v).split(' ').filter(Boolean); if (c.length) e.classList.add(...c); }
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }

  function isCard(s) { return typeof s === 'string' && CARD_RE.test(s); }
  function cardIndex(c) { return 'CDHS'.indexOf(c[1]) * 13 + '23456789TJQKA'.indexOf(c[0]); }
  function rankText(c) { return c[0] === 'T' ? '10' : c[0]; }
  function cardName(c) { return rankText(c) + SUITS[c[1]]; }
  const RANK_NAMES = { J: 'jack', Q: 'queen', K: 'king', A: 'ace' };
  // The card's name for a screen reader: "7 of clubs", "queen of spades".
  function cardSpoken(c) { return (RANK_NAMES[c[0]] || rankText(c)) + ' of ' + SUIT_NAMES[c[1]]; }

  // A face-up card: rank and suit symbol in the corner and a big suit in the middle; named
  // for a screen reader ("7 of clubs"; match.js makes a card a move may name a button).
  function card(c, extra) {
    const red = c[1] === 'H' || c[1] === 'D';
    const e = el('span.card.' + (red ? 'red' : 'black'),
      { title: cardSpoken(c), dataset: { card: c } },
      el('span.visually-hidden', { text: cardSpoken(c) }),
      el('span.rank', { 'aria-hidden': 'true', text: rankText(c) }), el('span.suit', { 'aria-hidden': 'true', text: SUITS[c[1]] }),
      el('span.pip', { 'aria-hidden': 'true', text: SUITS[c[1]] }));
    if (extra) e.classList.add(...extra.split(' ').filter(Boolean));
    return e;
  }
  function back(title) { return el('span.card.back', { title: title || 'face-down card', role: 'img', 'aria-label': title || 'face-down card' }); }
  // A row of face-up cards, or `count` backs when the cards are not shown.
  function cards(list, count, label) {
    if (Array.isArray(list)) return el('span.cards', list.length ? list.map(c => card(c)) : el('span.muted', { text: 'none' }));
    const n = count || 0;
    const said = n + ' face-down card' + (n === 1 ? '' : 's') + (label ? ' ' + label : '');
    const row = el('span.cards.backs', { title: said, role: 'img', 'aria-label': said });
    for (let i = 0; i < Math.min(n, 17); i++) row.append(el('span.card.back', { 'aria-hidden': 'true' }));
    row.append(el('span.count', { 'aria-hidden': 'true', text: '\u00d7' + n }));
    return row;
  }

  // Cards nobody saw during the match (the stock, unused cards): backs with a count, or
  // once shown, folded away under their label.
  function pile(label, list, count) {
    if (!Array.isArray(list)) return el('span.sub', el('span.k', { text: label }), cards(null, count));
    return el('details.pile-list', el('summary', { text: label + ' (' + list.length + ')' }), cards(list));
  }

  // The token form in the header: sign in once, kept in localStorage.
  function tokenBox(onChange) {
    const box = document.getElementById('signin');
    if (!box) return;
    async function draw() {
      box.replaceChildren();
      if (token()) {
        let who = 'player';
        try { const me = await api('/v1/players/me', { auth: true }); who = me.name + ' (#' + me.id + ')'; }
        catch (e) { if (e.status === 401) { setToken(''); return draw(); } }
        box.append(el('span.who', { id: 'whoami', text: 'signed in as ' + who }), ' ',
          el('button.link', { type: 'button', id: 'signout', text: 'sign out', onclick: () => { setToken(''); draw(); onChange && onChange(); } }));
      } else {
        const input = el('input', { type: 'password', id: 'token', name: 'token', placeholder: 'player token (cpt_\u2026)', autocomplete: 'off', 'aria-label': 'player token' });
        box.append(el('form', { id: 'signin-form', onsubmit: ev => { ev.preventDefault(); const t = input.value.trim(); if (t) { setToken(t); draw(); onChange && onChange(); } } },
          input, el('button', { type: 'submit', text: 'sign in' })));
      }
    }
    draw();
  }

  function fmtTime(secs) { return secs ? new Date(secs * 1000).toLocaleString() : ''; }
  function idFromPath() { const m = location.pathname.match(/\/(\d+)\/?$/); return m ? Number(m[1]) : null; }
  function showError(where, e) { where.replaceChildren(el('p.error', { text: e.message || String(e) })); }
  function names(players) { const n = []; for (const p of players || []) n[p.seat] = p.name; return n; }

  return { api, el, card, back, cards, pile, isCard, cardIndex, cardName, cardSpoken, token, setToken, tokenBox, fmtTime, idFromPath, showError, names, SUITS };
})();
