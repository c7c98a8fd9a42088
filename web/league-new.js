// league-new.js - /leagues/new: a signed-in player creates a league (POST /v1/leagues): its
// name, game, the game's options (table size, target, Hearts' moon rule), the clock of its
// matches and the league points by place; then goes to the new league's page, where they
// invite players and schedule rounds (league.js). The fields follow the game chosen.
'use strict';
(() => {
  const { el, api } = cp;
  const content = document.getElementById('content');
  const errorBox = document.getElementById('error');
  const fail = e => { errorBox.textContent = e.message || String(e); };

  // What each game takes (docs/rules/<game>.md "Options"): the table sizes (null: always
  // 2) and the default table size and target; realtime games have no clock by default.
  const GAMES = {
    hearts: { label: 'Hearts', seats: [3, 6], defSeats: 4, target: 100, moon: true },
    'horse-thief': { label: 'Horse Thief', seats: [3, 10], defSeats: 5, target: 15 },
    horseshoe: { label: 'Horseshoe', seats: null, defSeats: 2, target: 11 },
    snag: { label: 'Snag', seats: null, defSeats: 2, target: 50 },
    speed: { label: 'Speed (real time)', seats: null, defSeats: 2, target: 1, realtime: true },
  };

  const field = (id, label, control, hint) => el('p.field', { id: id + '-row' },
    el('label', { for: id, text: label }), control,
    hint ? el('span.muted.hint', { id: id + '-hint', text: hint }) : null);
  const input = (id, attrs) => el('input', { id, name: id, ...attrs });
  const select = (id, options) => el('select', { id, name: id },
    options.map(([v, t]) => el('option', { value: v, text: t })));

  function form() {
    const game = select('game', Object.entries(GAMES).map(([k, g]) => [k, g.label]));
    const seats = input('seats', { type: 'number', inputmode: 'numeric', 'aria-describedby': 'seats-hint' });
    const target = input('target', { type: 'number', min: 1, inputmode: 'numeric', 'aria-describedby': 'target-hint' });
    const moon = select('moon', [['add', 'add 26 to the others'], ['subtract', 'subtract 26 from the shooter'], ['choose', 'the shooter chooses']]);
    const clock = select('clock', [['default', 'the default (72 hours a move)'], ['custom', 'hours a move of my choice'], ['none', 'no clock']]);
    const hours = input('hours', { type: 'number', min: 1, max: 8784, value: 24, inputmode: 'numeric' });
    const policy = select('policy', [['auto', 'the service plays a move for them'], ['forfeit', 'they resign the match']]);
    const points = input('points', { type: 'text', inputmode: 'decimal', autocomplete: 'off', 'aria-describedby': 'points-hint' });
    const custom = el('fieldset.clock-custom', { id: 'clock-custom' }, el('legend', { text: 'the clock' }),
      field('hours', 'hours a move', hours), field('policy', 'when a player runs out of time', policy));

    // The fields that depend on the game: shown, hidden, their defaults in the hints.
    function follow() {
      const g = GAMES[game.value];
      const n = g.seats ? Number(seats.value) || g.defSeats : 2;
      document.getElementById('seats-row').hidden = !g.seats;
      if (g.seats) {
        seats.min = g.seats[0]; seats.max = g.seats[1];
        document.getElementById('seats-hint').textContent = g.seats[0] + ' to ' + g.seats[1] + '; ' + g.defSeats + ' if left empty';
      }
      document.getElementById('target-hint').textContent = (game.value === 'speed' ? 'games to win' : 'the score that ends a match') + '; ' + g.target + ' if left empty';
      document.getElementById('moon-row').hidden = !g.moon;
      const def = [];
      for (let i = 0; i < n; i++) def.push(n - 1 - i);
      document.getElementById('points-hint').textContent = 'for 1st, 2nd, \u2026 place, separated by commas; ' + def.join(', ') + ' if left empty';
      clock.options[0].text = g.realtime ? 'the default (none: real time)' : 'the default (72 hours a move)';
      custom.hidden = clock.value !== 'custom';
    }
    game.addEventListener('change', follow);
    seats.addEventListener('input', follow);
    clock.addEventListener('change', follow);

    const f = el('form', { id: 'new-league', onsubmit: async ev => {
      ev.preventDefault();
      errorBox.textContent = '';
      const g = GAMES[game.value];
      const body = { name: document.getElementById('name').value.trim(), game: game.value, options: {} };
      if (g.seats && seats.value) body.options.seats = Number(seats.value);
      if (target.value) body.options.target = Number(target.value);
      if (g.moon && moon.value !== 'add') body.options.moon = moon.value;
      if (clock.value === 'none') body.clock = null;
      if (clock.value === 'custom') body.clock = { move_seconds: Math.round(Number(hours.value) * 3600), policy: policy.value };
      if (points.value.trim()) body.points = points.value.split(',').map(s => Number(s.trim()));
      try {
        const l = await api('/v1/leagues', { method: 'POST', auth: true, body });
        location.assign('/leagues/' + l.id);
      } catch (err) { fail(err); }
    } },
    field('name', 'name', input('name', { required: true, maxlength: 100, autocomplete: 'off' })),
    field('game', 'game', game),
    field('seats', 'players at a table', seats, ' '),
    field('target', 'target', target, ' '),
    field('moon', 'shooting the moon', moon),
    field('clock', 'clock for every match', clock),
    custom,
    field('points', 'league points by place', points, ' '),
    el('button', { type: 'submit', id: 'create', text: 'create the league' }));
    content.replaceChildren(
      el('p', { text: 'You will organise it: invite players (or let them join), then schedule rounds from its page.' }), f);
    follow();
  }

  async function draw() {
    if (!cp.token()) {
      content.replaceChildren(el('p', 'To create a league, ', el('a', { href: '/account', text: 'sign up or sign in' }), ' first.'));
      return;
    }
    try { await api('/v1/players/me', { auth: true }); }
    catch (e) {
      if (e.status === 401) { cp.setToken(''); return draw(); }
      throw e;
    }
    form();
  }
  draw().catch(fail);
})();
