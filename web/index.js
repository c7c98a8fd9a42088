// index.js - the front page (/): every league from GET /v1/leagues with its game, members
// and active/finished matches, each linking to /leagues/{id}; the leagues the signed-in
// player organises are marked, and a link leads to /leagues/new to create one.
'use strict';
(function () {
  const { api, el } = cp;
  const main = document.getElementById('main');
  async function load() {
    try {
      const data = await api('/v1/leagues');
      const leagues = data.leagues || [];
      let me = null;
      if (cp.token()) { try { me = await api('/v1/players/me', { auth: true }); } catch (e) { me = null; } }
      const list = el('div.league-list', { id: 'leagues' });
      for (const l of leagues) {
        list.append(el('a.league-card', { href: '/leagues/' + l.id, dataset: { league: l.id } },
          el('h2', { text: l.name }),
          me && l.organizer === me.id ? el('span.badge.you', { text: 'you organise it' }) : null,
          el('p.game', { text: l.game + (l.options && l.options.target ? ' \u00b7 to ' + l.options.target : '') }),
          el('dl.stats',
            el('dt', { text: 'members' }), el('dd.members', { text: l.members }),
            el('dt', { text: 'active' }), el('dd.active', { text: l.matches_active }),
            el('dt', { text: 'finished' }), el('dd.finished', { text: l.matches_finished }))));
      }
      main.replaceChildren(el('h1', { text: 'Leagues' }),
        el('a.new-league', { href: '/leagues/new', id: 'new-league', text: 'create a league' }),
        leagues.length ? list : el('p.muted', { id: 'leagues', text: 'No leagues yet.' }));
    } catch (e) {
      main.replaceChildren(el('h1', { text: 'Leagues' }), el('p.error', { text: 'Cannot load the leagues: ' + e.message }));
    }
  }
  cp.tokenBox(load);
  load();
})();
