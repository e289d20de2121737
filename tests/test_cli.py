"""`python -m kda_tile demo` on a machine without a GPU: the generated entry's checks (release
gate included) on CPU tensors, then the reference, and a plain word that kernels need sm_90a."""
import pytest
import torch


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU path runs kda_prefill (GPU tests)")
def test_demo_on_cpu(capsys):
    from kda_tile.__main__ import main
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "the kernels need an sm_90a (Hopper) GPU" in out
    assert "release gate and kda_prefill's argument checks pass on CPU tensors (B=1, T=100, H=2" in out
    assert "refuse a float32 q: TypeError: q: expected dtype bfloat16, got float32" in out
    assert "float64 reference on the CPU" in out
