"""`python -m verify` module for K1Config.short_out (JIT only, not released):

    python -m verify bench/short_verify.py

Session 32: the four builds prove (37 s on 2 cores). The fixed builds' queries reach ~23 M units,
past the default 20 M (RLIMIT below). A first fixed build that took every chunk of a row (T > 16)
failed barriers.global_race on ht, rightly: two programs of one row wrote its state. A program
now takes one row's first chunk.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kda_kernels.configs import K1Config  # noqa: E402
from kda_kernels.k1_prepare import build_k1  # noqa: E402


def _cfg(varlen, ht=False):
    return K1Config(varlen=varlen, short_out=True, short_ht=ht, mqk_diag=True, rsqrt_nr=True, early_loads=True,
                    lean_prologue=True)


KERNELS = {"short_fixed": lambda: build_k1(_cfg(False)), "short_varlen": lambda: build_k1(_cfg(True)),
           "short_fixed_ht": lambda: build_k1(_cfg(False, True)), "short_varlen_ht": lambda: build_k1(_cfg(True, True))}
_PRE = ["B >= 1", "T >= 1", "H >= 1", "HV >= H", "HV <= 256", "HV % H == 0", "B * T * HV <= 2**23"]
_VARLEN = ["B == 1", "N1 >= 2", "N1 <= 2**20 + 1"]
PRECONDITIONS = {n: _PRE + (_VARLEN if "varlen" in n else []) for n in KERNELS}
BANK_BUDGET = {n: 8 for n in KERNELS}
PASS_CONFIGS = {n: {"tl.enable_fast_math": False} for n in KERNELS}
ANY_CONTENTS = ["short_varlen", "short_varlen_ht"]
RLIMIT = {"short_fixed": 200_000_000, "short_fixed_ht": 200_000_000}
