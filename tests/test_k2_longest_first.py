"""K2 longest first (K2Config.longest_first; session 28, not released): programs reach their
sequence through `order` (a permutation, longest first), the rank in grid y so that the longest
sequences' programs launch first. A program whose entry is outside [0, N) leaves before it
touches memory, so every state mode proves with `order` declared DISTINCT, and the grid's digit
order is the one the design rests on."""
import dataclasses
import re

import pytest

from kda_kernels import registry
from kda_kernels.configs import K2Config


def _lf(chunk=16, **state):
    return registry.Build("k2", K2Config(varlen=True, u0_in_k2=True, chunk=chunk, longest_first=True, **state))


def test_grid_puts_the_rank_in_y_and_the_precondition_caps_n():
    b = _lf()
    assert b.name.endswith("_lf")
    assert b.config.distinct() == ("order",)
    assert "N1 <= 65536" in b.config.preconditions()
    src = registry.lower(b).kernel_source
    assert {i for i in re.findall(r"order\[([^\]]*)\]", src)} == {"((int64_t)((int)blockIdx.y))"}


def test_only_varlen_full_one_sequence_a_program():
    with pytest.raises(AssertionError):
        registry.Build("k2", K2Config(varlen=False, u0_in_k2=True, longest_first=True)).prim_func()


@pytest.mark.parametrize("chunk,state", [(16, dict(initial_state=None, final_state=False)),
                                         (32, dict(initial_state="float32", final_state=True))])
def test_longest_first_proves(chunk, state):
    from verify.jobs import build_job
    from verify.report import PROVED
    from verify.runner import verify_job
    r = verify_job(build_job(_lf(chunk, **state)))
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks if c.status != PROVED]


def test_without_distinct_the_race_is_found():
    """The proof rests on `order`'s entries differing: without that declaration two ranks may name
    one sequence, and barriers.global_race says so."""
    from verify.jobs import build_job
    from verify.report import FAILED
    from verify.runner import verify_job
    job = dataclasses.replace(build_job(_lf()), distinct=(), only=("barriers",))
    r = verify_job(job)
    race = [c for c in r.checks if c.name == "barriers.global_race"]
    assert race and race[0].status == FAILED, [(c.name, c.status) for c in r.checks]


def _triple(h0="float32", ht=True):
    import host_codegen as hc
    return next(e for e in hc.released_longest_first()
                if not e[0].config.fast_math and e[2].config.initial_state == h0 and e[2].config.final_state == ht)


def _args(lens, H=2, seed=0):
    import torch
    g = torch.Generator().manual_seed(seed)
    T = sum(lens)
    bf = torch.bfloat16
    rn = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist())
    return [rn(1, T, H, 128).to(bf), rn(1, T, H, 128).to(bf), rn(1, T, H, 128).to(bf), rn(1, T, H, 128).to(bf),
            rn(1, T, H).to(bf), rn(H), rn(H, 128), cu, rn(len(lens), H, 128, 128), -5.0, None]


def test_released_triples_and_their_entry():
    """(K1, the order, K2 through it) for each varlen 16-token K1 and state mode; the order is
    workspace (k2_order writes it, K2 reads it), so the entry's arguments are the pair's."""
    import host_codegen as hc
    triples = hc.released_longest_first()
    assert len(triples) == 12 and all(t[2].config.chunk == t[0].config.chunk == 16 for t in triples)
    assert all(t not in hc.released_pairs() for t in triples)
    assert not any(b.config.longest_first for p in hc.released_pairs() for b in p if b.stage == "k2")
    e = hc.get_entry(*_triple(), backend="cpp")
    assert [ks.build_name for ks in e.spec.kernels][1] == "k2_order_r1024"
    assert "order" in {w.name for w in e.spec.workspace}
    assert [p.name for p in e.spec.inputs] == ["q", "k", "v", "g", "beta", "A_log", "dt_bias", "cu_seqlens",
                                               "initial_state"]
    o, ht = e.dry_run(*_args((300, 0, 1, 4000, 17)))
    assert o.shape == (1, 4318, 2, 128) and ht.shape == (5, 2, 128, 128)


def test_more_sequences_than_grid_y_is_refused():
    import torch
    import host_codegen as hc
    e = hc.get_entry(*_triple(None, False), backend="cpp")
    a = _args((1, 1))
    a[7] = torch.arange(65537, dtype=torch.int64)
    a[0:5] = [x.new_zeros((1, 65536) + x.shape[2:]) for x in a[0:5]]
    a[8] = None
    with pytest.raises(ValueError, match=r"^cu_seqlens"):
        e.validate_only(*a, expect_device="cpu")


def test_order_kernel_proves():
    from verify.jobs import build_job
    from verify.report import PROVED
    from verify.runner import verify_job
    r = verify_job(build_job(registry.find("k2_order")))
    assert r.status == PROVED, [(c.name, c.status) for c in r.checks if c.status != PROVED]


def test_entry_writes_caller_outputs_in_a_dry_run():
    """out= and final_state_out= through the longest-first entry: checked like the pair's, and
    handed back (a dry run allocates the workspace, the order included, and packs every kernel's
    arguments without a GPU)."""
    import torch
    import host_codegen as hc
    e = hc.get_entry(*_triple(), backend="cpp")
    a = _args((300, 0, 1, 4000, 17))
    o = torch.empty(1, 4318, 2, 128, dtype=torch.bfloat16)
    ht = torch.empty(5, 2, 128, 128)
    r_o, r_ht = e.dry_run(*a, o=o, final_state=ht)
    assert r_o is o and r_ht is ht
    with pytest.raises(ValueError, match=r"^final_state.shape\[0\]: expected 5 \(N = N1 - 1\), got 4$"):
        e.dry_run(*a, o=o, final_state=torch.empty(4, 2, 128, 128))
