"""kda_prefill's argument types, grad-requiring inputs, non-CUDA tensors and check_inputs' device
strings: each gets a one-line error naming the argument (CPU; no kernel runs)."""
import pytest
import torch

import kda_tile
from kda_tile import api
from kda_tile.reference import random_inputs


@pytest.fixture(autouse=True)
def _fresh_dispatch(monkeypatch):
    # kda_prefill caches its dispatch per process; keep these calls out of other tests' way.
    monkeypatch.setattr(api, "_ENTRIES", {})


@pytest.fixture(scope="module")
def x():
    return random_inputs(1, 32, 2, seed=0)


def call(x, dev="cpu", **kw):
    args = [x[n].to(dev) for n in ("q", "k", "v", "g", "beta")]
    return kda_tile.kda_prefill(*args, A_log=x["A_log"].to(dev), dt_bias=x["dt_bias"].to(dev), **kw)


@pytest.mark.parametrize("name,value", [("fast_math", "no"), ("fast_math", 1), ("output_final_state", "yes"),
                                        ("output_final_state", None)])
def test_flags_must_be_bools(x, name, value):
    with pytest.raises(TypeError, match=f"^{name}: expected a bool, got "):
        call(x, **{name: value})


def test_grad_requiring_inputs_under_grad_mode(x):
    q = x["q"].float().requires_grad_(True)
    y = dict(x, q=q)
    with torch.enable_grad(), pytest.raises(RuntimeError, match=r"^q: kda_tile has no backward yet") as e:
        call(y)
    assert "\n" not in str(e.value)
    with torch.no_grad(), pytest.raises(Exception) as e2:  # then it fails later, for other reasons
        call(y)
    assert "backward" not in str(e2.value)


@pytest.mark.parametrize("dev", ["cpu", "meta"])
def test_non_cuda_tensors_get_one_line(x, dev):
    with pytest.raises(ValueError, match=r"^q: expected a cuda tensor, got device " + dev) as e:
        call(x, dev)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_check_inputs_takes_any_device_spelling(x, device):
    args = [x[n] for n in ("q", "k", "v", "g", "beta")]
    api.check_inputs(*args, A_log=x["A_log"], dt_bias=x["dt_bias"], device=device)


def test_check_inputs_names_a_bad_device(x):
    args = [x[n] for n in ("q", "k", "v", "g", "beta")]
    with pytest.raises(ValueError, match=r"^device: expected a torch device"):
        api.check_inputs(*args, A_log=x["A_log"], dt_bias=x["dt_bias"], device="gpu7")
    with pytest.raises(ValueError, match=r"^q: expected a cuda tensor, got device cpu"):
        api.check_inputs(*args, A_log=x["A_log"], dt_bias=x["dt_bias"], device="cuda:0")
