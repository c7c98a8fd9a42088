#!/usr/bin/python3
"""mk_horse_thief.py - writes the Horse Thief golden logs of tests/golden/horse-thief/ and
their .expect.json files. Committed, NOT run by the test suite: run it by hand with
/usr/bin/python3 after changing a scenario (it needs build/cardpost), then run the runner.

Every scenario is a stacked deck whose outcome was worked out by hand from rules.md §4;
the expected replay/legal outputs below are written out literally. The script runs
build/cardpost on each log and refuses to write anything that disagrees. Only the
human-readable error messages are taken from the engine.
"""
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "horse-thief")
CARDPOST = os.environ.get("CARDPOST", os.path.join(HERE, "..", "..", "..", "build", "cardpost"))

RANKS = "23456789TJQKA"
SUITS = "CDHS"
DECK = [r + s for s in SUITS for r in RANKS]  # canonical deck order


def stack(n, dealer, hands, turn_up, stock=""):
    """A deck (top first) giving seat s the five cards hands[s] (None: leftovers), the
    turn-up at position 5n and `stock` on top of the stock; the rest in deck order."""
    deck = [None] * 52
    used = set()

    def place(pos, card):
        assert card in DECK and card not in used, card
        deck[pos] = card
        used.add(card)

    for s, hand in hands.items():
        cs = hand.split()
        assert len(cs) == 5
        for j, c in enumerate(cs):
            place(j * n + (s - dealer - 1) % n, c)
    place(5 * n, turn_up)
    for i, c in enumerate(stock.split()):
        place(5 * n + 1 + i, c)
    rest = [c for c in DECK if c not in used]
    for i in range(52):
        if deck[i] is None:
            deck[i] = rest.pop(0)
    return deck


def log(seats=None, target=None, first_dealer=None, options="given", events=()):
    j = {"format": "cardpost-log/1", "game": "horse-thief"}
    if options == "given":
        o = {}
        if seats is not None:
            o["seats"] = seats
        if target is not None:
            o["target"] = target
        if first_dealer is not None:
            o["first_dealer"] = first_dealer
        j["options"] = o
    elif options is not None:
        j["options"] = options
    j["events"] = list(events)
    return j


def moves(script):
    """'0 stay; 1 drop' -> events."""
    out = []
    for part in script.split(";"):
        part = part.strip()
        if part:
            seat, text = part.split(" ", 1)
            out.append({"seat": int(seat), "move": text})
    return out


def deal(deck):
    return {"deal": deck}


def result(totals, ranking, hands, to_move=(), finished=None, resigned=None):
    return {"finished": bool(finished) if finished is not None else not to_move and bool(hands),
            "totals": totals, "ranking": ranking, "hands": [{"scores": h} for h in hands],
            "resigned": resigned, "to_move": list(to_move)}


def error(index, seat, move, code):
    """An error object; the message is filled in from the engine."""
    return {"error": {"index": index, "seat": seat, "move": move, "code": code, "message": None}}


def run(command, path):
    p = subprocess.run([CARDPOST, command, path], capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout)


def dump_log(j):
    head = {k: v for k, v in j.items() if k != "events"}
    text = json.dumps(head)[:-1] + ', "events": [\n  '
    text += ",\n  ".join(json.dumps(ev) for ev in j["events"])
    return text + "\n]}\n"


written = []


def write(name, about, j, checks):
    """checks: [(command, exit, expected output)]."""
    path = os.path.join(OUT, name + ".json")
    with open(path, "w") as f:
        f.write(dump_log(j))
    out = []
    for command, code, want in checks:
        got_code, got = run(command, path)
        if "error" in want and want["error"].get("message") is None and "error" in got:
            want = json.loads(json.dumps(want))
            want["error"]["message"] = got["error"]["message"]
        if got_code != code or got != want:
            sys.exit("%s %s: got exit %d %s\nwant exit %d %s" % (name, command, got_code,
                                                                 json.dumps(got), code,
                                                                 json.dumps(want)))
        out.append({"command": command, "exit": code, "output": want})
    with open(os.path.join(OUT, name + ".expect.json"), "w") as f:
        f.write('{"about": %s,\n "checks": [\n  ' % json.dumps(about, ensure_ascii=False))
        f.write(",\n  ".join(json.dumps(c) for c in out))
        f.write("\n]}\n")
    written.append(name)


def subsets(cards, d):
    """Every discard of at most d of `cards` (given in deck order), canonical order."""
    from itertools import combinations
    out = ["discard"]
    for k in range(1, d + 1):
        out += ["discard " + " ".join(c) for c in combinations(cards, k)]
    return out


# ---- Stacked hands ---------------------------------------------------------------------------

# n=3, dealer 0 (so seat 1 leads), trump hearts: JH the right bower, JD the left.
F_HANDS = {0: "QD AC KC QC 6S", 1: "AD JH 2C 3C 4C", 2: "KD JD 9S 8S 7S"}
F_DECK = stack(3, 0, F_HANDS, "5H", "6H 7H 8H 9H TH QH")

# n=3, dealer 0, trump spades: seat 1 holds the top trumps, seat 2 the left bower JC.
S_HANDS = {0: "2D 3D 4D 5D 6D", 1: "JS AS KS QS TS", 2: "JC 2C 3C 4C 5C"}
S_DECK = stack(3, 0, S_HANDS, "5S")


def main():
    os.makedirs(OUT, exist_ok=True)

    # -- Complete matches --------------------------------------------------------------------
    # Spades: nobody stays or drops; everyone discards (keeps all); seat 1 leads the right
    # bower, seat 2 must follow with the left bower JC (its only trump); seat 1 takes all
    # five tricks: +5, the others -3 each. Target 1: over after the hand.
    write("spades-trump", "§4.2: trump spades, everyone plays (no stay phase); the left "
          "bower JC follows a spade lead; §4.6 five tricks score 5, no trick -3; §4.7 end",
          log(3, 1, 0, events=[deal(S_DECK)] + moves(
              "1 discard; 2 discard; 0 discard;"
              "1 play JS; 2 play JC; 0 play 2D;"
              "1 play AS; 2 play 2C; 0 play 3D;"
              "1 play KS; 2 play 3C; 0 play 4D;"
              "1 play QS; 2 play 4C; 0 play 5D;"
              "1 play TS; 2 play 5C; 0 play 6D")),
          [("replay", 0, result([-3, 5, -3], [[1], [0, 2]], [[-3, 5, -3]])),
           ("legal", 0, {"to_move": [], "legal": {}})])

    # Default options (5 seats, target 15, first dealer 0); the canonical deck turns up
    # AD (position 25): diamonds. Seat 2 stays alone three times: 5 + 5 + 5 = 15.
    write("lone-stayer", "§4.2: exactly one seat stays: it scores 5 and the hand ends; "
          "default options (5 seats, target 15); the end at 15, highest first",
          log(options=None, events=[deal(DECK)] + moves("0 drop; 1 drop; 2 stay; 3 drop; 4 drop")
              + [deal(DECK)] + moves("4 drop; 2 stay; 3 drop; 1 drop; 0 drop")
              + [deal(DECK)] + moves("2 stay; 0 drop; 1 drop; 3 drop; 4 drop")),
          [("replay", 0, result([0, 0, 15, 0, 0], [[2], [0, 1, 3, 4]],
                                [[0, 0, 5, 0, 0]] * 3)),
           ("legal", 0, {"to_move": [], "legal": {}})])

    # n=4: canonical deck turns up 9D (position 20). Hand 1: nobody stays, no score.
    # Hand 2 (dealer 1): seat 3 stays alone, 5 >= target 5.
    nobody = [deal(DECK)] + moves("3 drop; 2 drop; 1 drop; 0 drop")
    write("nobody-stays", "§4.2 Decision: nobody stays: the hand ends with no score "
          "(a hand of zeros) and the deal passes on",
          log(4, 5, 0, events=nobody + [deal(DECK)] + moves("0 drop; 1 drop; 2 drop; 3 stay")),
          [("replay", 0, result([0, 0, 0, 5], [[3], [0, 1, 2]], [[0, 0, 0, 0], [0, 0, 0, 5]]))])
    write("cut-nobody-stayed", "after a hand where nobody stayed, a deal is due: no seat moves",
          log(4, 5, 0, events=nobody),
          [("replay", 0, result([0, 0, 0, 0], [[0, 1, 2, 3]], [[0, 0, 0, 0]], finished=False)),
           ("legal", 0, {"to_move": [], "legal": {}})])

    # n=4, trump hearts (turn-up 2H). Right bower beats left bower beats ace of trump;
    # seat 0 takes four tricks, seat 3 one, seats 1 and 2 none: -3 each.
    m3 = stack(4, 0, {0: "KH AS 2D 3D 4D", 1: "2C 3C 4C 5C 6C", 2: "JD 2S 3S 4S 5S",
                      3: "JH 6S 7S 8S 9S"}, "2H")
    write("minus-three", "§4.6: a staying seat with no trick scores -3; §4.4 the right "
          "bower over the left over the ace of trump; ties below first share a place",
          log(4, 4, 0, events=[deal(m3)] + moves(
              "0 stay; 1 stay; 2 stay; 3 stay; 0 discard; 1 discard; 2 discard; 3 discard;"
              "1 play 2C; 2 play JD; 3 play JH; 0 play KH;"
              "3 play 6S; 0 play AS; 1 play 3C; 2 play 2S;"
              "0 play 2D; 1 play 4C; 2 play 3S; 3 play 7S;"
              "0 play 3D; 1 play 5C; 2 play 4S; 3 play 8S;"
              "0 play 4D; 1 play 6C; 2 play 5S; 3 play 9S")),
          [("replay", 0, result([4, -3, -3, 1], [[0], [3], [1, 2]], [[4, -3, -3, 1]]))])

    # n=3, target 2, no card of trump (hearts) in play: 1 and 2 take two tricks each, 0 one.
    tie = stack(3, 0, {0: "7S 8S 9S TS 2C", 1: "AC KC 2D 3D 4D", 2: "AD KD QD 5S 6S"}, "2H")
    write("tie-for-first", "§4.7 Decision: seats tied for the highest total share first place",
          log(3, 2, 0, events=[deal(tie)] + moves(
              "0 stay; 1 stay; 2 stay; 2 discard; 1 discard; 0 discard;"
              "1 play AC; 2 play 6S; 0 play 2C;"
              "1 play KC; 2 play QD; 0 play 7S;"
              "1 play 2D; 2 play AD; 0 play 8S;"
              "2 play KD; 0 play 9S; 1 play 3D;"
              "2 play 5S; 0 play TS; 1 play 4D")),
          [("replay", 0, result([1, 2, 2], [[1, 2], [0]], [[1, 2, 2]]))])

    # -- Cut points ----------------------------------------------------------------------------
    write("cut-spades-discard", "§4.2/§4.3: trump spades: straight to the discard phase, every "
          "seat to move; legal lists every discard of 0 to 3 cards",
          log(3, 1, 0, events=[deal(S_DECK)]),
          [("replay", 0, result([0, 0, 0], [[0, 1, 2]], [], to_move=[0, 1, 2])),
           ("legal", 0, {"to_move": [0, 1, 2], "legal": {
               "0": subsets(["2D", "3D", "4D", "5D", "6D"], 3),
               "1": subsets(["TS", "JS", "QS", "KS", "AS"], 3),
               "2": subsets(["2C", "3C", "4C", "5C", "JC"], 3)}})])
    write("cut-spades-left-bower", "§4.4: a spade (trump) is led: the left bower JC is a "
          "trump and must follow; it is seat 2's only trump",
          log(3, 1, 0, events=[deal(S_DECK)] + moves("0 discard; 2 discard; 1 discard; 1 play JS")),
          [("legal", 0, {"to_move": [2], "legal": {"2": ["play JC"]}})])
    write("cut-left-bower-not-diamond", "§4.4: a diamond is led under hearts trump: the left "
          "bower JD is not a diamond, so seat 2 must play KD",
          log(3, 15, 0, events=[deal(F_DECK)] + moves(
              "0 stay; 1 stay; 2 stay; 0 discard; 1 discard; 2 discard; 1 play AD")),
          [("legal", 0, {"to_move": [2], "legal": {"2": ["play KD"]}})])
    write("cut-stay-partial", "§0 secret moves: with two of four stay/drop moves in, the "
          "other two are to move; nothing resolved yet",
          log(4, 15, 0, events=[deal(DECK)] + moves("2 stay; 0 drop")),
          [("replay", 0, result([0, 0, 0, 0], [[0, 1, 2, 3]], [], to_move=[1, 3])),
           ("legal", 0, {"to_move": [1, 3], "legal": {"1": ["stay", "drop"],
                                                      "3": ["stay", "drop"]}})])
    # Seven seats: d = 2. Canonical deck: turn-up JH (position 35). Seat 6 holds positions
    # 5, 12, 19, 26, 33: 7C AC 8D 2H 9H.
    write("cut-7-discard", "§4.3: seven seats: the draw limit is 2; the last seat to discard "
          "may discard any 0, 1 or 2 of its cards",
          log(7, 15, 0, events=[deal(DECK)] + moves(
              "0 stay; 1 stay; 2 stay; 3 stay; 4 stay; 5 stay; 6 stay;"
              "0 discard; 1 discard 9C; 2 discard; 3 discard; 4 discard; 5 discard")),
          [("legal", 0, {"to_move": [6], "legal": {"6": subsets(["7C", "AC", "8D", "2H", "9H"],
                                                               2)}})])
    # Nine seats, first dealer 4: canonical deck turns up 8S (position 45): spades, and
    # d = 0: seat 5 (the dealer's left) leads at once from 2C JC 7D 3H QH.
    write("cut-9-spades-play", "§4.2/§4.3: nine seats, trump spades: no stay phase and no "
          "draw (d = 0); the dealer's left leads",
          log(9, 15, 4, events=[deal(DECK)]),
          [("legal", 0, {"to_move": [5], "legal": {"5": ["play 2C", "play JC", "play 7D",
                                                         "play 3H", "play QH"]}})])
    # The dealer (seat 0) stays and discards three: replacements go from the dealer's left,
    # seat 1 first (6H 7H), seat 2 dropped, then the dealer: the turn-up 5H, 8H, 9H. Seat 1
    # leads 4C; the dealer, void in clubs, may play any card of QD 5H 8H 9H 6S.
    write("cut-dealer-turn-up", "§4.3: the dealer discarding k takes the turn-up plus k-1 "
          "from the stock, after the seats to its left",
          log(3, 15, 0, events=[deal(F_DECK)] + moves(
              "0 stay; 1 stay; 2 drop; 0 discard AC KC QC; 1 discard 2C 3C; 1 play 4C")),
          [("replay", 0, result([0, 0, 0], [[0, 1, 2]], [], to_move=[0])),
           ("legal", 0, {"to_move": [0], "legal": {"0": ["play QD", "play 5H", "play 8H",
                                                         "play 9H", "play 6S"]}})])

    # -- Illegal events (exit 1) --------------------------------------------------------------
    def illegal(name, about, j, index, seat, move, code):
        write(name, about, j, [("replay", 1, error(index, seat, move, code))])

    illegal("illegal-stay-spades", "§4.2: trump spades: stay is not a move",
            log(3, 15, 0, events=[deal(S_DECK)] + moves("1 stay")), 1, 1, "stay", "spades_trump")
    illegal("illegal-drop-spades", "§4.2: trump spades: drop is not a move",
            log(3, 15, 0, events=[deal(S_DECK)] + moves("0 discard; 2 drop")), 2, 2, "drop",
            "spades_trump")
    illegal("illegal-revise-stay", "§0 secret moves: a stay cannot be changed",
            log(3, 15, 0, events=[deal(F_DECK)] + moves("0 stay; 1 drop; 0 drop")), 3, 0, "drop",
            "already_submitted")
    illegal("illegal-discard-four", "§4.3: at most d = 3 cards",
            log(3, 15, 0, events=[deal(F_DECK)] + moves(
                "0 stay; 1 stay; 2 stay; 0 discard AC KC QC 6S")), 4, 0, "discard AC KC QC 6S",
            "too_many_cards")
    illegal("illegal-discard-not-held", "§4.3: a discard names cards of the seat's own hand",
            log(3, 15, 0, events=[deal(F_DECK)] + moves("0 stay; 1 stay; 2 stay; 2 discard AD")),
            4, 2, "discard AD", "not_in_hand")
    illegal("illegal-discard-twice", "§0 secret moves: one discard per seat",
            log(3, 15, 0, events=[deal(F_DECK)] + moves(
                "0 stay; 1 stay; 2 stay; 1 discard 2C; 1 discard")), 5, 1, "discard",
            "already_submitted")
    illegal("illegal-dropped-discards", "§4.2: a dropped seat takes no further part",
            log(3, 15, 0, events=[deal(F_DECK)] + moves("0 stay; 1 stay; 2 drop; 2 discard")),
            4, 2, "discard", "dropped")
    illegal("illegal-dropped-plays", "§4.2: a dropped seat takes no further part",
            log(3, 15, 0, events=[deal(F_DECK)] + moves(
                "0 stay; 1 drop; 2 stay; 0 discard; 2 discard; 1 play AD")), 6, 1, "play AD",
            "dropped")
    illegal("illegal-left-bower-renege", "§4.4: trump led: the left bower JD must follow",
            log(3, 15, 0, events=[deal(F_DECK)] + moves(
                "0 stay; 1 stay; 2 stay; 0 discard; 1 discard; 2 discard; 1 play JH; 2 play KD")),
            8, 2, "play KD", "must_follow_suit")
    illegal("illegal-discard-9-seats", "§4.3: nine seats: d = 0, no discard phase",
            log(9, 15, 0, events=[deal(stack(9, 0, {}, "2D"))] + moves(
                "0 drop; 1 drop; 2 drop; 3 drop; 4 drop; 5 drop; 6 drop; 7 stay; 8 stay;"
                "8 discard")), 10, 8, "discard", "wrong_phase")
    illegal("illegal-stay-before-deal", "turn-log.md §2: no move while a deal is due",
            log(3, 15, 0, events=moves("0 stay")), 0, 0, "stay", "chance_due")
    illegal("illegal-play-out-of-turn", "§4.5: the first staying seat left of the dealer leads",
            log(3, 15, 0, events=[deal(F_DECK)] + moves(
                "0 stay; 1 stay; 2 stay; 0 discard; 1 discard; 2 discard; 2 play KD")),
            7, 2, "play KD", "not_your_turn")

    # -- Bad options (exit 2) ----------------------------------------------------------------
    def bad(name, about, options):
        write(name, about, log(options=options, events=[]),
              [("replay", 2, error(None, None, None, "bad_option"))])

    bad("option-seats-2", "§4: horse-thief takes 3 to 10 seats", {"seats": 2})
    bad("option-seats-11", "§4: horse-thief takes 3 to 10 seats", {"seats": 11})
    bad("option-moon", "turn-log.md §2: moon is not an option of horse-thief", {"moon": "add"})
    bad("option-first-dealer-5", "first_dealer must be a seat", {"seats": 5, "first_dealer": 5})
    write("option-seats-10", "§4: ten seats is allowed; 5 x 10 + 1 cards leave a stock of one",
          log(10, 15, 9, events=[]),
          [("replay", 0, result([0] * 10, [list(range(10))], [], finished=False))])

    # -- Verify: a seeded match (turn-log.md §5, derived here with hashlib) ------------------
    seed = bytes.fromhex("6f726368617264206f66206f7261636c65730068616e642d7468696566210a0b")
    deck = derive_deal(seed, 0)
    assert deck[15][1] != "S", "pick another seed: this one turns up a spade"
    j = log(3, 5, 0, events=[deal(deck)] + moves("0 drop; 1 stay; 2 drop"))
    j["seed"] = seed.hex()
    j["seed_commitment"] = hashlib.sha256(seed).hexdigest()
    write("verify-seeded", "turn-log.md §5: a seeded match verifies; seat 1 stays alone",
          j, [("verify", 0, result([0, 5, 0], [[1], [0, 2]], [[0, 5, 0]]))])
    j["events"][0] = deal([deck[1], deck[0]] + deck[2:])  # two hand cards swapped
    write("verify-wrong-deal", "turn-log.md §5: a deal that is not the seed's fails verify "
          "at its index (exit 1), though it replays",
          j, [("verify", 1, error(0, None, None, "chance_mismatch")),
              ("replay", 0, result([0, 5, 0], [[1], [0, 2]], [[0, 5, 0]]))])

    print("wrote %d golden logs" % len(written))


def derive_deal(seed, k):
    """turn-log.md §5: the deal of chance event k: a shuffle of the canonical deck."""
    def stream():
        b = 0
        while True:
            block = hashlib.sha256(seed + b"cardpost" + k.to_bytes(4, "big") +
                                   b.to_bytes(4, "big")).digest()
            for i in range(0, 32, 4):
                yield int.from_bytes(block[i:i + 4], "big")
            b += 1

    words = stream()

    def uniform(m):
        while True:
            x = next(words)
            if x < m * (2 ** 32 // m):
                return x % m

    a = list(DECK)
    for i in range(51, 0, -1):
        j = uniform(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


if __name__ == "__main__":
    main()
