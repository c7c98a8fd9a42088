// match.js - /matches/{id}. While the match runs: the table as the caller may see it
// (GET /v1/matches/{id}; a spectator without a token), kept live by the event stream
// (/v1/matches/{id}/events; a seated player's own, opened with a stream ticket since
// EventSource cannot send headers, pushes its view), and for a seated player the moves:
// click a legal card, select cards for pass/discard, buttons for the other verbs. Once the
// match is over: the replay viewer over GET /v1/matches/{id}/replay and the log download.
// A match that has not started (pending: waiting for its seats to accept) or never will
// (cancelled) shows who accepted, and to an invited seat its accept and decline buttons.
'use strict';
(function () {
  const { api, el } = cp;
  const main = document.getElementById('main');
  const id = cp.idFromPath();
  const CARD_VERBS = new Set(['play', 'lead', 'take', 'move']);
  const MULTI_VERBS = new Set(['pass', 'discard']);
  let m = null;           // the latest view of the match
  let es = null;          // the EventSource while the match runs
  let selected = new Set(); // cards selected for a pass/discard
  let choice = null;      // a card with several moves: those moves
  let message = '';       // the last move error
  let busy = false;
  let replay = null;
  let firstSeq = null;    // the seq when the page opened: the stream's older events are not news
  const announcer = document.getElementById('announce');

  // Reads a move out loud through the live region: "bob: play queen of spades".
  function spoken(text) { return text.split(' ').map(w => (cp.isCard(w) ? cp.cardSpoken(w) : w)).join(' '); }
  function announce(text) { if (announcer) announcer.textContent = text; }
  // The tab's title names the match and whose turn it is.
  function setTitle(x) {
    const names = cp.names(x.players);
    let turn = '';
    if (x.status === 'active') {
      const mine = x.you !== null && x.you !== undefined && (x.to_move || []).includes(x.you);
      turn = mine ? 'your turn' : (x.to_move || []).length ? 'to move: ' + x.to_move.map(s => names[s]).join(', ') : '';
    } else turn = x.status || 'finished';
    document.title = (turn.startsWith('your') ? '(1) ' : '') + x.game + ' match #' + x.id + (turn ? ' \u00b7 ' + turn : '') + ' \u00b7 cardpost';
  }

  function seatsOf(mask) { const s = []; for (let i = 0; mask >> i; i++) if ((mask >> i) & 1) s.push(i); return s; }
  function titleBlock(x) {
    const names = cp.names(x.players);
    return [el('p.crumbs', el('a', { href: '/', text: 'leagues' }), x.league ? [' \u203a ', el('a', { href: '/leagues/' + x.league, text: 'league' })] : null),
      el('h1', { text: x.game + ' \u00b7 match #' + x.id }),
      el('p.meta', el('span', { text: x.players.map(p => p.name).join(' \u00b7 ') }), ' \u00b7 target ' + x.target,
        ' \u00b7 ', el('span', { id: 'status', class: 'status ' + x.status, text: x.status }),
        x.status === 'active' ? [' \u00b7 seq ', el('span', { id: 'seq', text: x.seq })] : null,
        x.status === 'active' && x.to_move && x.to_move.length ? [' \u00b7 to move: ', el('span', { id: 'turn', text: x.to_move.map(s => names[s]).join(', ') })] : null,
        x.deadline ? ' \u00b7 deadline ' + cp.fmtTime(x.deadline) : null)];
  }
  function logLink(x) {
    return el('a.download', { id: 'download-log', href: '/v1/matches/' + x.id + '/log', download: 'match-' + x.id + '.cardpost.json',
      text: x.status === 'active' ? 'download the log so far' : 'download the log (for cardpost verify)' });
  }

  // ---- Pending or cancelled -----------------------------------------------------------------

  let pendingTimer = null;
  function drawInvitation() {
    const inv = m.invitation || {};
    const names = cp.names(m.players);
    const waiting = (inv.waiting_for || []).map(s => names[s]);
    const box = el('section.invitation', { id: 'invitation' },
      el('h2', { text: m.status === 'pending' ? 'Waiting for the players' : 'Cancelled' }),
      m.status === 'pending'
        ? el('p', { id: 'waiting', text: 'This match starts when every seat has accepted. Waiting for: ' + waiting.join(', ') +
          (inv.expires_at ? ' (until ' + cp.fmtTime(inv.expires_at) + ')' : '') + '.' })
        : el('p', { id: 'cancelled', text: 'This match never started: it was ' + (m.cancelled || 'cancelled') + '.' }),
      el('ul.seats', m.players.map(p => el('li', el('span.pname', { text: names[p.seat] }), ' ',
        el('span', { class: 'badge' + (p.accepted ? '' : ' off'), text: p.accepted ? 'accepted' : 'invited' })))));
    const me = m.you !== null && m.you !== undefined ? m.players[m.you] : null;
    if (m.status === 'pending' && me && !me.accepted) {
      box.append(el('div.buttons',
        el('button.move', { type: 'button', id: 'accept', text: 'accept', onclick: () => answer('accept') }),
        el('button.move.resign', { type: 'button', id: 'decline', text: 'decline', onclick: () => answer('decline') })));
    }
    if (message) box.append(el('p.error', { id: 'move-error', text: message }));
    main.replaceChildren(...titleBlock(m), box);
    setTitle(m);
    if (m.status === 'pending' && !pendingTimer) pendingTimer = setTimeout(() => { pendingTimer = null; refresh().then(after); }, 15000);
  }
  async function answer(what) {
    if (busy) return;
    busy = true; message = '';
    try { m = await api('/v1/matches/' + id + '/' + what, { method: 'POST', auth: true }); } catch (e) { message = what + ': ' + e.message; }
    busy = false;
    after();
    if (m.status === 'active') startStream();
  }

  // ---- Live ---------------------------------------------------------------------------------

  function parseMove(mv) {
    const parts = mv.split(' ');
    return { verb: parts[0], args: parts.slice(1) };
  }
  // `drawn`: the cards the board lets a click play; a one-card move whose card is not among
  // them (a game drawn without a drawer of its own) gets a button like the other moves.
  function movesPanel(x, drawn) {
    const legal = x.legal || [];
    if (x.you === null || x.you === undefined || x.status !== 'active') return null;
    const panel = el('section.moves', { id: 'moves', 'aria-labelledby': 'moves-title' },
      el('h2', { id: 'moves-title', tabindex: '-1', text: legal.length ? 'Your move' : 'Waiting for the others' }));
    const multi = {};
    const buttons = [];
    for (const mv of legal) {
      const { verb, args } = parseMove(mv);
      if (CARD_VERBS.has(verb) && args.length === 1 && cp.isCard(args[0]) && drawn.has(args[0])) continue;
      if (MULTI_VERBS.has(verb) && args.every(cp.isCard)) { multi[verb] = true; continue; }
      buttons.push(el('button.move', { type: 'button', dataset: { move: mv }, text: mv, onclick: () => send(mv) }));
    }
    const hints = [];
    if (legal.some(mv => CARD_VERBS.has(parseMove(mv).verb) && drawn.has(parseMove(mv).args[0]))) hints.push('click a highlighted card (or Tab to it, then Enter) to play it');
    for (const verb of Object.keys(multi)) {
      const sel = [...selected].sort((a, b) => cp.cardIndex(a) - cp.cardIndex(b));
      const mv = [verb, ...sel].join(' ');
      const ok = legal.includes(mv);
      hints.push('select the cards to ' + verb + ', then confirm');
      buttons.unshift(el('button.move.confirm', { type: 'button', id: 'confirm-' + verb, disabled: !ok, dataset: { move: mv },
        text: verb + (sel.length ? ' ' + sel.map(cp.cardName).join(' ') : (ok ? ' nothing' : '\u2026')), onclick: () => send(mv) }));
    }
    if (choice) panel.append(el('div.choice', el('span', { text: 'which move? ' }), choice.map(mv => el('button.move', { type: 'button', dataset: { move: mv }, text: mv, onclick: () => { choice = null; send(mv); } }))));
    panel.append(el('p.muted', { text: hints.join('; ') }), el('div.buttons', buttons,
      el('button.move.resign', { type: 'button', id: 'resign', text: 'resign', onclick: () => { if (confirm('Resign this match?')) send('resign'); } })));
    if (message) panel.append(el('p.error', { id: 'move-error', text: message }));
    return panel;
  }
  // Marks the cards a move may name and wires their clicks.
  function wireCards(root, x) {
    const legal = x.legal || [];
    const single = new Map();
    const multiCards = new Set();
    for (const mv of legal) {
      const { verb, args } = parseMove(mv);
      if (CARD_VERBS.has(verb) && args.length === 1 && cp.isCard(args[0])) {
        if (!single.has(args[0])) single.set(args[0], []);
        single.get(args[0]).push(mv);
      } else if (MULTI_VERBS.has(verb)) args.forEach(c => multiCards.add(c));
    }
    for (const c of root.querySelectorAll('.card.pickable')) {
      const code = c.dataset.card;
      if (single.has(code)) {
        c.classList.add('playable');
        c.setAttribute('role', 'button'); c.tabIndex = 0;
        c.prepend(el('span.visually-hidden', { text: parseMove(single.get(code)[0]).verb + ' ' }));
        c.dataset.focus = 'card-' + code;
        const go = () => { const mvs = single.get(code); if (mvs.length === 1) send(mvs[0]); else { choice = mvs; draw(); } };
        c.addEventListener('click', go);
        c.addEventListener('keydown', ev => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
      } else if (multiCards.has(code) && c.closest('.seat.me .hand')) {
        c.classList.add('selectable');
        if (selected.has(code)) c.classList.add('selected');
        c.setAttribute('role', 'button'); c.tabIndex = 0;
        c.setAttribute('aria-pressed', selected.has(code) ? 'true' : 'false');
        c.dataset.focus = 'card-' + code;
        const toggle = () => {
          if (selected.has(code)) selected.delete(code); else selected.add(code);
          announce(cp.cardSpoken(code) + (selected.has(code) ? ' selected' : ' not selected') + ', ' + selected.size + ' selected');
          draw();
        };
        c.addEventListener('click', toggle);
        c.addEventListener('keydown', ev => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); toggle(); } });
      }
    }
  }
  // Where the focus was before a redraw: the same control after it (a card, a move button),
  // else the first card of the player's hand that can be played or selected, else the
  // moves panel's first button; a focus outside the redrawn part stays where it is.
  function focusKey() {
    const a = document.activeElement;
    if (!a || !main.contains(a)) return null;
    if (a.dataset && a.dataset.focus) return a.dataset.focus;
    if (a.id) return '#' + a.id;
    if (a.dataset && a.dataset.move) return 'move';
    if (a.tagName === 'A' && a.getAttribute('href')) return 'href:' + a.getAttribute('href');
    return 'any';
  }
  function restoreFocus(key) {
    if (!key) return;
    let t = null;
    // (the moves panel's heading only holds the focus while nothing can be played)
    if (key.startsWith('#') && key !== '#moves-title') t = document.getElementById(key.slice(1));
    else if (key.startsWith('href:')) t = [...main.querySelectorAll('a[href]')].find(x => x.getAttribute('href') === key.slice(5));
    else if (key !== 'any' && key !== 'move') t = main.querySelector('[data-focus="' + key + '"]');
    if (t && t.disabled) t = null;
    t = t || main.querySelector('.seat.me .hand [data-focus]') || main.querySelector('#board [data-focus]') ||
      main.querySelector('#moves button:not(:disabled):not(#resign)') || main.querySelector('#moves h2');
    if (t) t.focus();
  }
  function draw() {
    if (!m || replay) return;
    const key = focusKey();
    const board = cpView.render(m, m.view, { you: m.you });
    wireCards(board, m);
    const drawn = new Set([...board.querySelectorAll('.card.playable')].map(c => c.dataset.card));
    main.replaceChildren(...titleBlock(m), movesPanel(m, drawn) || '', el('div', { id: 'board' }, board), el('p', logLink(m)));
    setTitle(m);
    restoreFocus(key);
  }
  async function send(mv) {
    if (busy) return;
    busy = true; message = '';
    try {
      m = await api('/v1/matches/' + id + '/moves', { method: 'POST', body: { move: mv, seq: m.seq }, auth: true });
      selected = new Set(); choice = null;
    } catch (e) {
      message = mv + ': ' + e.message;
      if (e.code === 'stale_seq' || e.code === 'not_your_turn') await refresh();
    }
    busy = false;
    after();
  }
  async function refresh() {
    try { m = await api('/v1/matches/' + id, { auth: true }); } catch (e) { if (!m) { cp.showError(main, e); return; } }
  }
  function after() {
    if (!m) return;
    if (m.status === 'pending' || m.status === 'cancelled') { stopStream(); drawInvitation(); return; }
    if (m.status !== 'active') { stopStream(); startReplay(); return; }
    for (const c of [...selected]) if (!(m.legal || []).some(mv => mv.split(' ').includes(c))) selected.delete(c);
    draw();
  }
  // A signed-in page reads its own view again after each stream message; a message that
  // arrives during a read makes one more read after it, so the last message is never lost.
  let refreshing = false, again = false;
  async function reread() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    do { again = false; await refresh(); } while (again);
    refreshing = false;
    after();
  }
  function onState(data) {
    if (seated && m && data.seq < m.seq) return; // (older than the answer to our own move)
    if (seated || !cp.token()) { m = data; after(); }
    else reread();
  }
  // A seated player's stream is its own: its state messages are the seat's view, legal moves
  // included, so nothing is read before a move. EventSource cannot send the token, so the
  // stream opens with a single-use ticket drawn with it (never the token in the URL); when
  // the stream drops, the browser's retry meets a spent ticket and fails, and a new ticket
  // opens it again. Anyone else's stream is a spectator's, as before.
  let seated = false, opening = false;
  async function startStream() {
    if (es || opening || !window.EventSource) return;
    if (firstSeq === null && m) firstSeq = m.seq;
    let url = '/v1/matches/' + id + '/events';
    seated = false;
    if (cp.token() && m && typeof m.you === 'number') {
      opening = true;
      try { url = (await api(url + '/ticket', { method: 'POST', auth: true })).events; seated = true; } catch (e) { /* a spectator's stream */ }
      opening = false;
      if (es || !m || m.status !== 'active') return;
    }
    es = new EventSource(url);
    es.addEventListener('event', ev => {
      try {
        const e = JSON.parse(ev.data);
        if (firstSeq === null || e.seq < firstSeq || !m || (!e.secret && typeof e.move !== 'string')) return;
        const who = e.seat === m.you ? 'you' : (cp.names(m.players)[e.seat] || 'seat ' + e.seat);
        announce(who + ': ' + (e.secret ? 'a hidden move, shown once everyone has moved' : spoken(e.move)) + (e.cards ? ' (' + e.cards + ' cards)' : ''));
      } catch (err) { /* a torn message */ }
    });
    es.addEventListener('state', ev => { try { onState(JSON.parse(ev.data)); } catch (e) { /* a torn message: the next one repairs */ } });
    es.addEventListener('error', () => {
      if (m && m.status !== 'active') stopStream();
      else if (seated && es && es.readyState === EventSource.CLOSED) { es = null; setTimeout(startStream, 1000); }
    });
  }
  function stopStream() { if (es) { es.close(); es = null; } }

  // ---- Replay -------------------------------------------------------------------------------

  function eventText(r, st) {
    const e = st.event;
    const names = cp.names(r.players);
    if (e.deal) return 'deal of hand ' + (st.hands_done + 1);
    if (e.shuffle) return 'reshuffle';
    return (names[e.seat] || 'seat ' + e.seat) + ': ' + e.move + (e.auto ? ' (timed out)' : '');
  }
  function scoreTable(r, totals, toMove, id_) {
    const names = cp.names(r.players);
    return el('div.table-scroll', { role: 'region', 'aria-label': 'scores', tabindex: '0' }, el('table.scores', { id: id_ },
      el('thead', el('tr', el('th', { text: 'player' }), el('th', { text: 'score' }))),
      el('tbody', r.players.map(p => el('tr', { class: toMove.includes(p.seat) ? 'to-move' : null, dataset: { seat: p.seat } },
        el('th', { scope: 'row', text: names[p.seat] }), el('td.score', { text: String(totals[p.seat]) }))))));
  }
  async function startReplay() {
    if (replay) return;
    replay = { i: 0, timer: null, speed: 2 };
    let r;
    try { r = await api('/v1/matches/' + id + '/replay'); } catch (e) { cp.showError(main, e); return; }
    replay.r = r;
    const steps = r.steps;
    const last = steps.length - 1;
    // Hand k (from 1) starts at its deal, or at the first step once k-1 hands are done.
    const handStarts = [];
    steps.forEach((s, i) => { if (s.event.deal !== undefined && handStarts[s.hands_done] === undefined) handStarts[s.hands_done] = i; });
    steps.forEach((s, i) => { if (handStarts[s.hands_done] === undefined) handStarts[s.hands_done] = i; });
    const names = cp.names(r.players);
    const res = r.result || {};
    const place = []; (res.ranking || []).forEach((g, k) => g.forEach(s => { place[s] = k + 1; }));
    const summary = el('section.result', { id: 'result' }, el('h2', { text: 'Result' }),
      el('ol.ranking', (res.ranking || []).map(g => el('li', { text: g.map(s => names[s] + ' (' + res.totals[s] + ')').join(', ') }))),
      el('p', logLink(r)));

    const slider = el('input', { type: 'range', id: 'slider', min: 0, max: last, value: 0, 'aria-label': 'step' });
    slider.addEventListener('input', () => go(Number(slider.value)));
    const handSel = el('select', { id: 'hand', 'aria-label': 'jump to a hand' },
      el('option', { value: '', text: 'jump to\u2026' }),
      handStarts.map((i, k) => i === undefined ? null : el('option', { value: i,
        text: steps[i].event.deal !== undefined ? 'hand ' + (k + 1) : k === 0 ? 'the start' : 'after hand ' + k })),
      el('option', { value: last, text: 'the end' }));
    handSel.addEventListener('change', () => { if (handSel.value !== '') go(Number(handSel.value)); handSel.value = ''; });
    const speedSel = el('select', { id: 'speed', 'aria-label': 'speed' },
      [0.5, 1, 2, 4, 8, 16].map(s => el('option', { value: s, text: s + ' steps/s', selected: s === replay.speed })));
    speedSel.addEventListener('change', () => { replay.speed = Number(speedSel.value); if (replay.timer) { pause(); play(); } });
    const btn = (idb, text, label, fn) => el('button.ctl', { type: 'button', id: idb, text, title: label, 'aria-label': label, onclick: fn });
    const playBtn = btn('play', '\u25b6', 'play', () => (replay.timer ? pause() : play()));
    const controls = el('div.controls', { id: 'controls' },
      btn('first', '\u00ab', 'first step', () => go(0)), btn('prev', '\u2039', 'step back', () => go(replay.i - 1)),
      playBtn, btn('next', '\u203a', 'step forward', () => go(replay.i + 1)), btn('last', '\u00bb', 'last step', () => go(last)),
      speedSel, handSel);
    const stepInfo = el('p.stepinfo', { id: 'stepinfo' });
    const scores = el('div', { id: 'scores-box' });
    const boardBox = el('div', { id: 'board' });
    setTitle(r);
    main.replaceChildren(...titleBlock(r), summary,
      el('section.replay', { id: 'replay' }, el('h2', { text: 'Replay' }), controls, slider, stepInfo, scores, boardBox));

    function go(i) {
      replay.i = Math.max(0, Math.min(last, i));
      const st = steps[replay.i];
      slider.value = replay.i;
      const toMove = seatsOf(st.to_move);
      stepInfo.replaceChildren(el('span', { id: 'stepno', text: 'step ' + (replay.i + 1) + ' / ' + steps.length }), ' \u00b7 ',
        el('span', { id: 'event', text: eventText(r, st) }), ' \u00b7 hands done: ' + st.hands_done);
      scores.replaceChildren(scoreTable(r, st.totals, toMove, 'scores'));
      boardBox.replaceChildren(cpView.render({ game: r.game, players: r.players, totals: st.totals, target: r.target, to_move: toMove }, st.view, { you: null }));
      if (replay.i === last) pause();
    }
    function play() {
      if (replay.i === last) go(0);
      playBtn.textContent = '\u275a\u275a'; playBtn.setAttribute('aria-label', 'pause');
      replay.timer = setInterval(() => go(replay.i + 1), 1000 / replay.speed);
    }
    function pause() {
      if (replay.timer) clearInterval(replay.timer);
      replay.timer = null;
      playBtn.textContent = '\u25b6'; playBtn.setAttribute('aria-label', 'play');
    }
    document.addEventListener('keydown', ev => {
      if (ev.target.closest && ev.target.closest('input, select, textarea')) return;
      if (ev.key === 'ArrowRight') go(replay.i + 1);
      else if (ev.key === 'ArrowLeft') go(replay.i - 1);
    });
    go(0);
  }

  // The game's drawer (view.js loads web/game-<name>.js) is there before the first drawing.
  async function start() {
    await refresh();
    if (!m) return;
    await cpView.load(m.game);
    if (m.status === 'active') { draw(); startStream(); } else after();
  }
  const started = start();
  // Signing in or out changes whose stream this is: it is opened again for the new caller.
  cp.tokenBox(() => { selected = new Set(); choice = null; started.then(() => { if (!replay) refresh().then(() => { after(); if (m && m.status === 'active') { stopStream(); startStream(); } }); }); });
})();
