// game-hearts.js - view.js's drawer for Hearts (docs/rules/hearts.md "The view"): hand, dealer,
// passing direction, the last tricks, each seat's points this hand and its pass, the hole.
// cpView.render lays out what it returns (docs/web.md).
'use strict';
cpView.register('hearts', (v, ctx) => {
  const { el, cards } = cp;
  const { kv, lastTricks } = cpView.parts;
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
      v.hole && (v.hole.count || (v.hole.cards && v.hole.cards.length)) ? el('div.sub', kv('hole', v.hole.taken_by !== null && v.hole.taken_by !== undefined ? 'taken by ' + ctx.names[v.hole.taken_by] : 'face down'), cards(v.hole.cards, v.hole.count)) : null],
  };
});
