"""bench/lf_probe.py without a GPU: which of its rows longest first takes when forced on (the
ragged rows and the uniform ones it compares against), and that none of them is taken by the
grouped K2 or 32-token chunks instead (then the row would time nothing new)."""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import lf_probe  # noqa: E402
from kda_kernels import configs  # noqa: E402
from kda_tile import api  # noqa: E402


@pytest.mark.parametrize("label,H,lens", lf_probe.SHAPES, ids=[s[0] for s in lf_probe.SHAPES])
def test_probe_rows_take_longest_first_when_forced(label, H, lens):
    lens = lf_probe._lens(label, lens)
    T = sum(lens)
    q = torch.empty(1, T, H, 128, dtype=torch.bfloat16, device="meta")
    cu = torch.empty(len(lens) + 1, dtype=torch.int64, device="meta")
    try:
        api.set_longest_first(True)
        assert api._plan(q, q, cu) == (False, 16, configs.SPP_LONGEST_FIRST), label
        api.set_longest_first(False)
        assert api._plan(q, q, cu) == (False, 16, 1), label
    finally:
        api.set_longest_first(None)
