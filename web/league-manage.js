// league-manage.js - the part of a league's page (league.js) that acts: for a signed-in
// player their place in the league (join, accept or decline an invitation, leave: POST and
// DELETE /v1/leagues/{id}/members), and for the organiser the members (remove one: their
// running league matches are resigned), the invitations waiting (withdraw), inviting a
// player by their number, and scheduling rounds (POST
// /v1/leagues/{id}/schedule). Defines the global `cpLeague`; league.js draws its panel at
// every refresh. The forms are made once, so a refresh keeps what is being typed; what an
// action did is said in the page's live region (#league-status), a refusal in #league-error.
'use strict';
const cpLeague = (() => {
  const { el, api } = cp;
  const status = () => document.getElementById('league-status');
  const errorBox = () => document.getElementById('league-error');
  const say = msg => { errorBox().textContent = ''; status().textContent = msg; };
  const fail = e => { status().textContent = ''; errorBox().textContent = e.message || String(e); };
  let forms = null;       // the organiser's forms, made once (their inputs outlive the redraws)
  let league = null, reload = null;
  let membersOpen = null;  // the members' list folded or not, kept across redraws (null: by size)

  // Run an action and redraw the page: the focus stays on the control used (league.js puts
  // it back after the redraw), or if that is gone (the button of an answered invitation)
  // goes to `focus` (an id).
  async function act(fn, focus) {
    try {
      const msg = await fn();
      await reload();
      say(msg);
      const t = focus && document.getElementById(focus);
      const lost = !document.activeElement || document.activeElement === document.body;
      if (t && lost) t.focus();
    } catch (e) { fail(e); }
  }
  const members = path => '/v1/leagues/' + league.id + '/members' + (path || '');
  const resigned = n => n ? '; ' + n + ' running match' + (n === 1 ? ' was' : 'es were') + ' resigned.' : '.';

  // The signed-in player's place: outside, invited, member; the organiser is told so.
  function yours(lg, me) {
    const head = el('h2', { id: 'you-h', tabindex: '-1', text: 'You and this league' });
    if (!me) {
      return el('section.panel', { id: 'you', 'aria-labelledby': 'you-h' }, head,
        el('p', 'Sign in (at the top) or ', el('a', { href: '/account', text: 'sign up' }), ' to join this league.'));
    }
    const member = (lg.members || []).some(m => m.id === me.id && !m.left_at);
    const invited = (lg.invited || []).some(m => m.id === me.id);
    const parts = [head];
    if (lg.organizer === me.id) parts.push(el('p', { id: 'you-organise', text: 'You organise this league.' }));
    if (member) {
      parts.push(el('p', { id: 'you-state', text: 'You are a member: scheduled rounds seat you.' }),
        el('button', { type: 'button', id: 'leave', text: 'leave this league', onclick: () => {
          if (!confirm('Leave ' + lg.name + '? Your matches still running in it are resigned.')) return;
          act(async () => {
            const r = await api(members('/' + me.id), { method: 'DELETE', auth: true });
            return 'You left ' + lg.name + resigned((r.forfeited || []).length);
          }, 'you-h');
        } }));
    } else if (invited) {
      parts.push(el('p', { id: 'you-state', text: 'You are invited to play in this league.' }),
        el('p.buttons',
          el('button', { type: 'button', id: 'accept-league', text: 'accept the invitation', onclick: () =>
            act(async () => { await api(members(), { method: 'POST', auth: true, body: {} }); return 'You joined ' + lg.name + '.'; }, 'you-h') }),
          el('button', { type: 'button', id: 'decline-league', text: 'decline', onclick: () =>
            act(async () => { await api(members('/' + me.id), { method: 'DELETE', auth: true }); return 'Invitation declined.'; }, 'you-h') })));
    } else {
      parts.push(el('p', { id: 'you-state', text: lg.organizer === me.id ? 'You do not play in it yet.' : 'You are not a member.' }),
        el('button', { type: 'button', id: 'join', text: 'join this league', onclick: () =>
          act(async () => { await api(members(), { method: 'POST', auth: true, body: {} }); return 'You joined ' + lg.name + '.'; }, 'you-h') }));
    }
    return el('section.panel', { id: 'you', 'aria-labelledby': 'you-h' }, parts);
  }

  // The organiser's forms: invite a player by number, schedule rounds.
  function makeForms() {
    const who = el('input', { id: 'invite-player', name: 'invite-player', type: 'number', min: 1, inputmode: 'numeric', required: true,
      'aria-describedby': 'invite-hint' });
    const rounds = el('input', { id: 'rounds', name: 'rounds', type: 'number', min: 1, max: 100, inputmode: 'numeric',
      'aria-describedby': 'rounds-hint' });
    const invite = el('form.row', { id: 'invite', onsubmit: ev => {
      ev.preventDefault();
      act(async () => {
        const r = await api(members(), { method: 'POST', auth: true, body: { player: Number(who.value) } });
        who.value = '';
        return r.status === 'member' ? r.name + ' joined (they let organisers enrol them).' : r.name + ' is invited: the invitation waits on their \u201cmy matches\u201d page.';
      }, 'invite-player');
    } },
    el('p.field', el('label', { for: 'invite-player', text: 'player number' }), who),
    el('button', { type: 'submit', id: 'invite-button', text: 'invite' }),
    el('span.muted.hint.under', { id: 'invite-hint', text: 'players find their number on their account page' }));
    const schedule = el('form.row', { id: 'schedule', onsubmit: ev => {
      ev.preventDefault();
      act(async () => {
        const body = rounds.value ? { rounds: Number(rounds.value) } : {};
        const r = await api('/v1/leagues/' + league.id + '/schedule', { method: 'POST', auth: true, body });
        const n = r.matches.length;
        return n + ' match' + (n === 1 ? '' : 'es') + ' scheduled: they start now.';
      }, 'schedule-button');
    } },
    el('p.field', el('label', { for: 'rounds', text: 'rounds' }), rounds),
    el('button', { type: 'submit', id: 'schedule-button', text: 'schedule' }),
    el('span.muted.hint.under', { id: 'rounds-hint', text: 'a round robin among the members; empty: enough rounds for every pair to meet' }));
    return { invite, schedule };
  }

  // The members, folded away when there are many (a league may have a thousand). The
  // organiser removes any of them but themselves (who leave above, as any member).
  function membersList(lg, current) {
    const remove = m => el('button', { type: 'button', id: 'remove-' + m.id, text: 'remove', 'aria-label': 'remove ' + m.name + ' from the league', onclick: () => {
      if (!confirm('Remove ' + m.name + ' from ' + lg.name + '? Their matches still running in it are resigned.')) return;
      act(async () => {
        const r = await api(members('/' + m.id), { method: 'DELETE', auth: true });
        return m.name + ' was removed from ' + lg.name + resigned((r.forfeited || []).length);
      }, 'members-h');
    } });
    const d = el('details.members', { open: membersOpen === null ? current.length <= 12 : membersOpen },
      el('summary', el('h3', { id: 'members-h', tabindex: '-1', text: 'Members (' + current.length + ')' })),
      el('ul.names', { id: 'member-list' }, current.map(m => el('li', { dataset: { player: m.id } },
        m.name + ' (#' + m.id + ')', m.id === lg.organizer ? null : [' ', remove(m)]))));
    d.addEventListener('toggle', () => { membersOpen = d.open; });
    return d;
  }

  function organise(lg) {
    if (!forms) forms = makeForms();
    const current = (lg.members || []).filter(m => !m.left_at);
    const invited = lg.invited || [];
    return el('section.panel', { id: 'organise', 'aria-labelledby': 'organise-h' },
      el('h2', { id: 'organise-h', text: 'Organise' }),
      current.length ? membersList(lg, current)
        : [el('h3', { id: 'members-h', tabindex: '-1', text: 'Members (0)' }), el('p.muted', { id: 'member-list', text: 'Nobody yet: invite players, or send them this page to join.' })],
      el('h3', { id: 'invited-h', tabindex: '-1', text: 'Invitations waiting (' + invited.length + ')' }),
      invited.length ? el('ul.names', { id: 'invited-list' }, invited.map(m => el('li', { dataset: { player: m.id } },
        m.name + ' (#' + m.id + ') ',
        el('button', { type: 'button', id: 'withdraw-' + m.id, text: 'withdraw', 'aria-label': 'withdraw the invitation of ' + m.name, onclick: () =>
          act(async () => { await api(members('/' + m.id), { method: 'DELETE', auth: true }); return 'Invitation of ' + m.name + ' withdrawn.'; }, 'invited-h') }))))
        : el('p.muted', { id: 'invited-list', text: 'None.' }),
      forms.invite,
      el('h3', { text: 'Schedule' }),
      el('p', { text: 'Scheduling creates the matches of the rounds among the current members; they start at once.' }),
      forms.schedule);
  }

  // What league.js puts under the league's title: `lg` is GET /v1/leagues/{id}, `me` the
  // signed-in player or null, `again` redraws the page (returns a promise).
  function panel(lg, me, again) {
    league = lg;
    reload = again;
    return [yours(lg, me), me && lg.organizer === me.id ? organise(lg) : null];
  }
  return { panel };
})();
