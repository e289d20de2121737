"""The JIT fallback (kda_tile/_launch.py, KDA_TILE_BACKEND=tilelang) passes each kernel the
arguments its parameters name, for every released pair. CPU only: builds the PrimFuncs, launches
nothing."""
import pytest
import torch

from kda_kernels import registry
from kda_tile import _launch, api


@pytest.mark.parametrize("varlen", [False, True])
@pytest.mark.parametrize("h0", [None, "float32", "bfloat16"])
@pytest.mark.parametrize("ht", [False, True])
def test_arguments_follow_the_parameters(varlen, h0, ht):
    k1, k2 = api.select_builds(varlen=varlen, fast_math=False, initial_state_dtype=h0, output_final_state=ht)
    vals = {n: torch.empty(0) for n in ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "cu", "h0", "o", "ht")}
    u0k2 = k1.config.u0_in_k2   # K2 forms U0 = Ab v: K1 writes Ab instead and reads no v
    ws = {n: torch.empty(0) for n in ("Wk", "qd", "kr", "Ab" if u0k2 else "U0", "Mqk", "gC")}
    a1, a2 = _launch._args(k1, k2, vals["q"], vals["k"], vals["v"], vals["g"], vals["beta"], vals["A_log"],
                           vals["dt_bias"], vals["cu"] if varlen else None, vals["h0"] if h0 else None, -5.0, 0.5,
                           ws, vals["o"], vals["ht"] if ht else None)
    names = {id(t): n for n, t in list(vals.items()) + list(ws.items())}
    got1 = [names.get(id(a), a) for a in a1]
    got2 = [names.get(id(a), a) for a in a2]
    want1 = ["q", "k"] + ([] if u0k2 else ["v"]) + ["g", "beta", "A_log", "dt_bias"] + (["cu"] if varlen else []) \
        + [-5.0, 0.5, "Wk", "qd", "kr", "Ab" if u0k2 else "U0", "Mqk", "gC"]
    want2 = ["Wk", "qd", "kr"] + (["Ab", "v"] if u0k2 else ["U0"]) + ["Mqk", "gC"] + (["cu"] if varlen else []) \
        + (["h0"] if h0 else []) + ["o"]
    want2 += ["ht"] if ht else []
    assert got1 == want1 and got2 == want2
    assert registry.find("k2", varlen=varlen, initial_state=h0, final_state=ht) == k2
