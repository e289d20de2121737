"""`python -m verify` module for the short form over up to 4 chunks (K1Config.short_chunks, the
pairwise form; session 33, JIT only, not released):

    python -m verify bench/pairwise_verify.py

The released one-chunk builds are proved by `python -m verify` with the rest of the registry.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kda_kernels.configs import SHORT_FIXED_RLIMIT, K1Config  # noqa: E402
from kda_kernels.k1_prepare import build_k1  # noqa: E402


def config(varlen, ht=False, n=4):
    """The pairwise form's JIT config: the released short form's, n chunks, and registers for the
    ~3 programs an SM its shared memory allows (65 KB at n = 4)."""
    return K1Config(varlen=varlen, short_out=True, short_ht=ht, short_chunks=n, min_blocks=4, rsqrt_nr=True,
                    early_loads=True, lean_prologue=True)


KERNELS = {f"pairwise_{'varlen' if v else 'fixed'}{'_ht' if ht else ''}": (lambda v=v, ht=ht: build_k1(config(v, ht)))
           for v in (False, True) for ht in (False, True)}
PRECONDITIONS = {n: config("varlen" in n, "_ht" in n).preconditions() for n in KERNELS}
BANK_BUDGET = {n: 8 for n in KERNELS}
PASS_CONFIGS = {n: {"tl.enable_fast_math": False} for n in KERNELS}
ANY_CONTENTS = [n for n in KERNELS if "varlen" in n]
RLIMIT = {n: SHORT_FIXED_RLIMIT for n in KERNELS if "fixed" in n}
