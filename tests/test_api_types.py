"""kda_prefill's argument types, grad-requiring inputs, non-CUDA tensors and check_inputs' device
strings: each gets a one-line error naming the argument (CPU; no kernel runs)."""
import pytest
import torch

import kda_tile
from kda_tile import api
from kda_kernels.reference import random_inputs


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


class FakeRaw:
    """Stands in for the entry's TVM-FFI call: records its arguments, answers per its flags."""

    def __init__(self):
        self.calls = []

    def __call__(self, *a):
        self.calls.append(a)
        o, ht, flags = a[11], a[12], a[13]
        if flags & 8:
            return None if o is not None else "fresh o"
        return (None if o is not None else "fresh o"), (None if ht is not None else "fresh ht")


@pytest.fixture
def fake_raw(monkeypatch):
    raw = FakeRaw()
    monkeypatch.setattr(api, "_RAW", {})
    monkeypatch.setattr(api, "_lookup", lambda *a: None)
    monkeypatch.setattr(api, "_raw_for", lambda *a: (raw, 128))
    return raw


def test_caller_outputs_go_to_the_entry_and_come_back(x, fake_raw):
    out = torch.empty(1, 32, 2, 128, dtype=torch.bfloat16)
    fs = torch.empty(1, 2, 128, 128)
    o, ht = call(x, out=out, output_final_state=True, final_state_out=fs)
    assert o is out and ht is fs
    a = fake_raw.calls[-1]
    assert a[11] is out and a[12] is fs and a[13] == 128 | 8  # o alone comes back: nothing is dropped
    o, ht = call(x, out=out)
    assert o is out and ht is None and fake_raw.calls[-1][13] == 128 | 8
    o, ht = call(x, out=out, output_final_state=True)  # the entry allocates the final state: a tuple
    assert o is out and ht == "fresh ht" and fake_raw.calls[-1][13] == 128


def test_caller_output_errors(x, fake_raw):
    with pytest.raises(ValueError, match="^final_state_out: given, but output_final_state is False"):
        call(x, final_state_out=torch.empty(1, 2, 128, 128))
    with pytest.raises(TypeError, match="^out: expected a torch.Tensor or None, got list"):
        call(x, out=[1])
    assert not fake_raw.calls


def test_caller_output_type_named_on_the_warm_path(x, monkeypatch):
    """With the entry's raw call cached, a non-tensor out still gets the API's one-line error (the
    two-kernel path's key: the short form, on by default, would take this small call)."""
    monkeypatch.setattr(api, "SHORT", False)
    calls = []

    def raw(*a):
        calls.append(a)
        raise TypeError(f"o: expected a Tensor or None, got {type(a[11]).__name__}")
    monkeypatch.setattr(api, "_RAW", {api._dispatch_key(None, None, False, False, False, 16): (raw, 128)})
    with pytest.raises(TypeError, match="^out: expected a torch.Tensor or None, got list"):
        call(x, out=[1])
    assert len(calls) == 1


def test_entry_errors_name_the_api_arguments(x, monkeypatch):
    def raw(*a):
        raise ValueError("o: expected no overlap with q (outputs must not alias inputs), got overlapping memory")
    monkeypatch.setattr(api, "_RAW", {})
    monkeypatch.setattr(api, "_lookup", lambda *a: None)
    monkeypatch.setattr(api, "_raw_for", lambda *a: (raw, 0))
    with pytest.raises(ValueError, match="^out: expected no overlap with q"):
        call(x, out=torch.empty(1))
