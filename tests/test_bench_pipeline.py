"""bench/pipeline_probe.py and bench/coresident.py without a GPU: every row they label pipelined
takes the pipeline (forced on) with the slab counts asked, and the pairs they time are the
released builds they name."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import coresident  # noqa: E402
import k1_round  # noqa: E402
import pipeline_probe  # noqa: E402
from kda_kernels import registry  # noqa: E402
from kda_tile import api, slabs  # noqa: E402


@pytest.mark.parametrize("label,T,H,cu,counts", pipeline_probe.SHAPES)
def test_probe_rows_take_the_pipeline(label, T, H, cu, counts):
    split, _ = api._one_sequence_plan(T, H)
    assert not split, label   # the pipeline takes unsplit calls only
    try:
        api.set_pipeline(True)
        for n in counts:
            api.PIPE_SLABS = n
            api._PIPE.clear()
            tokens = api._pipe_rule(1, T, H)
            assert 0 < tokens < T and -(-T // tokens) == n, (label, n, tokens)
    finally:
        api.PIPE_SLABS = api._configs.PIPE_SLABS
        api.set_pipeline(None)


@pytest.mark.parametrize("label,T,H,mb", pipeline_probe.LIMITS)
def test_probe_limit_rows_fit(label, T, H, mb):
    try:
        api.set_workspace_limit(mb << 20)
        api.set_pipeline(True)
        tokens = api._pipe_rule(1, T, H)
        chunk = api._one_sequence_plan(T, H)[1]
        assert tokens and slabs.pipeline_workspace_bytes(tokens, H, chunk, True, api._pipe_form(T, H, chunk)) <= mb << 20
        assert api._slab_rule(1, T, H) > 0
    finally:
        api.set_pipeline(None)
        api.set_workspace_limit(None)


@pytest.mark.parametrize("key", ["32", "16"])
def test_coresident_pairs_are_released(key):
    _, spec, k2 = coresident.PAIRS[key]
    released = {b.config for b in registry.RELEASED}
    assert k1_round.k1_config(spec, True) in released and k2 in released


@pytest.mark.parametrize("varlen", [False, True])
@pytest.mark.parametrize("spec,chunk", [(k1_round.RELEASED, 16), (k1_round.RELEASED_CH32, 32)])
def test_k1_round_released_is_the_registry_k1(varlen, spec, chunk):
    """bench/k1_round.RELEASED and RELEASED_CH32 name the registry's accurate 16- and 32-token K1s
    (fixed and varlen), so the rounds that time "the released K1" (k2_round, split_round,
    coresident, overlap_round) time them."""
    assert k1_round.k1_config(spec, varlen) == registry.find("k1", varlen=varlen, fast_math=False,
                                                             chunk=chunk).config
