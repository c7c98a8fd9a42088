// view.js - draws a game view (docs/rules/<game>.md "The view") as a table of seats and a
// centre: one generic layout (each seat's hand as cards or a count of backs, its score
// against the target, the tricks or piles in the middle) with each game's own parts from its
// drawer, web/game-<name>.js (loaded on demand; without one, generic() below). Cards a move
// may name are marked `pickable`; match.js makes them clickable. Defines `cpView`.
'use strict';
const cpView = (() => {
  const { el, card, cards } = cp;
  const pick = c => card(c, 'pickable');
  const pickRow = list => el('span.cards', list.length ? list.map(pick) : el('span.muted', { text: 'none' }));
  const kv = (k, v) => el('span.kv', el('span.k', { text: k }), ' ', el('span.v', v instanceof Node ? v : { text: String(v) }));

  // One trick: plays [{seat, card}] laid out with the seat's name under each card.
  function trick(plays, names, title, winner) {
    return el('div.trick', el('div.trick-title', { text: title }),
      el('div.trick-cards', plays.map(p => el('figure.play', { class: winner === p.seat ? 'won' : null },
        p.pickable ? pick(p.card) : card(p.card), el('figcaption', { text: names[p.seat] || ('seat ' + p.seat) })))));
  }
  function lastTricks(list, names, toPlays) {
    if (!list || !list.length) return el('p.muted', { text: 'no trick yet this hand' });
    const cur = list[list.length - 1];
    const out = [trick(toPlays(cur), names, (cur.winner === null || cur.winner === undefined ? 'trick ' : 'last trick ') + list.length, cur.winner)];
    if (list.length > 1 && (cur.winner === null || cur.winner === undefined)) {
      const prev = list[list.length - 2];
      out.unshift(trick(toPlays(prev), names, 'trick ' + (list.length - 1), prev.winner));
    }
    return el('div.tricks', out);
  }

  // The games' drawers, web/game-<name>.js, each registering itself by the game's name: a
  // drawer returns {info, hand(i), seat(i), centre} for render() to lay out. A game without
  // one is drawn by generic(), so a new game's page works before it has a drawer.
  const drawers = {};
  const loading = {};
  function register(game, drawer) { drawers[game] = drawer; }
  // Loads the drawer of `game` once; resolves when it ran or is known to be missing.
  function load(game) {
    if (drawers[game] || !/^[a-z0-9-]+$/.test(game || '')) return Promise.resolve();
    if (!loading[game]) {
      loading[game] = new Promise(resolve => {
        const s = document.createElement('script');
        s.src = '/assets/game-' + game + '.js';
        s.onload = s.onerror = () => resolve();
        document.head.append(s);
      });
    }
    return loading[game];
  }

  // m: {game, players, totals, target, to_move}, v: the view; opts.you: the viewer's seat.
  function render(m, v, opts = {}) {
    const names = cp.names(m.players);
    const n = m.players.length;
    const g = (drawers[m.game] || generic)(v, { names, n });
    const toMove = new Set(opts.toMove || m.to_move || []);
    const seats = [];
    let mineBox = null;
    for (let i = 0; i < n; i++) {
      const h = g.hand(i);
      const mine = opts.you === i;
      const box = el('section.seat', { class: [mine ? 'me' : '', toMove.has(i) ? 'to-move' : ''].join(' '), dataset: { seat: i },
        'aria-label': (names[i] || ('seat ' + i)) + (mine ? ' (you)' : '') },
        el('header',
          el('span.pname', { text: names[i] || ('seat ' + i) }),
          mine ? el('span.badge.you', { text: 'you' }) : null,
          toMove.has(i) ? el('span.badge.turn', { text: 'to move' }) : null,
          el('span.total', { text: (m.totals ? m.totals[i] : 0) + ' / ' + m.target })),
        h ? el('div.hand', Array.isArray(h.cards) ? pickRow(h.cards) : cards(null, h.count, 'in hand')) : null,
        el('div.extras', g.seat(i)));
      if (mine) mineBox = box; else seats.push(box);
    }
    // The player's own seat (hand) comes first, before the centre: first on a phone's screen.
    return el('div.table', { dataset: { game: m.game, phase: v.phase } },
      el('div.info', el('span.phase', { text: v.phase }), g.info),
      mineBox ? el('div.seats.mine', mineBox) : null,
      el('div.centre', g.centre),
      el('div.seats', seats));
  }
  // Any game's view, readably: the view's plain values, each seat's hand (`hands` or `seats`
  // entries with `cards` or `count`) and its own values (arrays with one entry a seat), the
  // trick in play or the last one (`trick`, `tricks`: cards, or {seat, card} plays), and the
  // whole view folded away below. Cards a move may name are pickable, as in a drawer.
  function generic(v, ctx) {
    const n = ctx.n;
    const plain = x => ['string', 'number', 'boolean'].includes(typeof x);
    const show = x => (cp.isCard(x) ? card(x) : String(x));
    const perSeat = Object.keys(v).filter(k => Array.isArray(v[k]) && v[k].length === n && v[k].every(x => x === null || plain(x)));
    const handOf = i => {
      for (const k of ['hands', 'seats']) {
        const h = Array.isArray(v[k]) ? v[k][i] : null;
        if (h && (Array.isArray(h.cards) || typeof h.count === 'number')) return h;
      }
      return null;
    };
    const tricks = Array.isArray(v.tricks) ? v.tricks : [];
    const t = v.trick && typeof v.trick === 'object' ? v.trick : tricks[tricks.length - 1];
    const list = t && (Array.isArray(t.plays) ? t.plays : Array.isArray(t.cards) ? t.cards : null);
    const plays = (list || []).map((p, k) => (typeof p === 'string'
      ? { card: p, seat: typeof t.leader === 'number' ? (t.leader + k) % n : undefined } : p))
      .filter(p => p && cp.isCard(p.card));
    const trickBox = plays.length ? el('div.trick', el('div.trick-title', { text: 'trick' + (t.number ? ' ' + t.number : '') }),
      el('div.trick-cards', plays.map(p => el('figure.play', { class: t.winner === p.seat && p.seat !== undefined ? 'won' : null },
        pick(p.card), p.seat !== undefined ? el('figcaption', { text: ctx.names[p.seat] || ('seat ' + p.seat) }) : null)))) : null;
    return {
      info: Object.keys(v).filter(k => k !== 'phase' && plain(v[k])).map(k => kv(k.replace(/_/g, ' '), show(v[k]))),
      hand: handOf,
      seat: i => perSeat.map(k => (v[k][i] === null ? null : kv(k.replace(/_/g, ' '), show(v[k][i])))),
      centre: [trickBox, el('details.raw', el('summary', { text: 'the whole view' }), el('pre.raw', { text: JSON.stringify(v, null, 1) }))],
    };
  }
  return { render, register, load, parts: { pick, pickRow, kv, trick, lastTricks } };
})();
