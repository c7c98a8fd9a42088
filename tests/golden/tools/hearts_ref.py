"""hearts_ref.py - an independent reference of Hearts (rules.md §1), the cardpost-log/1
replay and the seed-to-deck derivation (turn-log.md §2-§5), written from the spec alone
for mkgolden.py. It computes what `cardpost replay|legal|verify` must print, so the golden
files are a cross-check of the C engine, not a copy of it. Not run by the test suite.
"""
import hashlib
import itertools

RANKS = "23456789TJQKA"
SUITS = "CDHS"
SYMBOLS = {"\u2663": "C", "\u2666": "D", "\u2665": "H", "\u2660": "S"}
QS = 3 * 13 + 10
HEARTS = frozenset(range(26, 39))
POINT_CARDS = HEARTS | {QS}
VERBS = ["resign", "pass", "play", "moon", "lead", "take", "stay", "drop", "discard",
         "move", "flip", "ready"]
WHITE = " \t\r\n\v\f"


def cname(c):
    return RANKS[c % 13] + SUITS[c // 13]


def suit(c):
    return c // 13


def cparse(word):
    """One card, leniently (turn-log.md §1); ValueError if it is not one."""
    if word[:2] == "10":
        rank, rest = 8, word[2:]
    elif word and word[0].upper() in RANKS:
        rank, rest = RANKS.index(word[0].upper()), word[1:]
    else:
        raise ValueError(word)
    rest = SYMBOLS.get(rest, rest.upper())
    if len(rest) != 1 or rest not in SUITS:
        raise ValueError(word)
    return SUITS.index(rest) * 13 + rank


def cards(text):
    return [cparse(w) for w in text.split()]


def points(taken):
    return sum(1 for c in taken if c in HEARTS) + (13 if QS in taken else 0)


# ---- turn-log.md §5 ---------------------------------------------------------------------

def _stream(seed, k):
    b = 0
    while True:
        block = hashlib.sha256(seed + b"cardpost" + k.to_bytes(4, "big") +
                               b.to_bytes(4, "big")).digest()
        yield from block
        b += 1


def _uniform(it, m):
    limit = m * (2 ** 32 // m)
    while True:
        x = int.from_bytes(bytes(next(it) for _ in range(4)), "big")
        if x < limit:
            return x % m


def shuffle(seed, k, items):
    a = list(items)
    it = _stream(seed, k)
    for i in range(len(a) - 1, 0, -1):
        j = _uniform(it, i + 1)
        a[i], a[j] = a[j], a[i]
    return a


def commitment(seed):
    return hashlib.sha256(seed).hexdigest()


# ---- moves -------------------------------------------------------------------------------

class Illegal(Exception):
    """An illegal event: exit 1 at its index."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


class Invalid(Exception):
    """Not a valid log: exit 2."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def parse_move(text):
    """(verb, args) from move text; Illegal('bad_notation') when it is not a move."""
    t = text.strip(WHITE)
    if not t:
        raise Illegal("bad_notation")
    words = t.split(" ")
    if any(w == "" or any(ch in WHITE or ch == "\0" for ch in w) for w in words):
        raise Illegal("bad_notation")
    verb = words[0].lower()
    if verb not in VERBS:
        raise Illegal("bad_notation")
    args = words[1:]
    try:
        if verb in ("resign", "stay", "drop", "ready"):
            if args:
                raise ValueError
            return verb, None
        if verb in ("play", "lead", "take", "move"):
            if len(args) != 1:
                raise ValueError
            return verb, cparse(args[0])
        if verb in ("pass", "discard"):
            return verb, [cparse(a) for a in args]
        if verb == "moon":
            if len(args) != 1 or args[0].lower() not in ("add", "subtract"):
                raise ValueError
            return verb, args[0].lower()
        if verb == "flip":
            if len(args) != 1 or args[0] not in ("1", "2", "3", "4", "5"):
                raise ValueError
            return verb, int(args[0])
    except ValueError:
        raise Illegal("bad_notation") from None
    raise Illegal("bad_notation")


# ---- the game ----------------------------------------------------------------------------

class Hearts:
    def __init__(self, seats=4, target=100, moon="add", first_dealer=0):
        self.n = seats
        self.target = target
        self.moon = moon
        self.first_dealer = first_dealer
        self.size = 52 // seats
        self.totals = [0] * seats
        self.history = []          # each completed hand's scores
        self.over = False
        self.resigned = None
        self.phase = "deal"
        self.dealer = first_dealer
        self.hands = [set() for _ in range(seats)]
        self.hole = set()
        self.hole_owner = None
        self.pass_dir = None

    # -- derived
    def hand_number(self):
        return len(self.history) + 1

    def due(self):
        return not self.over and self.phase == "deal"

    def cycle(self):
        if self.n in (4, 6):
            return ["left", "right", "across", "hold"]
        return ["left", "right", "hold"]

    def pass_to(self, s):
        d = self.pass_dir
        return {"left": (s + 1) % self.n, "right": (s - 1) % self.n,
                "across": (s + self.n // 2) % self.n}[d]

    def holder(self, c):
        return next(s for s in range(self.n) if c in self.hands[s])

    def current(self):
        return (self.leader + len(self.trick)) % self.n

    def to_move(self):
        if self.over or self.phase == "deal":
            return []
        if self.phase == "pass":
            return [s for s in range(self.n) if s not in self.passes]
        if self.phase == "play":
            return [self.current()]
        if self.phase == "moon":
            return [self.shooter]
        return []

    def playable(self, s):
        hand = self.hands[s]
        if not self.trick:
            if self.tricks_done == 0:
                return {self.first_lead} & hand
            if not self.broken:
                safe = {c for c in hand if c not in HEARTS}
                if safe:
                    return safe
            return set(hand)
        led = suit(self.trick[0])
        follow = {c for c in hand if suit(c) == led}
        if follow:
            return follow
        if self.tricks_done == 0:
            safe = {c for c in hand if c not in POINT_CARDS}
            if safe:
                return safe
        return set(hand)

    def legal(self, s):
        if s not in self.to_move():
            return []
        if self.phase == "pass":
            return ["pass " + " ".join(cname(c) for c in combo)
                    for combo in itertools.combinations(sorted(self.hands[s]), 3)]
        if self.phase == "play":
            return ["play " + cname(c) for c in sorted(self.playable(s))]
        if self.phase == "moon":
            return ["moon add", "moon subtract"]
        return []

    # -- chance
    def deal(self, deck):
        if not self.due():
            raise Invalid("not_due")
        if len(deck) != 52 or sorted(deck) != list(range(52)):
            raise Invalid("bad_deal")
        k = self.hand_number()
        n = self.n
        self.dealer = (self.first_dealer + k - 1) % n
        self.hands = [set() for _ in range(n)]
        self.hole = set()
        for i, c in enumerate(deck):
            if i < n * self.size:
                self.hands[(self.dealer + 1 + i) % n].add(c)
            else:
                self.hole.add(c)
        cyc = self.cycle()
        self.pass_dir = cyc[(k - 1) % len(cyc)]
        self.passes = {}
        self.received = [set() for _ in range(n)]
        self.taken = [set() for _ in range(n)]
        self.trick = []
        self.tricks = []
        self.tricks_done = 0
        self.broken = False
        self.hole_owner = None
        self.shooter = None
        if self.pass_dir == "hold":
            self.start_play()
        else:
            self.phase = "pass"

    def start_play(self):
        self.first_lead = min(c for c in range(13) if c not in self.hole)
        self.leader = self.holder(self.first_lead)
        self.phase = "play"

    # -- moves
    def move(self, seat, text):
        if not isinstance(seat, int) or not 0 <= seat < self.n:
            raise Illegal("bad_seat")
        verb, arg = parse_move(text)
        if self.over:
            raise Illegal("match_over")
        if verb == "resign":
            self.resigned = seat
            self.over = True
            return
        if self.phase == "deal":
            raise Illegal("chance_due")
        if verb == "pass":
            self.do_pass(seat, arg)
        elif verb == "play":
            self.do_play(seat, arg)
        elif verb == "moon":
            if self.moon != "choose" or self.phase != "moon":
                raise Illegal("wrong_phase")
            if seat != self.shooter:
                raise Illegal("not_your_turn")
            self.finish(self.moon_scores(seat, arg == "subtract"))
        else:
            raise Illegal("not_a_hearts_move")

    def do_pass(self, seat, named):
        if self.phase != "pass":
            raise Illegal("wrong_phase")
        if seat in self.passes:
            raise Illegal("already_submitted")
        if len(named) != 3:
            raise Illegal("wrong_card_count")
        if len(set(named)) != 3:
            raise Illegal("duplicate_card")
        if not set(named) <= self.hands[seat]:
            raise Illegal("not_in_hand")
        self.passes[seat] = set(named)
        if len(self.passes) < self.n:
            return
        for s in range(self.n):
            self.hands[s] -= self.passes[s]
        for s in range(self.n):
            to = self.pass_to(s)
            self.hands[to] |= self.passes[s]
            self.received[to] = set(self.passes[s])
        self.start_play()

    def do_play(self, seat, c):
        if self.phase != "play":
            raise Illegal("wrong_phase")
        if seat != self.current():
            raise Illegal("not_your_turn")
        hand = self.hands[seat]
        if c not in hand:
            raise Illegal("not_in_hand")
        if c not in self.playable(seat):
            if not self.trick:
                raise Illegal("must_lead_lowest_club" if self.tricks_done == 0
                              else "hearts_not_broken")
            if any(suit(x) == suit(self.trick[0]) for x in hand):
                raise Illegal("must_follow_suit")
            raise Illegal("no_points_first_trick")
        hand.discard(c)
        self.trick.append(c)
        if len(self.trick) == self.n:
            self.complete_trick()

    def complete_trick(self):
        led = suit(self.trick[0])
        best = max((i for i in range(self.n) if suit(self.trick[i]) == led),
                   key=lambda i: self.trick[i])
        winner = (self.leader + best) % self.n
        self.taken[winner] |= set(self.trick)
        if any(c in HEARTS for c in self.trick):
            self.broken = True
            if self.hole and self.hole_owner is None:
                self.hole_owner = winner
                self.taken[winner] |= self.hole
        self.tricks.append((self.leader, list(self.trick), winner))
        self.trick = []
        self.tricks_done += 1
        self.leader = winner
        if self.tricks_done == self.size:
            self.end_hand()

    def moon_scores(self, shooter, subtract):
        if subtract:
            return [-26 if s == shooter else 0 for s in range(self.n)]
        return [0 if s == shooter else 26 for s in range(self.n)]

    def end_hand(self):
        scores = [points(t) for t in self.taken]
        assert sum(scores) == 26, scores
        if 26 in scores:
            shooter = scores.index(26)
            if self.moon == "choose":
                self.shooter = shooter
                self.phase = "moon"
                return
            scores = self.moon_scores(shooter, self.moon == "subtract")
        self.finish(scores)

    def finish(self, scores):
        self.history.append(list(scores))
        self.totals = [t + s for t, s in zip(self.totals, scores)]
        self.shooter = None
        if max(self.totals) >= self.target:
            self.over = True
            self.phase = "over"
        else:
            self.phase = "deal"
            self.dealer = (self.first_dealer + len(self.history)) % self.n

    # -- outputs (turn-log.md §3, §4)
    def ranking(self):
        seats = sorted((s for s in range(self.n) if s != self.resigned),
                       key=lambda s: (self.totals[s], s))
        places = []
        for s in seats:
            if places and self.totals[places[-1][-1]] == self.totals[s]:
                places[-1].append(s)
            else:
                places.append([s])
        if self.resigned is not None:
            places.append([self.resigned])
        return places

    def result(self):
        return {"finished": self.over, "totals": list(self.totals),
                "ranking": self.ranking(),
                "hands": [{"scores": list(h)} for h in self.history],
                "resigned": self.resigned, "to_move": self.to_move()}

    def legal_json(self):
        tm = self.to_move()
        return {"to_move": tm, "legal": {str(s): self.legal(s) for s in tm}}


OPTION_DEFAULTS = {"seats": 4, "target": 100, "moon": "add", "first_dealer": 0}


def replay(log, verify=False):
    """(exit, output without error messages, engine) for a well-formed hearts log given as
    a dict. Structure errors are the caller's to construct (mkgolden writes those by hand);
    this raises nothing for them except deals (not due / not a permutation)."""
    opts = dict(OPTION_DEFAULTS)
    opts.update(log.get("options") or {})
    g = Hearts(**opts)

    def err(exit_code, index, code, ev=None):
        return exit_code, {"error": {"index": index,
                                     "seat": ev["seat"] if ev and "seat" in ev else None,
                                     "move": ev["move"] if ev and "move" in ev else None,
                                     "code": code, "message": None}}, g

    seed = None
    if verify:
        s, c = log.get("seed"), log.get("seed_commitment")
        if not isinstance(s, str):
            return err(1, None, "missing_seed")
        if not isinstance(c, str):
            return err(1, None, "missing_commitment")
        seed = bytes.fromhex(s)
        if commitment(seed) != c.lower():
            return err(1, None, "commitment_mismatch")
    k = 0
    for i, ev in enumerate(log["events"]):
        if "deal" in ev:
            deck = [cparse(x) for x in ev["deal"]]
            try:
                g.deal(deck)
            except Invalid as e:
                return err(2, i, e.code)
            if verify and deck != shuffle(seed, k, range(52)):
                return err(1, i, "chance_mismatch")
            k += 1
            continue
        try:
            g.move(ev["seat"], ev["move"])
        except Illegal as e:
            return err(1, i, e.code, ev)
    claim = log.get("result")
    if claim:
        res = g.result()
        for key, val in claim.items():
            if res.get(key, KeyError) != val:
                return err(1, None, "result_mismatch")
    return 0, g.result(), g
