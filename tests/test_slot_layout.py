"""The varlen chunk-slot layout K1 and K2 share (k1_prepare's docstring): chunk j of sequence n
goes to slot bos_n // 16 + n + j. K2 computes a sequence's first slot from that formula, K1 a
slot's sequence by a 17-step binary search over f(n) = bos_n // 16 + n. Checked here in integer
arithmetic on random batches (empty and one-token sequences included) for the two properties
the kernels rest on: the slots of all chunks are distinct and below NC = T // 16 + N, and the
search maps each slot back to its (sequence, chunk)."""
import random

import pytest

C = 16


def search(cu, s):
    """K1's loop, step for step (clamps included)."""
    N = len(cu) - 1
    lo, hi = 0, N - 1
    for _ in range(17):
        mid = (max(min(lo, N - 1), 0) + max(min(hi, N - 1), 0) + 1) // 2
        f_mid = cu[mid] // C + mid
        if lo < hi:
            if f_mid <= s:
                lo = mid
            else:
                hi = mid - 1
    n = max(min(lo, N - 1), 0)
    j = s - (cu[n] // C + n)
    nch = -(-(cu[n + 1] - cu[n]) // C)
    return (n, j) if 0 <= j < nch else None


@pytest.mark.parametrize("seed", range(40))
def test_slots_distinct_bounded_and_found(seed):
    rng = random.Random(seed)
    N = rng.choice([1, 2, 3, 17, 200, 1000])
    lens = [rng.choice([0, 1, 15, 16, 17, 33, 64, rng.randrange(0, 300)]) for _ in range(N)]
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    T = cu[-1]
    NC = T // C + N
    owner = {}
    for n in range(N):
        for j in range(-(-lens[n] // C)):
            s = cu[n] // C + n + j
            assert 0 <= s < NC and s not in owner
            owner[s] = (n, j)
    for s in range(NC):
        assert search(cu, s) == owner.get(s)


def test_search_depth_covers_the_largest_batch():
    cu = list(range(0, 65536))  # 65535 one-token sequences: N1 = 2^16, the precondition's limit
    for s in (0, 1, 4097, 65534 + 4095, 65535 + 4095 - 1):
        r = search(cu, s)
        assert r is None or cu[r[0]] // C + r[0] + r[1] == s
    assert search(cu, 65534 // C + 65534) == (65534, 0)
