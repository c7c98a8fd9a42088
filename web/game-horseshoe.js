// game-horseshoe.js - view.js's drawer for Horseshoe (docs/rules/horseshoe.md "The view"): each seat's
// board of columns, the trick, the unused cards.
// cpView.render lays out what it returns (docs/web.md).
'use strict';
cpView.register('horseshoe', (v, ctx) => {
  const { el, card, back } = cp;
  const { pick, kv, trick, lastTricks } = cpView.parts;
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
});
