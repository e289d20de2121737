"""K1Config.short_out (session 32; released in 33 as registry stage "k1_short", proved by
`python -m verify` with the other released builds): sequences of at most one chunk as one kernel
that writes o = Mqk (Ab v) (and with short_ht the final state U0^T kr) and no workspace. Its
parameters and its name; its numbers are bench/short_round.py's (GPU), its routing
tests/test_api_short.py's."""
import pytest

from kda_kernels.configs import K1Config


def _cfg(varlen, ht=False):
    return K1Config(varlen=varlen, short_out=True, short_ht=ht, mqk_diag=True, rsqrt_nr=True, early_loads=True,
                    lean_prologue=True)


@pytest.mark.parametrize("ht", [False, True])
@pytest.mark.parametrize("varlen", [False, True])
def test_short_build_takes_o_and_no_workspace(varlen, ht):
    from kda_kernels.k1_prepare import build_k1
    f = build_k1(_cfg(varlen, ht))
    names = [f.buffer_map[p].name if p in f.buffer_map else p.name for p in f.params]
    assert names == ["q", "k", "v", "g", "beta", "A_log", "dt_bias"] + (["cu_seqlens"] if varlen else []) \
        + ["lower_bound", "scale", "o"] + (["ht"] if ht else [])
    assert _cfg(varlen, ht).name.startswith("k1_prepare_" + ("varlen" if varlen else "fixed") + "_short"
                                            + ("_ht" if ht else ""))


def test_workspace_builds_take_no_o():
    from kda_kernels.k1_prepare import build_k1
    f = build_k1(K1Config(varlen=True, skip_holes=True, mqk_diag=True, u0_in_k2=True, lean_prologue=True))
    names = {f.buffer_map[p].name for p in f.params if p in f.buffer_map}
    assert "o" not in names and {"Wk", "qd", "kr", "Ab", "Mqk", "gC"} <= names


def test_short_out_rejects_other_forms():
    from kda_kernels.k1_prepare import build_k1
    with pytest.raises(AssertionError, match="short_out"):
        build_k1(K1Config(varlen=True, short_out=True, u0_in_k2=True, lean_prologue=True))
