"""Every class of bad input to kda_prefill gets a TypeError or ValueError naming the argument,
the expected and the actual value. Run on the CPU through kda_tile.api.check_inputs, which
runs the same IR-derived checks as kda_prefill without launching (device="cpu")."""
import pytest
import torch

from kda_tile import gate
from kda_tile.api import check_inputs

bf = torch.bfloat16


@pytest.fixture(autouse=True)
def _allow_unverified(monkeypatch):
    # The gate has its own tests; these exercise argument checks on builds whatever the manifest says.
    monkeypatch.setattr(gate, "check", lambda build: "")


def inputs(B=1, T=37, H=2, K=128, V=128, N=None, varlen=False, state=None):
    g = torch.Generator().manual_seed(0)
    d = dict(q=torch.randn(B, T, H, K, generator=g).to(bf), k=torch.randn(B, T, H, K, generator=g).to(bf),
             v=torch.randn(B, T, H, V, generator=g).to(bf), g=torch.randn(B, T, H, K, generator=g).to(bf),
             beta=torch.randn(B, T, H, generator=g).to(bf),
             A_log=torch.rand(H, generator=g), dt_bias=torch.randn(H, K, generator=g))
    kw = dict(A_log=d.pop("A_log"), dt_bias=d.pop("dt_bias"))
    if varlen:
        kw["cu_seqlens"] = torch.tensor([0, 5, T], dtype=torch.int64)
    n = N if N is not None else (2 if varlen else B)
    if state is not None:
        kw["initial_state"] = torch.randn(n, H, V, K, generator=g).to(state)
        kw["output_final_state"] = True
    return d, kw


def run(d, kw, **over):
    args = {**d, **kw, **over}
    return check_inputs(args.pop("q"), args.pop("k"), args.pop("v"), args.pop("g"), args.pop("beta"),
                        device="cpu", **args)


def test_valid_inputs_pass():
    run(*inputs())
    run(*inputs(varlen=True, state=torch.float32))
    run(*inputs(B=3, T=16, state=bf))


@pytest.mark.parametrize("name", ["q", "k", "v", "g", "beta"])
def test_wrong_dtype(name):
    d, kw = inputs()
    d[name] = d[name].float()
    with pytest.raises(TypeError, match=rf"{name}.*bfloat16.*float32"):
        run(d, kw)


def test_wrong_param_dtypes():
    d, kw = inputs()
    with pytest.raises(TypeError, match=r"A_log.*float32.*bfloat16"):
        run(d, kw, A_log=kw["A_log"].to(bf))
    with pytest.raises(TypeError, match=r"dt_bias.*float32.*float16"):
        run(d, kw, dt_bias=kw["dt_bias"].half())


def test_wrong_rank():
    d, kw = inputs()
    with pytest.raises(ValueError, match=r"q: expected 4 dim.*got 3"):
        run(d, kw, q=d["q"][0])


def test_shape_mismatch_names_the_argument():
    d, kw = inputs()
    with pytest.raises(ValueError, match=r"k\.shape\[1\].*37.*36"):
        run(d, kw, k=d["k"][:, :36].contiguous())
    with pytest.raises(ValueError, match=r"beta\.shape\[2\].*2.*3"):
        run(d, kw, beta=torch.randn(1, 37, 3).to(bf))
    with pytest.raises(ValueError, match=r"dt_bias\.shape\[0\].*2.*5"):
        run(d, kw, dt_bias=torch.randn(5, 128))


@pytest.mark.parametrize("dim", [64, 256])
def test_unsupported_head_dims(dim):
    d, kw = inputs(K=dim, V=128)
    with pytest.raises(ValueError, match=rf"q\.shape\[3\].*128.*{dim}"):
        run(d, kw, dt_bias=torch.randn(2, dim))
    d, kw = inputs(K=128, V=dim)
    with pytest.raises(ValueError, match=rf"v\.shape\[3\].*128.*{dim}"):
        run(d, kw)


def test_non_contiguous():
    d, kw = inputs()
    q = torch.randn(1, 2, 37, 128).to(bf).transpose(1, 2)
    with pytest.raises(ValueError, match=r"q.*(contiguous|stride)"):
        run(d, kw, q=q)


def test_misaligned_pointer():
    d, kw = inputs()
    flat = torch.randn(d["v"].numel() + 1).to(bf)
    v = flat[1:].view(d["v"].shape)
    with pytest.raises(ValueError, match=r"v: expected data_ptr % 16 == 0.*got data_ptr % 16 == 2"):
        run(d, kw, v=v)


def test_wrong_device_on_cpu_means_cuda_expected():
    d, kw = inputs()
    with pytest.raises(ValueError, match=r"q.*cuda.*cpu"):
        check_inputs(d["q"], d["k"], d["v"], d["g"], d["beta"], **kw)


def test_mixed_device_python_entry():
    # The generated C++ entry's mixed-device rule needs two devices: tests/test_host_codegen_gpu.py.
    from host_codegen import get_entry
    from kda_tile.api import _prepare
    d, kw = inputs()
    entry = get_entry(*_prepare(None, False, None, False), backend="py")
    with pytest.raises(ValueError, match=r"k.*device.*meta"):
        entry.validate_only(d["q"], d["k"].to("meta"), d["v"], d["g"], d["beta"], kw["A_log"], kw["dt_bias"],
                            None, None, -5.0, None, expect_device="cpu")


def test_cu_seqlens_rules():
    d, kw = inputs(varlen=True)
    with pytest.raises(TypeError, match=r"cu_seqlens.*int64.*int32"):
        run(d, kw, cu_seqlens=kw["cu_seqlens"].int())
    with pytest.raises(ValueError, match=r"cu_seqlens.*(rank|dim)"):
        run(d, kw, cu_seqlens=kw["cu_seqlens"].view(1, 3))
    d2, _ = inputs(B=2, T=37)
    with pytest.raises(ValueError, match=r"B == 1.*2"):
        run(d2, kw)


def test_cu_seqlens_contents_checked_with_full_validation():
    d, kw = inputs(varlen=True)
    for bad, what in [([0, 20, 5, 37], "non-decreasing"), ([1, 5, 37], "0"), ([0, 5, 36], "37")]:
        cu = torch.tensor(bad, dtype=torch.int64)
        with pytest.raises(ValueError, match=rf"cu_seqlens.*{what}"):
            run(d, kw, cu_seqlens=cu, validate="full")
        run(d, kw, cu_seqlens=cu)  # the default path reads no contents (no device sync)


@pytest.mark.parametrize("lb", [-5.5, 0.0, 0.5, float("nan")])
def test_lower_bound_out_of_range(lb):
    d, kw = inputs()
    with pytest.raises(ValueError, match=r"lower_bound"):
        run(d, kw, lower_bound=lb)


def test_state_shape_and_dtype():
    d, kw = inputs(state=torch.float32)
    with pytest.raises(ValueError, match=r"initial_state\.shape\[0\].*1.*3"):
        run(d, kw, initial_state=torch.randn(3, 2, 128, 128))
    with pytest.raises(ValueError, match=r"initial_state\.shape\[2\]"):
        run(d, kw, initial_state=torch.randn(1, 2, 64, 128))
    with pytest.raises(TypeError, match=r"initial_state.*float32 or bfloat16.*float16"):
        run(d, kw, initial_state=kw["initial_state"].half())
    d, kw = inputs(varlen=True, state=torch.float32)
    with pytest.raises(ValueError, match=r"initial_state\.shape\[0\].*2.*1"):
        run(d, kw, initial_state=torch.randn(1, 2, 128, 128))
