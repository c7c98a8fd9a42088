// me.js - /me: the signed-in player's matches (GET /v1/players/me/matches): those waiting for
// the player first with their deadline counting down, pending invitations with accept and
// decline, the others in progress, then the recently finished. Live: the player's own stream
// of all their matches (/v1/players/me/events, opened with a single-use stream ticket, since
// EventSource cannot send the token) re-reads the list when one of them moves, starts or
// ends, and a 30 s refresh catches new invitations and leagues; the tab's title counts the
// matches waiting for the player. Before the
// finished matches, the player's leagues (GET /v1/players/me/leagues): invitations to accept
// (by joining) or decline first, then those they play in or organise.
'use strict';
(() => {
  const { el, api } = cp;
  const content = document.getElementById('content');
  const errorBox = document.getElementById('error');
  const fail = e => { errorBox.textContent = e.message || String(e); };
  let me = null, timer = null, pending = null, es = null, opening = false;

  function left(ms) {
    if (ms <= 0) return 'time is up';
    const s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    return (d ? d + 'd ' : '') + (d || h ? h + 'h ' : '') + m + 'm ' + (s % 60) + 's left';
  }
  function tick() {
    for (const e of document.querySelectorAll('.countdown[data-until]')) e.textContent = left(Number(e.dataset.until) - Date.now());
  }
  const mySeat = m => { const p = (m.players || []).find(p => p.id === me.id); return p ? p.seat : -1; };
  const others = m => (m.players || []).filter(p => p.id !== me.id).map(p => p.name).join(', ') || 'nobody';
  function place(m) {
    const r = m.result || {}, seat = mySeat(m);
    const i = (r.ranking || []).findIndex(g => g.includes(seat));
    return i >= 0 ? ', your place: ' + (i + 1) : '';
  }
  const link = m => el('a', { href: '/matches/' + m.id, text: m.game + ' #' + m.id });

  function item(m, extra) {
    return el('li', { dataset: { match: m.id }, class: extra && extra.cls },
      link(m), ' with ', others(m), m.league ? ' (league #' + m.league + ')' : '', ' ', extra && extra.kids);
  }

  async function answer(m, verb) {
    errorBox.textContent = '';
    try { await api('/v1/matches/' + m.id + '/' + verb, { method: 'POST', auth: true }); }
    catch (e) { fail(e); }
    refresh();
  }

  async function answerLeague(l, join) {
    errorBox.textContent = '';
    const path = '/v1/leagues/' + l.id + '/members';
    try { await api(join ? path : path + '/' + me.id, { method: join ? 'POST' : 'DELETE', auth: true, body: join ? {} : undefined }); }
    catch (e) { fail(e); }
    refresh();
  }
  function leaguesSection(leagues) {
    const link = l => el('a', { href: '/leagues/' + l.id, text: l.name });
    const items = leagues.map(l => l.invited
      ? el('li.yours', { dataset: { league: l.id } }, 'invited to ', link(l), ' (' + l.game + ', ' + l.members + ' member' + (l.members === 1 ? '' : 's') + ') ',
        el('button', { type: 'button', id: 'league-accept-' + l.id, text: 'accept', 'aria-label': 'accept the invitation to ' + l.name, onclick: () => answerLeague(l, true) }), ' ',
        el('button', { type: 'button', id: 'league-decline-' + l.id, text: 'decline', 'aria-label': 'decline the invitation to ' + l.name, onclick: () => answerLeague(l, false) }))
      : el('li', { dataset: { league: l.id } }, link(l), ' (' + l.game + ') ',
        el('span.muted', { text: [l.organizer === me.id ? 'you organise it' : null, l.member ? 'you play in it' : null].filter(Boolean).join(' and ') })));
    return el('section', { id: 'my-leagues', 'aria-labelledby': 'leagues-h' },
      el('h2', { id: 'leagues-h', tabindex: -1, text: 'Your leagues (' + leagues.length + ')' }),
      items.length ? el('ul.own-list', items) : el('p.muted', { text: 'None yet.' }),
      el('p', el('a', { href: '/', text: 'all leagues' }), ' \u00b7 ', el('a', { href: '/leagues/new', id: 'me-new-league', text: 'create a league' })));
  }

  async function load() {
    if (!cp.token()) {
      document.title = 'cardpost: my matches';
      content.replaceChildren(el('p', 'Sign in or sign up on ', el('a', { href: '/account', text: 'your account page' }), ' to see your matches.'));
      return;
    }
    me = me || await api('/v1/players/me', { auth: true });
    const [list, leagues] = await Promise.all([api('/v1/players/me/matches', { auth: true }).then(r => r.matches),
      api('/v1/players/me/leagues', { auth: true }).then(r => r.leagues)]);
    leagues.sort((a, b) => b.invited - a.invited);   // invitations first, else newest first
    const yours = [], invites = [], running = [], done = [];
    for (const m of list) {
      const seat = mySeat(m);
      if (m.status === 'active' && (m.to_move || []).includes(seat)) yours.push(m);
      else if (m.status === 'pending' && m.invitation && m.invitation.waiting_for.includes(seat)) invites.push(m);
      else if (m.status === 'active' || m.status === 'pending') running.push(m);
      else done.push(m);
    }
    // The deadline is in each match's view (the listing has none).
    const views = await Promise.all(yours.map(m => api('/v1/matches/' + m.id, { auth: true }).catch(() => null)));
    const section = (id, title, items, empty) => el('section', { id, 'aria-labelledby': id + '-h' },
      el('h2', { id: id + '-h', tabindex: -1, text: title + ' (' + items.length + ')' }),
      items.length ? el('ul.own-list', items) : el('p.muted', { text: empty }));
    const focused = document.activeElement && document.activeElement.id;  // kept across the redraw
    content.replaceChildren(
      el('p.muted', { text: 'Signed in as ' + me.name + '.' }),
      section('yours', 'Your turn', yours.map((m, i) => {
        const dl = views[i] && views[i].deadline;
        return item(m, { cls: 'yours', kids: [el('a', { href: '/matches/' + m.id, text: 'play' }), ' ',
          dl ? el('span.countdown', { dataset: { until: String(dl * 1000) }, title: 'deadline ' + cp.fmtTime(dl) }) : el('span.muted', { text: 'no clock' })] });
      }), 'Nothing waits for you.'),
      section('invitations', 'Invitations', invites.map(m => item(m, { kids: [
        el('span.muted', { text: 'expires ' + cp.fmtTime(m.invitation.expires_at) + ' ' }),
        el('button', { type: 'button', id: 'accept-' + m.id, text: 'accept', 'aria-label': 'accept ' + m.game + ' #' + m.id, onclick: () => answer(m, 'accept') }), ' ',
        el('button', { type: 'button', id: 'decline-' + m.id, text: 'decline', 'aria-label': 'decline ' + m.game + ' #' + m.id, onclick: () => answer(m, 'decline') })] })),
      'No invitations.'),
      section('running', 'In progress', running.map(m => item(m, { kids: el('span.muted', { text: m.status === 'pending' ? 'waiting for the players to accept' : 'waiting for the others' }) })), 'None.'),
      leaguesSection(leagues),
      section('finished', 'Recently finished', done.slice(0, 20).map(m => item(m, { kids: el('span.muted', { text: m.status === 'cancelled' ? 'cancelled (' + m.cancelled + ')' : 'finished' + place(m) }) })), 'None yet.'));
    // A button that went away with its invitation leaves the focus on the invitations' heading.
    const again = focused && (document.getElementById(focused) || (/^(accept|decline)-/.test(focused) && document.getElementById('invitations-h')) ||
      (/^league-(accept|decline)-/.test(focused) && document.getElementById('leagues-h')));
    if (again) again.focus();
    document.title = (yours.length ? '(' + yours.length + ') ' : '') + 'cardpost: my matches';
    tick();
    follow();
  }

  // The player's stream: any state means the list may have changed. When it drops, the
  // browser's retry would show the spent ticket again; a new one is drawn instead.
  async function follow() {
    if (es || opening || !window.EventSource) return;
    opening = true;
    try {
      const t = await api('/v1/players/me/events/ticket', { method: 'POST', auth: true });
      es = new EventSource(t.events);
      es.addEventListener('state', () => schedule());
      es.onerror = () => { es.close(); es = null; setTimeout(follow, 1000); };
    } catch (e) { setTimeout(follow, 5000); }
    finally { opening = false; }
  }
  // The stream sends every match's state on connecting: coalesce into one re-read.
  function schedule() { if (!pending) pending = setTimeout(() => { pending = null; refresh(); }, 400); }
  function refresh() { return load().catch(fail); }

  refresh();
  setInterval(tick, 1000);
  timer = setInterval(refresh, 30000);
})();
