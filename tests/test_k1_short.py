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


@pytest.mark.parametrize("varlen", [False, True])
def test_pairwise_form_takes_the_short_signature(varlen):
    """short_chunks > 1 (the pairwise form, JIT): the same parameters as the one-chunk builds, a
    name that says how many chunks, and fixed batches bounded by them."""
    from kda_kernels.k1_prepare import build_k1
    cfg = K1Config(varlen=varlen, short_out=True, short_ht=True, short_chunks=4, min_blocks=4, rsqrt_nr=True,
                   early_loads=True, lean_prologue=True)
    f = build_k1(cfg)
    names = [f.buffer_map[p].name if p in f.buffer_map else p.name for p in f.params]
    assert names == ["q", "k", "v", "g", "beta", "A_log", "dt_bias"] + (["cu_seqlens"] if varlen else []) \
        + ["lower_bound", "scale", "o", "ht"]
    assert "_short_ht_n4_" in cfg.name
    assert ("T <= 64" in cfg.preconditions()) == (not varlen)
    with pytest.raises(AssertionError, match="short_chunks"):
        build_k1(K1Config(varlen=varlen, short_chunks=4, u0_in_k2=True, lean_prologue=True))


def test_pairwise_varlen_build_proves():
    """bench/pairwise_verify.py's varlen build with the final state (~60 s on 2 cores; its fixed
    twins take ~270 s each and are proved in bench/NOTES.md, session 33)."""
    from pathlib import Path
    from verify.jobs import _work, module_jobs, run_parallel
    from verify.report import PROVED
    module = str(Path(__file__).resolve().parent.parent / "bench" / "pairwise_verify.py")
    specs = [("module", module, j.name) for j in module_jobs(module) if j.name == "pairwise_varlen_ht"]
    (r,) = run_parallel(_work, specs, 1)
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks]
