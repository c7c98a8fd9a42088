// game-speed.js - view.js's drawer for Speed (docs/rules/speed.md "The view"): each seat's triangle
// of columns, who is ready, the pile and the deck.
// cpView.render lays out what it returns (docs/web.md).
'use strict';
cpView.register('speed', (v, ctx) => {
  const { el, card, back } = cp;
  const { pick, kv } = cpView.parts;
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
});
