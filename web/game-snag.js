// game-snag.js - view.js's drawer for Snag (docs/rules/snag.md "The view"): the bar, the trick and
// what was taken from it, each seat's taken cards, the unused cards.
// cpView.render lays out what it returns (docs/web.md).
'use strict';
cpView.register('snag', (v, ctx) => {
  const { el, cards } = cp;
  const { pick, kv, trick } = cpView.parts;
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
});
