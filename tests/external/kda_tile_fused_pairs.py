"""kda_tile's fused forward (kda_kernels/fused.py) with the default producer since session 14,
"pairs" (K1's per-element form): besides kda_tile_fused.py's protocol (four warpgroups, TMA
prologue, ring_full / ring_empty mbarriers, setmaxnreg per role, here 144 / 112), the gate's
column totals cross between the two row halves of a producer warpgroup through shared memory
(part_s, a named barrier of 128 threads between the write and the read), the row norms are
16-lane shuffle sums of 16-byte vector reads, and the inverse passes x_i between the 8 lanes of
a column by shuffles. It ran correctly on the H100 (87 randomized runs against a float64
reference, o within 1e-4 of kda_prefill's); both configurations must be proved."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kda_kernels.fused import FusedConfig, build_fused  # noqa: E402

CFG = FusedConfig(producer_form="pairs")
CFGV = FusedConfig(varlen=True, initial_state="float32", final_state=True, producer_form="pairs")
SOURCE = {"fused_pairs_fixed": "kda_kernels/fused.py", "fused_pairs_varlen": "kda_kernels/fused.py"}
KERNELS = {"fused_pairs_fixed": lambda: build_fused(CFG), "fused_pairs_varlen": lambda: build_fused(CFGV)}
PRECONDITIONS = {"fused_pairs_fixed": CFG.preconditions(), "fused_pairs_varlen": CFGV.preconditions()}
BANK_BUDGET = {"fused_pairs_fixed": 8, "fused_pairs_varlen": 8}
MONOTONE = {"cu_seqlens": ("N1", "T")}
EXPECT = {"fused_pairs_fixed": None, "fused_pairs_varlen": None}
