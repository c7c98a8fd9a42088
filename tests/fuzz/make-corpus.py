#!/usr/bin/python3
"""make-corpus.py - write the seed corpus of the fuzz targets into tests/fuzz/corpus/.
(It writes the Hearts logs and the move strings; the seed logs of the other four games,
fuzz_log/<game>-<name>.json, are copies of golden logs from tests/golden/ and stay as they are.)

Valid logs are random matches played through `cardpost legal` (deals derived from a seed as
turn-log.md §5 says, so `verify` accepts them); malformed variants of them; move strings.
Usage: tests/fuzz/make-corpus.py build/cardpost   (deterministic: same output every run)
"""
import hashlib
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS, SUITS = "23456789TJQKA", "CDHS"
CARDS = [r + s for s in SUITS for r in RANKS]


def derive(seed, k, n=52):
    """Chance event k of a match with this seed: Fisher-Yates over the canonical deck."""
    stream = bytearray()
    block = 0

    def u32():
        nonlocal block
        while len(stream) < 4:
            data = seed + b"cardpost" + k.to_bytes(4, "big") + block.to_bytes(4, "big")
            stream.extend(hashlib.sha256(data).digest())
            block += 1
        x = int.from_bytes(stream[:4], "big")
        del stream[:4]
        return x

    def uniform(m):
        while True:
            x = u32()
            if x < m * (2**32 // m):
                return x % m

    a = list(range(n))
    for i in range(n - 1, 0, -1):
        j = uniform(i + 1)
        a[i], a[j] = a[j], a[i]
    return [CARDS[c] for c in a]


def cli(cardpost, cmd, log):
    p = subprocess.run([cardpost, cmd, "-"], input=json.dumps(log), capture_output=True,
                       text=True, check=False)
    return p.returncode, json.loads(p.stdout)


def play(cardpost, rng, game, options, max_events=None, resign_at=None):
    seed = bytes(rng.randrange(256) for _ in range(32))
    log = {"format": "cardpost-log/1", "game": game, "options": options,
           "players": ["p%d" % i for i in range(options.get("seats", 4))],
           "seed": seed.hex(), "seed_commitment": hashlib.sha256(seed).hexdigest(),
           "events": []}
    chance = 0
    while max_events is None or len(log["events"]) < max_events:
        if resign_at is not None and len(log["events"]) == resign_at:
            log["events"].append({"seat": rng.randrange(options.get("seats", 4)),
                                  "move": "resign"})
            break
        code, legal = cli(cardpost, "legal", log)
        assert code == 0, legal
        if not legal["to_move"]:
            code, result = cli(cardpost, "replay", log)
            if result["finished"]:
                break
            log["events"].append({"deal": derive(seed, chance)})
            chance += 1
            continue
        seat = rng.choice(legal["to_move"])
        log["events"].append({"seat": seat, "move": rng.choice(legal["legal"][str(seat)])})
    code, result = cli(cardpost, "replay", log)
    assert code == 0, result
    if result["finished"]:
        log["result"] = {k: result[k] for k in ("finished", "totals", "ranking")}
    return log


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    cardpost = sys.argv[1] if len(sys.argv) > 1 else "build/cardpost"
    rng = random.Random(20240501)
    logs = {
        "hearts-4-one-hand": play(cardpost, rng, "hearts", {"seats": 4, "target": 1}),
        "hearts-3-two-hands": play(cardpost, rng, "hearts",
                                   {"seats": 3, "target": 30, "first_dealer": 2}),
        "hearts-5-moon-choose": play(cardpost, rng, "hearts",
                                     {"seats": 5, "target": 1, "moon": "choose"}),
        "hearts-6-mid-hand": play(cardpost, rng, "hearts", {"seats": 6}, max_events=30),
        "hearts-4-resign": play(cardpost, rng, "hearts", {"seats": 4}, resign_at=20),
    }
    for name, log in logs.items():
        write("fuzz_log", name + ".json", json.dumps(log, separators=(",", ":")))

    base = logs["hearts-4-one-hand"]
    def variant(name, change):
        log = json.loads(json.dumps(base))
        change(log)
        write("fuzz_log", name + ".json", json.dumps(log, separators=(",", ":")))
    variant("bad-format", lambda l: l.update(format="cardpost-log/2"))
    variant("unknown-option", lambda l: l["options"].update(jokers=2))
    variant("short-deal", lambda l: l["events"][0]["deal"].pop())
    variant("repeated-card", lambda l: l["events"][0]["deal"].__setitem__(1, l["events"][0]["deal"][0]))
    variant("deal-not-due", lambda l: l["events"].insert(3, l["events"][0]))
    variant("illegal-move", lambda l: l["events"][1].update(move="play 2C"))
    variant("bad-notation", lambda l: l["events"][1].update(move="pass  2C 3C 4C"))
    variant("seat-out-of-range", lambda l: l["events"][1].update(seat=9))
    variant("false-claim", lambda l: l["result"].update(totals=[0, 0, 0, 0]))
    variant("wrong-commitment", lambda l: l.update(seed_commitment="0" * 64))
    variant("move-before-deal", lambda l: l["events"].insert(0, {"seat": 0, "move": "play 2C"}))
    variant("two-kinds", lambda l: l["events"][1].update(deal=[]))
    write("fuzz_log", "not-json.json", '{"format": "cardpost-log/1", "game": ')
    write("fuzz_log", "empty-hearts.json",
          '{"format":"cardpost-log/1","game":"hearts","events":[]}')
    write("fuzz_log", "resign-first.json",
          '{"format":"cardpost-log/1","game":"hearts","options":null,'
          '"events":[{"seat":1,"move":"resign","auto":true}]}')

    moves = ["play QS", "PLAY qs", "  play 10\u2665 \r\n", "pass 2C 7D TH", "pass 2c 2c 3c",
             "pass", "moon add", "moon SUBTRACT", "lead AS", "take 9\u2663", "stay", "drop",
             "discard", "discard 2H 3H 4H", "move KD", "flip 3", "flip 6", "ready", "resign",
             "play  QS", "play Q", "play 1S", "pass 2C\t3C", "", "\u2660", "play 10x"]
    for i, m in enumerate(moves):
        write("fuzz_notation", "move-%02d" % i, m)
    for i, c in enumerate(["QS", "10h", "A\u2666", "2\u2663", "1", "TX"]):
        write("fuzz_notation", "card-%02d" % i, c)


if __name__ == "__main__":
    main()
