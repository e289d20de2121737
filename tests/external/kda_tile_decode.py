"""kda_tile's decode kernel (kda_kernels/decode.py, this repository; unreleased): one step and
a speculative 4-token step against an fp32 pool, one step against a bf16 pool with fast math.
Row reductions through AllReduce, the pool index clamped for any contents of state_indices."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kda_kernels.decode import DecodeConfig, build_decode  # noqa: E402

CFGS = {"decode_s1_f32": DecodeConfig(), "decode_s4_f32": DecodeConfig(tokens=4),
        "decode_s1_bf16_fast": DecodeConfig(state_dtype="bfloat16", fast_math=True)}
SOURCE = {name: "kda_kernels/decode.py" for name in CFGS}
KERNELS = {name: (lambda c=c: build_decode(c)) for name, c in CFGS.items()}
PRECONDITIONS = {name: c.preconditions() for name, c in CFGS.items()}
PASS_CONFIGS = {name: c.pass_configs() for name, c in CFGS.items()}
BANK_BUDGET = {name: 4 for name in CFGS}
EXPECT = {name: None for name in CFGS}
# The pool rows of live sequences are distinct (kda_decode's contract; validate="full" checks
# it): without this, two blocks may update one row, which barriers.global_race rightly reports.
DISTINCT = ["state_indices"]
