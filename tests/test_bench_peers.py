"""The peer benchmark's mode selection and batching, on the CPU (the timing itself runs on the H200)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import bench_peers as BP  # noqa: E402


def test_pick_takes_the_fastest_agreeing_mode():
    results = [
        {"mode": "a", "ms": 1.0, "agrees": False},           # fastest, but computes something else
        {"mode": "b", "ms": 2.0, "agrees": True},
        {"mode": "c", "ms": 1.5, "agrees": True},
        {"mode": "d", "error": "RuntimeError: unsupported"},  # could not run
    ]
    assert BP.pick(results)["mode"] == "c"
    assert BP.pick([{"mode": "a", "ms": 1.0, "agrees": False}]) is None
    assert BP.pick([]) is None


def test_fixed_rows_are_the_same_tokens_as_the_packed_batch():
    lens = [5, 5, 5]
    T, H = sum(lens), 2
    d = {k: torch.randn(1, T, H, 4) for k in ("q", "k", "v", "g")}
    d["beta"] = torch.randn(1, T, H)
    f = BP._fixed(d, lens)
    assert f["q"].shape == (3, 5, H, 4) and f["beta"].shape == (3, 5, H)
    for key in ("q", "k", "v", "g", "beta"):
        assert torch.equal(f[key].reshape(d[key].shape), d[key])


def test_every_library_offers_modes_for_equal_and_ragged_lengths():
    d = {"q": torch.zeros(1, 6, 1, 4)}
    for key in ("k", "v", "g"):
        d[key] = d["q"]
    d["beta"] = torch.zeros(1, 6, 1)
    ragged = BP.modes(d, [2, 4])
    equal = BP.modes(d, [3, 3])
    assert set(ragged) == set(equal) == {"kda_tile", "fla_triton", "cudnn_fe"}
    assert len(equal["fla_triton"]) == len(ragged["fla_triton"]) + 1  # the plain batch only on equal lengths
    assert len(equal["kda_tile"]) == len(ragged["kda_tile"]) + 1
