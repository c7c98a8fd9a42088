#!/usr/bin/python3
"""derive_vectors.py - known answers for the seed-to-deck derivation of turn-log.md §5.

A second, independent implementation written from the spec text alone (hashlib, no
cardpost code). It prints, for a fixed seed, the commitment and the deck dealt by chance
events k = 0, 1 and 7; tests/test_turnlog.c holds that output as constants and checks
tlog_shuffle/tlog_commitment against it. Run by hand: /usr/bin/python3 tests/tools/derive_vectors.py
"""
import hashlib

SEED = bytes(range(32))  # 00 01 02 ... 1f
RANKS = "23456789TJQKA"
SUITS = "CDHS"


def card(c):
    return RANKS[c % 13] + SUITS[c // 13]


class Stream:
    """sha256(seed || "cardpost" || u32be(k) || u32be(b)) for b = 0, 1, 2, ... concatenated."""

    def __init__(self, seed, k):
        self.seed, self.k, self.b, self.buf = seed, k, 0, b""

    def u32(self):
        while len(self.buf) < 4:
            block = self.seed + b"cardpost" + self.k.to_bytes(4, "big") + self.b.to_bytes(4, "big")
            self.buf += hashlib.sha256(block).digest()
            self.b += 1
        x, self.buf = int.from_bytes(self.buf[:4], "big"), self.buf[4:]
        return x

    def uniform(self, m):
        while True:
            x = self.u32()
            if x < m * (2**32 // m):
                return x % m


def deal(seed, k):
    a = list(range(52))  # canonical deck order 2C 3C ... AS
    s = Stream(seed, k)
    for i in range(51, 0, -1):
        j = s.uniform(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


if __name__ == "__main__":
    print("seed", SEED.hex())
    print("commitment", hashlib.sha256(SEED).hexdigest())
    for k in (0, 1, 7):
        print("k=%d" % k, " ".join(card(c) for c in deal(SEED, k)))
