// view.js - draws a game view (docs/rules/<game>.md "The view") as a table of seats and a
// centre: one generic layout (each seat's hand as cards or a count of backs, its score
// against the target, the tricks or piles in the middle) with small per-game parts. Cards a
// move may name are marked `pickable`; match.js makes them clickable. Defines `cpView`.
'use strict';
const cpView = (() => {
  const { el, card, back, cards } = cp;
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

  const games = {
    hearts(v, ctx) {
      const n = v.hands.length;
      const plays = t => t.cards.map((c, k) => ({ seat: (t.leader + k) % n, card: c }));
      return {
        info: [kv('hand', v.hand_number), kv('dealer', ctx.names[v.dealer]), kv('passing', v.pass_direction),
          kv('hearts broken', v.hearts_broken ? 'yes' : 'no'), v.moon_shooter !== null && v.moon_shooter !== undefined ? kv('shot the moon', ctx.names[v.moon_shooter]) : null],
        hand: i => v.hands[i],
        seat: i => {
          const p = (v.passes || [])[i];
          return [kv('points this hand', v.points_taken ? v.points_taken[i] : 0),
            p ? el('div.sub', kv('pass to ' + ctx.names[p.to], p.submitted ? 'submitted' : 'pending'), p.cards ? cards(p.cards) : null) : null];
        },
        centre: [lastTricks(v.tricks, ctx.names, plays),
          v.hole && (v.hole.count || v.hole.cards) ? el('div.sub', kv('hole', v.hole.taken_by !== null && v.hole.taken_by !== undefined ? 'taken by ' + ctx.names[v.hole.taken_by] : 'face down'), cards(v.hole.cards, v.hole.count)) : null],
      };
    },
    'horse-thief'(v, ctx) {
      const plays = t => t.plays.map(p => ({ seat: p.seat, card: p.card }));
      return {
        info: [kv('hand', v.hand_number), kv('dealer', ctx.names[v.dealer]), kv('trump', v.trump ? cp.SUITS[v.trump] : '-'),
          v.turn_up ? kv('turn-up', el('span', card(v.turn_up), v.turn_up_taken ? ' (taken)' : '')) : null, kv('draw limit', v.draw_limit)],
        hand: i => v.seats[i],
        seat: i => {
          const s = v.seats[i];
          return [kv('tricks', s.tricks_taken),
            s.choice ? kv('chose', s.choice) : null,
            s.staying === true ? el('span.badge', { text: 'staying' }) : s.staying === false ? el('span.badge.off', { text: 'dropped' }) : null,
            s.submitted ? el('span.badge', { text: 'submitted' }) : null,
            s.discard ? el('div.sub', kv('discard', ''), cards(s.discard)) : s.discarded !== null && s.discarded !== undefined ? kv('discarded', s.discarded) : null];
        },
        centre: [lastTricks(v.tricks, ctx.names, plays), cp.pile('stock', v.stock.cards, v.stock.count)],
      };
    },
    horseshoe(v, ctx) {
      const board = i => {
        const b = (v.boards || [])[i];
        if (!b) return null;
        return el('div.board', b.columns.map(c => el('div.column',
          el('span.colno', { text: c.column }),
          c.face_down ? (c.face_down_card ? card(c.face_down_card, 'under') : back('face-down card')) : null,
          c.up ? pick(c.up) : el('span.card.empty'))));
      };
      return {
        info: [kv('hand', v.hand_number), kv('dealer', ctx.names[v.dealer]), v.to_play !== null ? kv('to play', ctx.names[v.to_play]) : null],
        hand: i => v.hands[i],
        seat: i => [kv('tricks won', v.tricks_won ? v.tricks_won[i] : 0), board(i)],
        centre: [v.trick && v.trick.cards.length ? trick(v.trick.cards, ctx.names, 'trick ' + v.trick.number)
          : lastTricks(v.tricks, ctx.names, t => t.cards),
        cp.pile('unused', v.unused.cards, v.unused.count)],
      };
    },
    snag(v, ctx) {
      const t = v.trick;
      const onTable = new Set(t ? t.on_table || [] : []);
      return {
        info: [kv('hand', v.hand_number), kv('dealer', ctx.names[v.dealer]), v.leader !== null ? kv('leader', ctx.names[v.leader]) : null,
          v.last_hand_scores ? kv('last hand', v.last_hand_scores.join(' : ')) : null],
        hand: i => v.hands[i],
        seat: i => [el('div.sub', kv('taken', ''), cards((v.taken || [])[i] || []))],
        centre: [
          el('div.bar', el('div.trick-title', { text: 'bar' }), el('div.trick-cards', (v.bar || []).map(b => el('figure.play', pick(b.card), el('figcaption', { text: 'slot ' + b.slot }))))),
          t ? trick(t.cards.map(p => ({ seat: p.seat, card: p.card, pickable: onTable.has(p.card) })), ctx.names, 'trick ' + t.number, t.winner) : null,
          t && t.takes && t.takes.length ? el('div.sub', kv('taken so far', t.takes.map(x => ctx.names[x.seat] + ' ' + cp.cardName(x.card)).join(', '))) : null,
          cp.pile('unused', v.unused.cards, v.unused.count)],
      };
    },
    speed(v, ctx) {
      const tri = i => {
        const t = v.triangles[i];
        return el('div.board.triangle', t.columns.map((c, k) => el('div.column',
          el('span.colno', { text: k + 1 }),
          // Once over, `cards` lists the column bottom to top, its top included.
          c.cards ? c.cards.slice(0, c.face_up ? -1 : undefined).map(x => card(x, 'under')) :
            [...Array(Math.max(0, c.count - (c.face_up ? 1 : 0)))].map(() => back()),
          c.face_up && c.top ? pick(c.top) : c.count === 0 ? el('span.card.empty') : null)));
      };
      return {
        info: [kv('game', v.game_number), kv('dealer', ctx.names[v.dealer]), kv('next draw', ctx.names[v.next_drawer]), kv('reshuffles', v.shuffles)],
        hand: () => null,
        seat: i => [kv('cards left', v.triangles[i].count), v.ready[i] ? el('span.badge', { text: 'ready' }) : null, tri(i)],
        centre: [el('div.piles',
          el('div.pile', el('div.trick-title', { text: 'pile (' + v.pile.count + ')' }), v.pile.top ? card(v.pile.top) : el('span.card.empty')),
          el('div.pile', el('div.trick-title', { text: 'deck (' + v.deck.count + ')' }), v.deck.count ? back('deck') : el('span.card.empty'))),
        v.deck.cards ? cp.pile('deck', v.deck.cards) : null],
      };
    },
  };

  // m: {game, players, totals, target, to_move}, v: the view; opts.you: the viewer's seat.
  function render(m, v, opts = {}) {
    const names = cp.names(m.players);
    const n = m.players.length;
    const g = (games[m.game] || generic)(v, { names });
    const toMove = new Set(opts.toMove || m.to_move || []);
    const seats = [];
    for (let i = 0; i < n; i++) {
      const h = g.hand(i);
      const mine = opts.you === i;
      seats.push(el('section.seat', { class: [mine ? 'me' : '', toMove.has(i) ? 'to-move' : ''].join(' '), dataset: { seat: i } },
        el('header',
          el('span.pname', { text: names[i] || ('seat ' + i) }),
          mine ? el('span.badge.you', { text: 'you' }) : null,
          toMove.has(i) ? el('span.badge.turn', { text: 'to move' }) : null,
          el('span.total', { text: (m.totals ? m.totals[i] : 0) + ' / ' + m.target })),
        h ? el('div.hand', Array.isArray(h.cards) ? pickRow(h.cards) : cards(null, h.count, 'in hand')) : null,
        el('div.extras', g.seat(i))));
    }
    return el('div.table', { dataset: { game: m.game, phase: v.phase } },
      el('div.info', el('span.phase', { text: v.phase }), g.info),
      el('div.centre', g.centre),
      el('div.seats', seats));
  }
  function generic(v) {
    return { info: [], hand: () => null, seat: () => [], centre: [el('pre.raw', { text: JSON.stringify(v, null, 1) })] };
  }
  return { render };
})();
