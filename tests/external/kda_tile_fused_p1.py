"""kda_tile's fused forward (kda_kernels/fused.py) with one producer warpgroup: three warpgroups,
setmaxnreg 184 / 136 (the launch provides 3 x 168), the producer's prologue over raw slots
`load_full[j]`. The varlen build also takes a bfloat16 initial state and fast math. Must be
proved (marked slow: kda_tile_fused.py covers the same protocol with two producers)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kda_kernels.fused import FusedConfig, build_fused  # noqa: E402

CFG = FusedConfig(producers=1)
CFGV = FusedConfig(producers=1, varlen=True, initial_state="bfloat16", final_state=True, fast_math=True)
SOURCE = {"fused_p1_fixed": "kda_kernels/fused.py", "fused_p1_varlen": "kda_kernels/fused.py"}
KERNELS = {"fused_p1_fixed": lambda: build_fused(CFG), "fused_p1_varlen": lambda: build_fused(CFGV)}
PRECONDITIONS = {"fused_p1_fixed": CFG.preconditions(), "fused_p1_varlen": CFGV.preconditions()}
BANK_BUDGET = {"fused_p1_fixed": 8, "fused_p1_varlen": 8}
MONOTONE = {"cu_seqlens": ("N1", "T")}
EXPECT = {"fused_p1_fixed": None, "fused_p1_varlen": None}
