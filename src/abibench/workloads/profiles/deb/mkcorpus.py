"""Deterministic compressible input for the deb-* compressor workloads: text-like words mixed
with pseudo-random runs, the same bytes on every machine for the same size and seed."""

import random
import sys

out, mib = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261122)
words = ["".join(rng.choice("etaoinshrdlucmfwypvbgkjqxz") for _ in range(rng.randint(2, 11)))
         for _ in range(5000)]
with open(out, "wb") as fh:
    size = 0
    while size < mib << 20:
        if rng.random() < 0.1:
            chunk = rng.randbytes(rng.randint(64, 4096))
        else:
            chunk = (" ".join(rng.choice(words) for _ in range(rng.randint(8, 400))) + "\n").encode()
        fh.write(chunk)
        size += len(chunk)
