"""kda_tile's warp-specialized fused forward (kda_kernels/fused.py, this repository), in the two
configurations it was first verified in. With the default two producers: four warpgroups (two
consumers running register-resident RS-wgmma chains, two producers dealt chunks round-robin),
each producer's TMA prologue unrolled over its raw slots (`for j in unroll(2): if j * 2 < nch:
load(..., load_full[j * 2])`, load_full: 32 arrivals plus TMA bytes), a ring published through
ring_full (128 producer arrivals) and ring_empty (256: 128 from each consumer warpgroup), named
barriers, AllReduce, shuffles, vector shared accesses, mma.sync with ldmatrix, setmaxnreg per
role. It ran correctly on the H200 (149 randomized runs against a float64 reference); both
configurations must be proved. This module keeps that producer ("lanes"); the default one
since session 14 ("pairs") is in kda_tile_fused_pairs.py, the one-producer variants in
kda_tile_fused_p1.py."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kda_kernels.fused import FusedConfig, build_fused  # noqa: E402

CFG = FusedConfig(producer_form="lanes")
CFGV = FusedConfig(varlen=True, initial_state="float32", final_state=True, producer_form="lanes")
SOURCE = {"fused_fixed": "kda_kernels/fused.py", "fused_varlen": "kda_kernels/fused.py"}
KERNELS = {"fused_fixed": lambda: build_fused(CFG), "fused_varlen": lambda: build_fused(CFGV)}
PRECONDITIONS = {"fused_fixed": CFG.preconditions(), "fused_varlen": CFGV.preconditions()}
BANK_BUDGET = {"fused_fixed": 8, "fused_varlen": 8}
MONOTONE = {"cu_seqlens": ("N1", "T")}
EXPECT = {"fused_fixed": None, "fused_varlen": None}
