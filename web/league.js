// league.js - /leagues/{id}: the standings (GET /v1/leagues/{id}/standings), the matches in
// progress (whose turn, totals against the target) and the finished ones with their results
// (GET /v1/leagues/{id}). Refreshes every 20 seconds. A signed-in player joins, accepts or
// declines an invitation, or leaves (POST/DELETE /v1/leagues/{id}/members); the organiser
// also invites players, withdraws invitations and schedules rounds (league-manage.js).
'use strict';
(function () {
  const { api, el } = cp;
  const main = document.getElementById('league');
  const id = cp.idFromPath();
  let me = null;            // the signed-in player (GET /v1/players/me), or null
  const COLS = [['rank', '#', 'rank'], ['name', 'player', 'player'], ['played', 'P', 'played'], ['won', 'W', 'won'],
    ['drawn', 'D', 'drawn'], ['lost', 'L', 'lost'], ['points', 'pts', 'points'], ['for', 'for', 'for'],
    ['against', 'against', 'against'], ['rating', 'rating', 'rating']];
  let allColumns = false;   // on a phone, drawn/for/against/rating are hidden until asked for

  function fmtNum(v) { return typeof v === 'number' && !Number.isInteger(v) ? String(Math.round(v * 100) / 100) : String(v); }

  function standingsTable(st) {
    const head = el('tr', COLS.map(([k, t, long]) => el('th', { scope: 'col', class: 'c-' + k },
      t === long ? t : el('abbr', { title: long, text: t }))));
    const rows = (st.standings || []).map(s => el('tr', { dataset: { player: s.player } },
      COLS.map(([k]) => el(k === 'name' ? 'th' : 'td', { class: 'c-' + k, scope: k === 'name' ? 'row' : null, text: fmtNum(s[k]) }))));
    const table = el('table.standings', { id: 'standings', class: allColumns ? 'all' : null }, el('thead', head), el('tbody', rows));
    const toggle = el('button.columns', { type: 'button', id: 'all-columns', 'aria-controls': 'standings', 'aria-pressed': allColumns ? 'true' : 'false',
      text: 'all columns', onclick: () => {
        allColumns = !allColumns;
        table.classList.toggle('all', allColumns);
        toggle.setAttribute('aria-pressed', allColumns ? 'true' : 'false');
      } });
    return [toggle, el('div.table-scroll', { role: 'region', 'aria-label': 'standings', tabindex: '0' }, table)];
  }

  function seatLine(m, names, s) {
    const toMove = (m.to_move || []).includes(s);
    const tot = m.totals ? m.totals[s] : null;
    return el('li', { class: toMove ? 'to-move' : null },
      el('span.pname', { text: names[s] || ('seat ' + s) }),
      toMove ? el('span.badge', { text: 'to move' }) : null,
      tot !== null && tot !== undefined ? el('span.total', { text: tot + ' / ' + m.target }) : null);
  }

  function matchItem(m) {
    const names = cp.names(m.players);
    const seats = (m.players || []).map(p => p.seat);
    const head = el('a.match-link', { href: '/matches/' + m.id, text: 'match #' + m.id });
    if (m.status === 'pending' || m.status === 'cancelled') {
      const waiting = new Set((m.invitation && m.invitation.waiting_for) || []);
      return el('li.match.' + m.status, { dataset: { match: m.id } }, head,
        el('span.turn', { text: m.status === 'pending' ? ' \u00b7 waiting for the players to accept' : ' \u00b7 cancelled (' + (m.cancelled || '') + ')' }),
        el('ul.seats', seats.map(s => el('li', el('span.pname', { text: names[s] }),
          m.status === 'pending' ? el('span', { class: 'badge' + (waiting.has(s) ? ' off' : ''), text: waiting.has(s) ? 'invited' : 'accepted' }) : null))));
    }
    if (m.status === 'active') {
      const turn = (m.to_move || []).map(s => names[s]).join(', ');
      return el('li.match.active', { dataset: { match: m.id } }, head,
        el('span.turn', { text: turn ? ' \u00b7 to move: ' + turn : '' }),
        el('ul.seats', seats.map(s => seatLine(m, names, s))));
    }
    const r = m.result || {};
    const place = [];
    (r.ranking || []).forEach((group, i) => group.forEach(s => { place[s] = i + 1; }));
    const byPlace = seats.slice().sort((a, b) => (place[a] || 99) - (place[b] || 99) || a - b);
    return el('li.match.finished', { dataset: { match: m.id } }, head,
      el('ul.seats', byPlace.map(s => el('li', { class: place[s] === 1 ? 'winner' : null },
        el('span.place', { text: place[s] ? ordinal(place[s]) : '' }),
        el('span.pname', { text: names[s] }),
        el('span.total', { text: String((r.totals || m.totals || [])[s]) }),
        r.resigned !== null && r.resigned !== undefined && (Array.isArray(r.resigned) ? r.resigned.includes(s) : r.resigned === s) ? el('span.badge', { text: 'resigned' }) : null))));
  }
  function ordinal(n) { return n + (n === 1 ? 'st' : n === 2 ? 'nd' : n === 3 ? 'rd' : 'th'); }

  // The page is redrawn every 20 s: a focused button or link keeps the focus.
  function focusKey() {
    const a = document.activeElement;
    if (!a || !main.contains(a)) return null;
    return a.id ? '#' + a.id : a.getAttribute('href') ? 'href:' + a.getAttribute('href') : null;
  }
  function restoreFocus(key) {
    if (!key) return;
    const t = key.startsWith('#') ? document.getElementById(key.slice(1))
      : [...main.querySelectorAll('a[href]')].find(x => x.getAttribute('href') === key.slice(5));
    if (t) t.focus();
  }

  async function load() {
    const key = focusKey();
    try {
      const [lg, st] = await Promise.all([api('/v1/leagues/' + id), api('/v1/leagues/' + id + '/standings'), whoAmI()]);
      document.title = 'cardpost: ' + lg.name;
      const active = (lg.matches || []).filter(m => m.status === 'active' || m.status === 'pending');
      const done = (lg.matches || []).filter(m => m.status !== 'active' && m.status !== 'pending');
      const members = (lg.members || []).filter(m => !m.left_at).map(m => m.name).join(', ') +
        ((lg.invited || []).length ? ' (invited: ' + lg.invited.map(m => m.name).join(', ') + ')' : '');
      main.replaceChildren(
        el('p.crumbs', el('a', { href: '/', text: 'leagues' }), ' \u203a'),
        el('h1', { id: 'league-name', text: lg.name }),
        el('p.game', { text: lg.game + (lg.options && lg.options.target ? ' \u00b7 target ' + lg.options.target : '') + ' \u00b7 members: ' + (members || 'none') }),
        ...cpLeague.panel(lg, me, load).filter(Boolean),
        el('section', el('h2', { text: 'Standings' }), standingsTable(st)),
        el('section', el('h2', { text: 'In progress' }),
          active.length ? el('ul.matches', { id: 'active' }, active.map(matchItem)) : el('p.muted', { id: 'active', text: 'No match in progress.' })),
        el('section', el('h2', { text: 'Finished' }),
          done.length ? el('ul.matches', { id: 'finished' }, done.map(matchItem)) : el('p.muted', { id: 'finished', text: 'No finished match yet.' })));
      restoreFocus(key);
    } catch (e) {
      main.replaceChildren(el('p.crumbs', el('a', { href: '/', text: 'leagues' })), el('p.error', { text: 'Cannot load league ' + id + ': ' + e.message }));
    }
  }
  // The signed-in player, read once per sign-in (the header's form changes it).
  let meFor = null;
  async function whoAmI() {
    const t = cp.token();
    if (t === meFor) return;
    meFor = t;
    me = null;
    if (t) { try { me = await api('/v1/players/me', { auth: true }); } catch (e) { me = null; } }
  }
  cp.tokenBox(() => load());
  load();
  setInterval(load, 20000);
})();
