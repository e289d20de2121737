"""The varlen chunk-slot layout K1 and K2 share (k1_prepare's docstring): chunk j of sequence n
goes to slot bos_n // 16 + n + j. K2 computes a sequence's first slot from that formula, K1 a
slot's sequence by a SEARCH_STEPS-step binary search over f(n) = bos_n // 16 + n. Checked here in integer
arithmetic on random batches (empty and one-token sequences included) for the two properties
the kernels rest on: the slots of all chunks are distinct and below NC = T // 16 + N, and the
search maps each slot back to its (sequence, chunk)."""
import random

import pytest

from kda_kernels.configs import MAX_SEQUENCES, SEARCH_STEPS

C = 16


def search(cu, s):
    """K1's loop, step for step (clamps included)."""
    N = len(cu) - 1
    lo, hi = 0, N - 1
    for _ in range(SEARCH_STEPS):
        if lo < hi:
            mid = (max(min(lo, N - 1), 0) + max(min(hi, N - 1), 0) + 1) // 2
            if cu[mid] // C + mid <= s:
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


@pytest.mark.parametrize("empty", [False, True], ids=["one-token", "empty"])
def test_search_depth_covers_the_largest_batch(empty):
    # MAX_SEQUENCES sequences (N1 = MAX_SEQUENCES + 1, the precondition's limit), one token each
    # or all empty but the last
    N = MAX_SEQUENCES
    cu = [0] * N + [1] if empty else list(range(0, N + 1))
    last = N - 1
    assert search(cu, cu[last] // C + last) == (last, 0)
    for n in (0, 1, 4097, N // 2, N - 2):
        r = search(cu, cu[n] // C + n)
        assert r == ((n, 0) if cu[n + 1] > cu[n] else None)
