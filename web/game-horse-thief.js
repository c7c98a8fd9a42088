// game-horse-thief.js - view.js's drawer for Horse Thief (docs/rules/horse-thief.md "The view"): the
// trump and its turn-up, each seat's stay or drop, discard and tricks, the last tricks, the stock.
// cpView.render lays out what it returns (docs/web.md).
'use strict';
cpView.register('horse-thief', (v, ctx) => {
  const { el, card, cards } = cp;
  const { kv, lastTricks } = cpView.parts;
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
});
