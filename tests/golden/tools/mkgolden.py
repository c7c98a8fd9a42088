#!/usr/bin/python3
"""mkgolden.py - writes the Hearts golden logs of tests/golden/hearts/ and their
.expect.json files. Committed, NOT run by the test suite: run it by hand with
/usr/bin/python3 after changing a scenario, then run the golden runner.

Every expected output is computed by hearts_ref.py, an independent implementation of
rules.md §1 and turn-log.md §2-§5 (its §5 shuffle uses hashlib, so seeded logs check
rules/shuffle.c too), and the stacked scenarios assert what was worked out by hand. Only
the human-readable error messages are the engine's texts, kept in MESSAGES below.
"""
import json
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hearts_ref as ref  # noqa: E402
from hearts_ref import cards, cname  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hearts")

SEEDS = {name: bytes.fromhex(h) for name, h in {
    "s4": "5f1c3a0e9b2d47c6a18e0f3b7d5c2a9146e8b0d3f7a2c5e9180b4d6f3a7c1e25",
    "s3": "0123456789abcdef0123456789abcdef00112233445566778899aabbccddeeff",
    "s5": "c0ffee00deadbeef0badf00d1234567890abcdef0fedcba987654321feedface",
    "s6": "a5a5a5a55a5a5a5a0f0f0f0ff0f0f0f01122334455667788aabbccddeeff0011",
    "cyc": "9e3779b97f4a7c15bf58476d1ce4e5b994d049bb133111eb0000000000000001",
}.items()}

written = []


class Match:
    """A log under construction, with the reference engine following along."""

    def __init__(self, name, about, seats=4, target=100, moon="add", first_dealer=0,
                 options="full", seed=None, meta=None):
        self.name = name
        self.about = about
        self.g = ref.Hearts(seats, target, moon, first_dealer)
        self.log = {"format": "cardpost-log/1", "game": "hearts"}
        if options == "full":
            self.log["options"] = {"seats": seats, "target": target, "moon": moon,
                                   "first_dealer": first_dealer}
        elif options is not None:
            self.log["options"] = options
        if meta:
            self.log.update(meta)
        self.seed = SEEDS[seed] if seed else None
        if self.seed:
            self.log["seed"] = self.seed.hex()
            self.log["seed_commitment"] = ref.commitment(self.seed)
        self.log["events"] = []
        self.ndeals = 0

    @property
    def events(self):
        return self.log["events"]

    # -- chance events
    def deal(self, deck):
        self.events.append({"deal": [cname(c) for c in deck]})
        self.g.deal(deck)
        self.ndeals += 1

    def seeded(self):
        self.deal(ref.shuffle(self.seed, self.ndeals, range(52)))

    def stacked(self, hands, hole=None):
        """Deal the given hands ({seat: "cards"}) for the dealer now due; seats not given
        get the lowest remaining cards, seat by seat; the hole gets the rest."""
        self.deal(stack(self.g.n, self.g.dealer, hands, hole))

    # -- moves
    def move(self, seat, text, **extra):
        self.events.append(dict({"seat": seat, "move": text}, **extra))
        self.g.move(seat, text)

    def moves(self, script):
        """'S:move; S:move; ...'"""
        for item in script.split(";"):
            item = item.strip()
            if item:
                seat, text = item.split(":", 1)
                self.move(int(seat), text.strip())

    def raw(self, event):
        self.events.append(event)

    def finals(self, hands, hole=None, order=None, passes=None):
        """Deal so that after this hand's passes the seats hold `hands` ({seat: "cards"};
        seats not given get the lowest remaining cards), then make the passes: each seat
        passes the three lowest cards of its receiver's final hand (or passes[seat]),
        in `order` (default seat order). On a hold hand this is just the deal."""
        g = self.g
        n = g.n
        cyc = g.cycle()
        d = cyc[(g.hand_number() - 1) % len(cyc)]
        final = {s: [c for c in stack(n, 0, hands, hole)[(s - 1) % n:n * g.size:n]]
                 for s in range(n)}
        holecards = stack(n, 0, hands, hole)[n * g.size:]
        if d == "hold":
            self.deal(stack(n, g.dealer, {s: names(final[s]) for s in range(n)},
                            names(holecards)))
            return
        to = {s: {"left": (s + 1) % n, "right": (s - 1) % n,
                  "across": (s + n // 2) % n}[d] for s in range(n)}
        frm = {t: s for s, t in to.items()}
        give = {s: cards(passes[s]) if passes and s in passes else sorted(final[to[s]])[:3]
                for s in range(n)}
        dealt = {s: (set(final[s]) - set(give[frm[s]])) | set(give[s]) for s in range(n)}
        self.deal(stack(n, g.dealer, {s: names(sorted(dealt[s])) for s in range(n)},
                        names(holecards)))
        for s in order if order is not None else range(n):
            self.move(s, "pass " + names(sorted(give[s])))

    def auto(self, policy, until="hand"):
        """Play with `policy(g, seat, legal) -> move` until the hand ends ("hand"), the
        match ends ("match"), or `until` more moves have been made."""
        made = 0
        while not self.g.over and self.g.phase != "deal":
            if self.g.phase == "moon" and until == "hand":
                return
            if isinstance(until, int) and made == until:
                return
            seat = self.g.to_move()[0]
            self.move(seat, policy(self.g, seat, self.g.legal(seat)))
            made += 1
        if until == "match" and not self.g.over:
            self.seeded()
            self.auto(policy, "match")

    # -- output
    def write(self, checks=("replay", "legal"), result_claim=None, expect=None):
        if result_claim is not None:
            self.log["result"] = result_claim
        write(self.name, self.about, self.log, checks, expect)
        return self


def stack(n, dealer, hands, hole=None):
    size = 52 // n
    given = {s: cards(t) for s, t in hands.items()}
    used = [c for cs in given.values() for c in cs] + (cards(hole) if hole else [])
    assert len(used) == len(set(used)), "a card is stacked twice"
    rest = [c for c in range(52) if c not in used]
    for s in range(n):
        if s not in given:
            given[s], rest = rest[:size], rest[size:]
        assert len(given[s]) == size, (s, len(given[s]))
    holecards = cards(hole) if hole else rest
    assert len(holecards) == 52 - n * size and (not hole or not rest)
    deck = [None] * 52
    for s in range(n):
        k = (s - dealer - 1) % n  # first deck position that goes to seat s
        for j, c in enumerate(given[s]):
            deck[k + j * n] = c
    deck[n * size:] = holecards
    return deck


def names(cs):
    return " ".join(cname(c) for c in cs)


def low(g, seat, legal):
    return legal[0]


def rnd(r):
    return lambda g, seat, legal: r.choice(legal)


# ---- writing ----------------------------------------------------------------------------

MESSAGES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "messages.json")
# The engine's human-readable texts, by "<name>:<command>"; everything else is computed.
MESSAGES = json.load(open(MESSAGES_FILE, encoding="utf-8")) if os.path.exists(MESSAGES_FILE) else {}


def dump_log(log):
    """The log as JSON, one event a line."""
    if not isinstance(log.get("events"), list):
        return json.dumps(log, ensure_ascii=False) + "\n"
    head = {k: v for k, v in log.items() if k not in ("events", "result")}
    text = json.dumps(head, ensure_ascii=False)[:-1]
    sep = ", " if head else ""
    lines = ",\n  ".join(json.dumps(ev, ensure_ascii=False) for ev in log["events"])
    text += sep + '"events": [\n  ' + lines + "\n]"
    if "result" in log:
        text += ',\n"result": ' + json.dumps(log["result"])
    return text + "}\n"


def write(name, about, log, checks, expect=None, raw_text=None):
    """Write <name>.json and <name>.expect.json. `expect` overrides outputs by command
    (exit, output) for the cases the reference does not compute (malformed files)."""
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(raw_text if raw_text is not None else dump_log(log))
    out = []
    for command in checks:
        if expect and command in expect:
            code, output = expect[command]
        else:
            code, output, g = ref.replay(log, verify=command == "verify")
            if code == 0 and command == "legal":
                output = g.legal_json()
        if "error" in output and output["error"]["message"] is None:
            key = name + ":" + command
            if key not in MESSAGES:
                MISSING.append((key, path, command, code, output))
                continue
            output["error"]["message"] = MESSAGES[key]
        out.append({"command": command, "exit": code, "output": output})
    with open(os.path.join(OUT, name + ".expect.json"), "w", encoding="utf-8") as f:
        f.write('{"about": %s,\n "checks": [\n  %s\n]}\n' % (
            json.dumps(about, ensure_ascii=False),
            ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in out)))
    written.append(name)


MISSING = []


def error(index, seat, move, code, message):
    return {"error": {"index": index, "seat": seat, "move": move, "code": code,
                      "message": message}}


# ---- scenarios --------------------------------------------------------------------------
# Hand-worked facts are asserted where they are made; ref computes the full outputs.

def legal_of(m):
    return m.g.legal_json()


def result_of(m):
    return m.g.result()


def shooter_policy(shooter):
    """The shooter plays its highest legal card, everyone else the lowest."""
    return lambda g, seat, legal: legal[-1] if seat == shooter else legal[0]


# The shooter's final hand of a 4-seat moon hand: it wins every trick (AC on the first,
# then always the top card left of the suit it leads), so it takes all 52 cards.
SHOOT4 = "AC AD KD QD JD TD 9D 8D 7D AS KS QS JS"


def moon4(m, shooter):
    other = [s for s in range(4) if s != shooter]
    m.finals({shooter: SHOOT4, other[0]: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2D",
              other[1]: "3D 4D 5D 6D 2H 3H 4H 5H 6H 7H 8H 9H TH",
              other[2]: "JH QH KH AH 2S 3S 4S 5S 6S 7S 8S 9S TS"})
    m.auto(shooter_policy(shooter))


def scenarios():
    # -- complete seeded matches, one per seat count and moon option --------------------
    full = {}
    for name, n, target, moon, fd, seed in [
            ("match-4-add", 4, 100, "add", 0, "s4"),
            ("match-3-subtract", 3, 60, "subtract", 2, "s3"),
            ("match-5-choose", 5, 60, "choose", 1, "s5"),
            ("match-6-add", 6, 50, "add", 5, "s6")]:
        r = random.Random(name)
        m = Match(name, "a complete seeded %d-seat match, moon=%s, target %d, first dealer "
                  "%d, played with random legal moves; verify accepts it" % (n, moon, target, fd),
                  n, target, moon, fd, seed=seed,
                  meta={"players": ["p%d" % s for s in range(n)]})
        m.seeded()
        m.auto(rnd(r), "match")
        res = result_of(m)
        assert res["finished"] and max(res["totals"]) >= target
        assert all(sum(h["scores"]) in (26, 26 * (n - 1), -26) for h in res["hands"])
        m.write(("replay", "legal", "verify"))
        full[name] = m

    # the service's metadata: "auto" moves, "at" stamps, players; a true result claim
    m4 = full["match-4-add"]
    log = json.loads(json.dumps(m4.log))
    for i, ev in enumerate(log["events"]):
        ev["at"] = "2024-05-01T12:%02d:00Z" % (i % 60)
        if "seat" in ev and i % 7 == 0:
            ev["auto"] = True
    log["result"] = result_of(m4)
    log["title"] = "metadata is ignored"
    write("metadata-and-true-claim", "event and top-level metadata (at, auto, players, other "
          "keys) are ignored; a true result claim replays with exit 0", log,
          ("replay", "verify"))

    # tampered copies of the seeded 4-seat match
    log = json.loads(json.dumps(m4.log))
    deals = [i for i, ev in enumerate(log["events"]) if "deal" in ev]
    d = log["events"][deals[1]]["deal"]
    d[0], d[4] = d[4], d[0]  # positions 0 and 4 go to the same seat: same hands
    write("verify-deal-altered", "verify: the second deal is a permutation but not the one "
          "the seed derives (two cards of one hand swapped, so replay still succeeds): exit 1 "
          "at that deal's index", log, ("replay", "verify"))
    assert ref.replay(log, verify=True)[1]["error"]["index"] == deals[1]
    assert ref.replay(log)[1] == result_of(m4)
    log = json.loads(json.dumps(m4.log))
    c = log["seed_commitment"]
    log["seed_commitment"] = c[:10] + ("0" if c[10] != "0" else "1") + c[11:]
    write("verify-commitment-altered", "verify: sha256(seed) is not the seed_commitment: "
          "exit 1 with a null index", log, ("replay", "verify"))
    log = json.loads(json.dumps(m4.log))
    log["seed_commitment"] = log["seed_commitment"].upper()
    write("verify-commitment-upper-case", "verify: the commitment's hex digits may be upper "
          "case", log, ("verify",))
    log = json.loads(json.dumps(m4.log))
    del log["seed"]
    write("verify-no-seed", "verify: a log without a seed fails (exit 1, null index); "
          "replay does not care", log, ("replay", "verify"))

    # cut points of seeded matches
    for name, n, fd, seed, stop, about in [
            ("cut-4-pass-partial", 4, 0, "s4", 2, "pass phase with two passes in: the other "
             "two seats are to move and may pass any three of their cards"),
            ("cut-4-mid-trick", 4, 0, "s4", 4 + 4 * 5 + 2, "the middle of trick 6"),
            ("cut-3-mid-trick", 3, 2, "s3", 3 + 3 * 4 + 1, "3 seats: the middle of trick 5"),
            ("cut-5-first-lead", 5, 1, "s5", 5, "5 seats: after the exchange, the first lead"),
            ("cut-6-mid-trick", 6, 5, "s6", 6 + 6 * 2 + 3, "6 seats: the middle of trick 3")]:
        m = Match(name, about, n, 100, "add", fd, seed=seed)
        m.seeded()
        m.auto(rnd(random.Random(name)), stop)
        m.write(("replay", "legal", "verify"))
    m = Match("cut-4-deal-due", "a hand is complete: the next deal is due, nobody is to "
              "move", seed="s4")
    m.seeded()
    m.auto(rnd(random.Random(1)))
    assert m.g.phase == "deal"
    m.write(("replay", "legal", "verify"))
    m.raw({"seat": 0, "move": "play 2C"})
    m.name = "illegal-move-while-deal-due"
    m.about = "a seat moves while the next deal is due: exit 1, chance_due"
    m.write(("replay",))

    # -- deal sizes, hole, pass cycles -------------------------------------------------
    for n in (3, 4, 5, 6):
        fd = n - 2
        m = Match("deal-%d-seats" % n, "%d seats: %d cards each, dealt round-robin from the "
                  "dealer's left (first_dealer %d), %d hole cards at deck positions %d..; "
                  "every seat passes, so legal lists every 3-card subset of each hand"
                  % (n, 52 // n, fd, 52 % n, n * (52 // n)), n, 100, "add", fd)
        m.deal(list(range(52)))  # canonical order: position i to seat (fd+1+i) mod n
        for s in range(n):
            want = {c for c in range(n * (52 // n)) if (fd + 1 + c) % n == s}
            assert m.g.hands[s] == want
        assert m.g.hole == set(range(n * (52 // n), 52))
        m.write()
        cyc = m.g.cycle()
        # who receives what, hand after hand
        for k in range(1, len(cyc) + 2):
            d = cyc[(k - 1) % len(cyc)]
            m = Match("pass-%d-hand-%d" % (n, k), "%d seats, hand %d passes %s (cycle %s): "
                      "the seat after the dealer passes 2C, so the receiver leads it"
                      % (n, k, d, ", ".join(cyc)), n, 100000, "add", fd, seed="cyc")
            for _ in range(k - 1):
                m.seeded()
                m.auto(rnd(random.Random(n * 10 + k)))
            dealer = (fd + k - 1) % n
            assert m.g.dealer == dealer
            giver = (dealer + 1) % n
            receiver = {"left": giver + 1, "right": giver - 1, "across": giver + n // 2,
                        "hold": giver}[d] % n
            top = [c for c in range(51, -1, -1)][:52 // n - 1]
            m.stacked({giver: "2C " + names(top)})
            if d != "hold":
                order = list(range(n))[::-1] if k % 2 else list(range(n))
                for s in order:
                    m.move(s, low(m.g, s, m.g.legal(s)))
            assert legal_of(m) == {"to_move": [receiver], "legal": {str(receiver): ["play 2C"]}}
            m.write()
            if d == "hold":
                m.raw({"seat": giver, "move": "pass " + names(sorted(m.g.hands[giver])[:3])})
                m.name = "illegal-pass-hold-%d" % n
                m.about = "%d seats, hand %d is a hold hand: there is no passing" % (n, k)
                m.write(("replay",))

    # first lead when 2C is in the hole: the lowest club held leads it
    for n, hole, lead in [(3, "2C", "3C"), (5, "2C 3C", "4C"), (6, "2C 3C 4C 5C", "6C")]:
        m = Match("first-lead-hole-%d" % n, "Decision: %d seats with %s in the hole: the "
                  "seat holding the lowest club (%s, passed to seat 1) leads it" % (n, hole, lead),
                  n)
        m.stacked({}, hole + " " + names(range(51, 51 - (52 % n) + len(hole.split()), -1)))
        assert m.g.hole >= set(cards(hole))
        for s in range(n):
            m.move(s, low(m.g, s, m.g.legal(s)))
        assert legal_of(m) == {"to_move": [1], "legal": {"1": ["play " + lead]}}
        m.write()
        m.raw({"seat": 1, "move": "play 2C"})
        m.name = "illegal-first-lead-hole-%d" % n
        m.about = "%d seats: 2C is in the hole, so nobody can play it" % n
        m.write(("replay",))
    m = Match("illegal-first-lead-hole-3-not-lowest", "Decision: with 2C in the hole the "
              "first lead must be the lowest club held, not another club", 3)
    m.stacked({}, "2C")
    for s in range(3):
        m.move(s, low(m.g, s, m.g.legal(s)))
    m.raw({"seat": 1, "move": "play 4C"})
    m.write(("replay",))

    # -- passing: legality --------------------------------------------------------------
    # A 4-seat deal (dealer 0, left) whose final hands serve the trick tests below.
    F = {0: "2C 3C 4C 2D 3D 4D 5D 2H 3H 2S 3S 4S 5S",
         1: "5C 6C 7C 8C 9C QS 4H 5H 6H 7H 6S 7S 8S",
         2: "TC JC QC 6D 7D 8D 9D TD JD 8H 9H 9S TS",
         3: "KC AC QD KD AD TH JH QH KH AH JS KS AS"}
    P = {0: "6S 7S 8S", 1: "9S TS 8H", 2: "JS KS AS", 3: "2S 3S 4S"}

    def base(name, about, order=(0, 1, 2, 3), npass=4, **kw):
        m = Match(name, about, **kw)
        m.stacked({0: "2C 3C 4C 2D 3D 4D 5D 2H 3H 5S 6S 7S 8S",
                   1: "5C 6C 7C 8C 9C QS 4H 5H 6H 7H 9S TS 8H",
                   2: "TC JC QC 6D 7D 8D 9D TD JD 9H JS KS AS",
                   3: "KC AC QD KD AD TH JH QH KH AH 2S 3S 4S"})
        for s in list(order)[:npass]:
            m.move(s, "pass " + P[s])
        return m

    m = base("pass-exchange-any-order", "the passes arrive in the order 2 3 0 1; the cards "
             "change hands only when the last arrives (legal stays the pass lists until then)",
             order=(2, 3, 0), npass=3)
    assert legal_of(m)["to_move"] == [1]
    assert m.g.hands[0] == set(cards("2C 3C 4C 2D 3D 4D 5D 2H 3H 5S 6S 7S 8S"))
    m.write()
    m.move(1, "pass " + P[1])
    for s in range(4):
        assert m.g.hands[s] == set(cards(F[s]))
    m.name = "pass-exchange-done"
    m.about = "after the last pass (order 2 3 0 1) each seat holds its cards less its pass " \
              "plus the pass of its right neighbour; 2C's holder leads"
    assert legal_of(m) == {"to_move": [0], "legal": {"0": ["play 2C"]}}
    m.write()
    for name, seat, text, about in [
            ("illegal-pass-duplicate", 0, "pass 2C 2C 3C", "a pass naming a card twice"),
            ("illegal-pass-two-cards", 0, "pass 2C 3C", "a pass of two cards"),
            ("illegal-pass-four-cards", 0, "pass 2C 3C 4C 2D", "a pass of four cards"),
            ("illegal-pass-foreign-card", 0, "pass 2C 3C AS", "a pass naming a card of "
             "another hand"),
            ("illegal-play-during-pass", 0, "play 2C", "a card played during the pass phase"),
            ("illegal-moon-during-pass", 0, "moon add", "`moon add` in a moon=add match"),
            ("illegal-verb-stay", 0, "stay", "a Horse Thief verb in Hearts"),
            ("illegal-verb-lead", 0, "lead 2C", "a Snag verb in Hearts"),
            ("illegal-verb-flip", 0, "flip 1", "a Speed verb in Hearts"),
            ("illegal-verb-discard", 0, "discard 2C", "a Horse Thief verb in Hearts"),
            ("illegal-bad-notation", 0, "pass 2C 3C 1X", "move text that does not parse"),
            ("illegal-double-space", 0, "pass 2C  3C 4C", "words separated by two spaces"),
            ("illegal-empty-move", 0, "  ", "an empty move"),
            ("illegal-seat-too-high", 4, "pass 2C 3C 4C", "seat 4 of a 4-seat match"),
            ("illegal-seat-negative", -1, "resign", "seat -1")]:
        m = base(name, about + ": exit 1 at its index", npass=0)
        m.raw({"seat": seat, "move": text})
        m.write(("replay",))
    m = base("illegal-pass-twice", "a seat passes twice (a pass cannot be changed)", npass=1)
    m.raw({"seat": 0, "move": "pass 2C 3C 4C"})
    m.write(("replay",))
    m = base("illegal-pass-after-exchange", "a pass after the exchange")
    m.raw({"seat": 1, "move": "pass 5C 6C 7C"})
    m.write(("replay",))
    m = base("pass-lenient-notation", "move text is case-insensitive, takes 10 for T and suit "
             "symbols, ignores surrounding white space and the order of passed cards", npass=0)
    m.moves("0: PASS 8s 6\u2660 7S; 1:  pass 8H 10S 9s \r\n; 2:pass as ks js; 3:Pass 4S 3S 2S")
    m.write()

    # -- the first trick ------------------------------------------------------------------
    m = base("illegal-first-lead-not-2c", "the first trick must be led with 2C")
    m.raw({"seat": 0, "move": "play 3C"})
    m.write(("replay",))
    m = base("illegal-not-your-turn", "seat 1 plays before 2C is led")
    m.raw({"seat": 1, "move": "play 5C"})
    m.write(("replay",))
    m = base("illegal-not-in-hand", "a card the seat does not hold")
    m.moves("0:play 2C")
    m.raw({"seat": 1, "move": "play TC"})
    m.write(("replay",))
    m = base("illegal-must-follow", "seat 1 holds clubs and plays QS to a club lead")
    m.moves("0:play 2C")
    m.raw({"seat": 1, "move": "play QS"})
    m.write(("replay",))
    m = base("follow-suit", "a seat holding the led suit must follow it")
    m.moves("0:play 2C")
    assert legal_of(m)["legal"] == {"1": ["play " + c for c in "5C 6C 7C 8C 9C".split()]}
    m.write()

    # -- leading hearts (seat 3 wins trick 1 with AC and leads) --------------------------
    m = base("hearts-not-broken", "trick 2: hearts are not broken, so the leader may not "
             "lead one while it holds other cards")
    m.moves("0:play 2C; 1:play 5C; 2:play TC; 3:play AC")
    assert legal_of(m)["legal"] == {"3": ["play " + c for c in
                                          "KC QD KD AD JS KS AS".split()]}
    m.write()
    m.raw({"seat": 3, "move": "play TH"})
    m.name = "illegal-lead-heart-unbroken"
    m.about = "leading a heart before hearts are broken"
    m.write(("replay",))
    m = base("hearts-broken-earlier-trick", "Decision: a heart discarded to trick 2 breaks "
             "hearts: the leader of trick 3 may lead one")
    m.moves("0:play 2C; 1:play 5C; 2:play TC; 3:play AC; 3:play QD; 0:play 2D; 1:play 4H;"
            "2:play 6D")
    assert m.g.broken and m.g.leader == 3
    assert legal_of(m)["legal"] == {"3": ["play " + c for c in
                                          "KC KD AD TH JH QH KH AH JS KS AS".split()]}
    m.write()
    m = base("qs-does-not-break", "Decision: QS discarded to trick 2 does not break hearts")
    m.moves("0:play 2C; 1:play 5C; 2:play TC; 3:play AC; 3:play QD; 0:play 2D; 1:play QS;"
            "2:play 6D")
    assert legal_of(m)["legal"] == {"3": ["play " + c for c in "KC KD AD JS KS AS".split()]}
    m.write()
    m.raw({"seat": 3, "move": "play AH"})
    m.name = "illegal-lead-heart-after-qs"
    m.about = "Decision: after QS was discarded hearts are still not broken"
    m.write(("replay",))
    m = Match("only-hearts-lead", "the leader of trick 2 holds nothing but hearts, so it may "
              "lead one although hearts are not broken")
    m.finals({0: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AH", 1: "AC 2H 3H 4H 5H 6H 7H 8H 9H "
              "TH JH QH KH", 2: "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD"})
    m.moves("0:play 2C; 1:play AC; 2:play 2D; 3:play 2S")
    assert not m.g.broken
    assert legal_of(m)["legal"] == {"1": ["play %sH" % r for r in "23456789TJQK"]}
    m.write()

    # -- point cards on the first trick -------------------------------------------------
    def ftrick(name, about, first="5D"):
        m = Match(name, about)
        m.finals({0: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
                  1: "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
                  2: "QS 2H 3H 4H 5H 6H 7H 2S 3S 4S 5S 6S 7S"})
        m.moves("0:play 2C; 1:play %s" % first)
        return m
    m = ftrick("first-trick-no-points", "first trick: a seat void in clubs must discard a "
               "non-point card; QS counts as a point card")
    assert legal_of(m)["legal"] == {"2": ["play %sS" % r for r in "234567"]}
    m.write()
    for card in ("QS", "2H"):
        m = ftrick("illegal-first-trick-" + card.lower(), "first trick: %s may not be "
                   "discarded while the seat holds a non-point card" % card)
        m.raw({"seat": 2, "move": "play " + card})
        m.write(("replay",))
    m = Match("first-trick-only-points", "first trick: a seat holding only point cards "
              "(12 hearts and QS after the pass) may play any of them")
    m.finals({0: "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
              1: "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH QS",
              2: "2H 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD 2S"})
    m.moves("0:play 2C")
    assert legal_of(m)["legal"] == {"1": ["play %sH" % r for r in "3456789TJQKA"] +
                                    ["play QS"]}
    m.write()
    m.moves("1:play QS")
    m.name = "first-trick-only-points-then"
    m.about = "first trick: after QS was played by a seat with only points, the next seat " \
              "(void in clubs, holding 2H) must still discard a non-point card"
    assert legal_of(m)["legal"] == {"2": ["play %sD" % r for r in "23456789TJQ"] +
                                    ["play 2S"]}
    m.write()

    # -- trick winner, hole, points -----------------------------------------------------
    m = ftrick("trick-winner", first="AD", about="the highest card of the led suit wins: "
               "2C takes the first "
               "trick against AD and AS discarded by seats void in clubs; it leads next")
    m.moves("2:play 7S; 3:play AS")
    assert m.g.tricks[0][2] == 0 and legal_of(m)["to_move"] == [0]
    m.write()
    m = Match("hole-to-first-heart-trick", "3 seats, the hole (QS) goes to the winner of "
              "the first trick holding a heart and counts 13 in that seat's points", 3,
              target=1000)
    m.stacked({}, "QS")
    m.auto(rnd(random.Random(3)))
    owner = m.g.hole_owner
    assert owner is not None and 14 <= m.g.history[0][owner] < 26
    assert QS_NOT_PLAYED(m)
    m.write()
    m = Match("hole-5-two-cards", "5 seats, hole AH and KS: both go to the winner of the "
              "first heart trick", 5, target=1000, first_dealer=3)
    m.stacked({}, "KS AH")
    m.auto(rnd(random.Random(5)))
    assert m.g.history[0][m.g.hole_owner] >= 1
    m.write()

    # -- shooting the moon --------------------------------------------------------------
    for moon, scores in [("add", [26, 26, 0, 26]), ("subtract", [0, 0, -26, 0])]:
        m = Match("moon-%s" % moon, "moon=%s: seat 2 takes all 26" % moon, moon=moon)
        moon4(m, 2)
        assert m.g.history == [scores] and not m.g.over
        m.write()
    m = Match("moon-add-ends-match", "moon=add pushes the others to the target (26 >= 26): "
              "the match is over and the shooter wins", target=26)
    moon4(m, 2)
    assert result_of(m)["ranking"] == [[2], [0, 1, 3]] and m.g.over
    m.write()
    m.raw({"seat": 0, "move": "play 2C"})
    m.name = "illegal-move-after-over"
    m.about = "every move is illegal once the match is over"
    m.write(("replay",))
    m.events.pop()
    m.raw({"seat": 1, "move": "resign"})
    m.name = "illegal-resign-after-over"
    m.about = "resign too is illegal once the match is over"
    m.write(("replay",))
    m.events.pop()
    m.raw({"deal": [cname(c) for c in range(52)]})
    m.name = "deal-after-over"
    m.about = "a deal after the match is over is not due: an illegal event (exit 1)"
    m.write(("replay",), expect={"replay": (1, error(len(m.events) - 1, None, None, "not_due",
                                                      MESSAGES.get("deal-after-over:replay")))})
    m = Match("moon-add-below-target", "the match goes on while every total is below the "
              "target (26 < 27)", target=27)
    moon4(m, 2)
    assert not m.g.over
    m.write()
    m = Match("moon-choose-pending", "moon=choose: the shooter alone is to move, with "
              "`moon add` and `moon subtract`; the hand is not scored yet", moon="choose")
    moon4(m, 2)
    assert m.g.phase == "moon" and m.g.history == []
    m.write()
    for name, seat, text, about in [
            ("other-seat", 0, "moon add", "another seat chooses"),
            ("card-played", 2, "play AC", "a card is played while the moon is chosen"),
            ("no-word", 2, "moon", "`moon` without a word")]:
        m = Match("illegal-moon-" + name, "moon=choose: " + about, moon="choose")
        moon4(m, 2)
        m.raw({"seat": seat, "move": text})
        m.write(("replay",))
    for word, target, over in [("add", 26, True), ("subtract", 26, False), ("add", 27, False)]:
        m = Match("moon-choose-%s-%d" % (word, target), "moon=choose: the shooter picks %s; "
                  "the end test (target %d) comes after it" % (word, target),
                  moon="choose", target=target)
        moon4(m, 2)
        m.move(2, "moon " + word)
        assert m.g.over == over
        m.write()
    m = Match("moon-hole-5", "5 seats, QS and 2H in the hole: the shooter wins every trick "
              "and needs the hole for its 26 (moon=add)", 5)
    m.finals({2: "AC AD KD QD JD TD 9D 8D AS KS", 0: "2C 3C 4C 5C 6C 7C 8C 9C TC JC",
              1: "QC KC 2D 3D 4D 5D 6D 7D 3H 4H", 3: "5H 6H 7H 8H 9H TH JH QH KH AH"},
             hole="QS 2H")
    m.auto(shooter_policy(2))
    assert m.g.hole_owner == 2 and m.g.tricks[0][1][3] == cards("5H")[0]
    assert m.g.history == [[26, 26, 0, 26, 26]]
    m.write()

    # -- end: ties, ranking, resign -----------------------------------------------------
    m = Match("tie-for-first", "Decision: seats tied for the lowest total share first "
              "place (moon=add by seat 2, then seat 0: 26 52 26 52, target 50)", target=50)
    moon4(m, 2)
    moon4(m, 0)
    assert result_of(m)["ranking"] == [[0, 2], [1, 3]] and m.g.over
    m.write()
    m = Match("resign-before-deal", "resign is legal before the first deal; the resigner "
              "is ranked last")
    m.move(2, "resign")
    assert result_of(m)["ranking"] == [[0, 1, 3], [2]]
    m.write()
    m = Match("resign-lowest-total", "the resigner is ranked last even with the lowest total "
              "(resign while a deal is due)")
    moon4(m, 2)
    m.move(2, "resign")
    assert result_of(m)["ranking"] == [[0, 1, 3], [2]]
    m.write()
    m = base("resign-not-to-move", "a seat that is not to move resigns mid-trick")
    m.moves("0:play 2C; 1:play 5C; 1:resign")
    m.write()
    m = base("resign-after-own-pass", "a seat resigns after its pass, before the exchange",
             npass=2)
    m.moves("0:resign")
    m.write()
    m = Match("resign-in-moon-choice", "a seat resigns while the shooter chooses",
              moon="choose")
    moon4(m, 2)
    m.move(1, "resign")
    m.write()

    # -- result claims ------------------------------------------------------------------
    m = Match("result-claim-false", "a false result claim (totals) exits 1 with a null index",
              moon="subtract")
    moon4(m, 2)
    m.write(("replay",), result_claim={"finished": False, "totals": [0, 0, 26, 0]})
    m = Match("result-claim-finished-false", "a false claim that the match is finished",
              moon="subtract")
    moon4(m, 2)
    m.write(("replay",), result_claim={"finished": True})
    m = Match("result-claim-partial-true", "a claim holding only some keys, all true",
              moon="subtract")
    moon4(m, 2)
    m.write(("replay",), result_claim={"totals": [0, 0, -26, 0], "ranking": [[2], [0, 1, 3]]})

    # -- options defaults ---------------------------------------------------------------
    m = Match("options-missing", "no options: 4 seats, target 100, moon add, dealer 0",
              options=None)
    moon4(m, 2)
    m.write()
    m = Match("options-null", "options null means all defaults", options=None)
    m.log = dict(m.log, options=None)
    m.log["events"] = m.log.pop("events")
    moon4(m, 2)
    m.write()


def QS_NOT_PLAYED(m):
    return all(QS_CARD not in t[1] for t in m.g.tricks)


QS_CARD = cards("QS")[0]


def malformed():
    """Files that are not valid logs: exit 2, worked out by hand."""
    deck = [cname(c) for c in range(52)]
    good = {"format": "cardpost-log/1", "game": "hearts", "options": {"seats": 4},
            "events": [{"deal": deck}]}

    def bad(name, about, code, index=None, log=None, text=None, command="replay"):
        key = name + ":" + command
        write(name, about + ": not a valid log (exit 2)", log or {"events": []},
              (command,), {command: (2, error(index, None, None, code, MESSAGES.get(key)))},
              raw_text=text)

    def misplaced(name, about, index, log, command="replay"):
        """A deal or shuffle where the rules need none: an illegal event (exit 1)."""
        key = name + ":" + command
        write(name, about + ": an illegal event (exit 1)", log, (command,),
              {command: (1, error(index, None, None, "not_due", MESSAGES.get(key)))})

    def variant(**changes):
        log = json.loads(json.dumps(good))
        log.update(changes)
        return log

    bad("bad-json", "truncated JSON", "bad_json",
        text='{"format": "cardpost-log/1", "game": "hearts", "events": [\n')
    bad("bad-json-verify", "truncated JSON, verify checks the structure first", "bad_json",
        text='{"format": "cardpost-log/1", "game": "hearts", "events": [', command="verify")
    bad("not-an-object", "a JSON array", "malformed", text="[]\n")
    bad("bad-format", "an unknown format", "bad_format",
        log=variant(format="cardpost-log/2"))
    bad("unknown-game", "an unknown game", "unknown_game", log=variant(game="bridge"))
    bad("missing-events", "no events", "malformed",
        log={"format": "cardpost-log/1", "game": "hearts"})
    for name, opts in [("seats-7", {"seats": 7}), ("seats-2", {"seats": 2}),
                       ("seats-string", {"seats": "4"}), ("target-0", {"target": 0}),
                       ("target-fraction", {"target": 1.5}), ("target-null", {"target": None}),
                       ("first-dealer-4", {"seats": 4, "first_dealer": 4}),
                       ("first-dealer-negative", {"first_dealer": -1}),
                       ("moon-double", {"moon": "double"}), ("moon-capital", {"moon": "Add"}),
                       ("unknown-key", {"jokers": True}), ("not-an-object", 4)]:
        bad("option-" + name, "bad options %s" % json.dumps(opts), "bad_option",
            log=variant(options=opts))
    bad("option-bad-verify", "verify checks options before the seed", "bad_option",
        log=variant(options={"seats": 9}), command="verify")
    bad("deal-51-cards", "a deal of 51 cards", "bad_deal", 0,
        log=variant(events=[{"deal": deck[:51]}]))
    bad("deal-duplicate", "a deal naming a card twice", "bad_deal", 0,
        log=variant(events=[{"deal": deck[:51] + ["2C"]}]))
    bad("deal-not-a-card", "a deal holding a string that is not a card", "bad_deal", 0,
        log=variant(events=[{"deal": deck[:51] + ["1X"]}]))
    misplaced("deal-not-due", "a second deal before the hand is played", 1,
              log=variant(events=[{"deal": deck}, {"deal": deck}]))
    misplaced("deal-not-due-after-moves", "a deal in the middle of the pass phase", 2,
              log=variant(events=[{"deal": deck}, {"seat": 1, "move": "pass 2C 6C TC"},
                                  {"deal": deck}]))
    misplaced("shuffle-in-hearts", "a shuffle event in Hearts (never due)", 1,
              log=variant(events=[{"deal": deck}, {"shuffle": deck}]))
    for name, ev, index in [("not-an-object", "play 2C", 1),
                            ("deal-and-move", {"deal": deck, "seat": 0, "move": "resign"}, 1),
                            ("empty-object", {}, 1),
                            ("seat-string", {"seat": "0", "move": "resign"}, 1),
                            ("seat-missing", {"move": "resign"}, 1),
                            ("move-number", {"seat": 0, "move": 7}, 1),
                            ("auto-string", {"seat": 0, "move": "resign", "auto": "yes"}, 1)]:
        bad("event-" + name, "a malformed event %s" % json.dumps(ev)[:60], "malformed_event",
            index, log=variant(events=[{"deal": deck}, ev]))


scenarios()
malformed()

if MISSING and len(sys.argv) == 3 and sys.argv[1] == "--fill":
    # Take the engine's message text for new error checks, but only where everything
    # else the engine prints (exit, index, seat, move, code) is what the reference says.
    import subprocess
    bad = 0
    for key, path, command, code, output in MISSING:
        p = subprocess.run([sys.argv[2], command, path], capture_output=True, text=True)
        got = json.loads(p.stdout)
        msg = got.get("error", {}).get("message")
        if p.returncode == code and msg is not None:
            output["error"]["message"] = msg
            if got == output:
                MESSAGES[key] = msg
                continue
        bad += 1
        print("DISAGREE", key, "ref:", code, json.dumps(output), "\n   cardpost:",
              p.returncode, p.stdout, file=sys.stderr)
    with open(MESSAGES_FILE, "w", encoding="utf-8") as f:
        json.dump(MESSAGES, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print("filled", len(MISSING) - bad, "messages; run again to write them", file=sys.stderr)
    sys.exit(1)
if MISSING:
    for key, path, command, code, output in MISSING:
        print("missing message:", key, json.dumps(output), file=sys.stderr)
    sys.exit(1)
print("wrote", len(written), "golden logs to", os.path.normpath(OUT))
