"""kda_tile's warp-specialized fused forward (kda_tile/fused.py, this repository): three
warpgroups, an unrolled TMA prologue over three raw slots (load_full: 32 arrivals plus TMA
bytes), a two-slot ring (ring_full: 128 producer arrivals; ring_empty: 256, 128 from each
consumer warpgroup), register-resident RS-wgmma chains, named barriers and AllReduce in the
producer, setmaxnreg per role. It ran correctly on the H200 (126 randomized runs against a
float64 reference); both configurations must be proved."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kda_tile.fused import FusedConfig, build_fused  # noqa: E402

CFG = FusedConfig()
CFGV = FusedConfig(varlen=True, initial_state="float32", final_state=True)
SOURCE = {"fused_fixed": "kda_tile/fused.py", "fused_varlen": "kda_tile/fused.py"}
KERNELS = {"fused_fixed": lambda: build_fused(CFG), "fused_varlen": lambda: build_fused(CFGV)}
PRECONDITIONS = {"fused_fixed": CFG.preconditions(), "fused_varlen": CFGV.preconditions()}
BANK_BUDGET = {"fused_fixed": 8, "fused_varlen": 8}
MONOTONE = {"cu_seqlens": ("N1", "T")}
EXPECT = {"fused_fixed": None, "fused_varlen": None}
