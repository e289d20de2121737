"""The short form's routing (sessions 33-34): kda_prefill serves a call whose sequences all have
at most configs.SHORT_TOKENS tokens (one chunk) or configs.PAIRWISE_TOKENS (the pairwise form over
configs.PAIRWISE_CHUNKS chunks) and no initial state with the one-kernel k1_short builds, known
without a sync (a fixed batch's T, a varlen call's max_seqlen), and checks max_seqlen. CPU only:
the entry is replaced by a recorder, or the entry's checks run on CPU tensors."""
import pytest
import torch

from host_codegen import released_entries, released_pairs
from kda_kernels import configs, registry
from kda_kernels.configs import K1Config
from kda_tile import api, gate

bf = torch.bfloat16


@pytest.fixture
def recorder(monkeypatch):
    """The entry replaced by a recorder of the builds each call takes, the short form on."""
    monkeypatch.setattr(api, "SHORT", True)
    calls = []

    def fake_entry(*builds):
        def call(*a):
            calls.append(builds)
            return "o", None
        return call
    monkeypatch.setattr(api, "_entry", fake_entry)
    monkeypatch.setattr(api, "_ENTRIES", {})
    return calls


def _call(B, T, H=2, lens=None, h0=False, **kw):
    x = torch.randn(B, T, H, 128).to(bf)
    extra = dict(A_log=torch.zeros(H), dt_bias=torch.zeros(H, 128))
    if lens is not None:
        extra["cu_seqlens"] = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64)
    if h0:
        n = B if lens is None else len(lens)
        extra["initial_state"] = torch.zeros(n, H, 128, 128)
    return (x, x, x, x, torch.randn(B, T, H).to(bf)), {**extra, **kw}


def _stages(call):
    return tuple(b.stage for b in call)


def test_eight_short_builds_released_with_their_own_entries():
    short = [b for b in registry.RELEASED if b.stage == "k1_short"]
    assert sorted((b.config.varlen, b.config.short_ht, b.config.short_chunks) for b in short) == [
        (v, ht, n) for v in (False, True) for ht in (False, True) for n in (1, configs.PAIRWISE_CHUNKS)]
    assert configs.PAIRWISE_TOKENS == 64 and configs.SHORT_TOKENS == 16
    for b in short:
        c = b.config
        assert c.short_out and c.chunk == configs.SHORT_TOKENS and not c.fast_math and not c.u0_in_k2
        assert c.verify_rlimit == (0 if c.varlen else configs.SHORT_FIXED_RLIMIT)
        tokens = c.chunk * c.short_chunks
        assert f"T <= {tokens}" in c.preconditions() if not c.varlen else all("T <=" not in p for p in c.preconditions())
        # registers for 4 programs an SM (the pairwise form without the final state fits 4 in shared
        # memory, with it 3: tests/test_k1_short.py)
        assert c.min_blocks == (4 if c.short_chunks > 1 else K1Config().min_blocks)
        assert not any("NC" in p for p in c.preconditions()) and c.derived_vars() == {}
    assert [(b,) for b in short] == [e for e in released_entries() if e[0].stage == "k1_short"]
    assert not any(b.stage == "k1_short" for p in released_pairs() for b in p)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("ht", [False, True])
def test_fixed_batches_of_at_most_64_tokens_take_the_short_form(recorder, ht, fast):
    for T, n in ((1, 1), (5, 1), (16, 1), (17, 4), (33, 4), (64, 4)):
        a, kw = _call(3, T)
        api.kda_prefill(*a, output_final_state=ht, fast_math=fast, **kw)
        (b,) = recorder[-1]
        assert b.stage == "k1_short" and not b.config.varlen and b.config.short_ht == ht, T
        assert b.config.short_chunks == n, T
    a, kw = _call(3, 65)
    api.kda_prefill(*a, output_final_state=ht, fast_math=fast, **kw)
    assert _stages(recorder[-1])[0] == "k1" and len(recorder[-1]) >= 2
    for T in (16, 64):   # an initial state: K1 and K2
        a, kw = _call(3, T, h0=True)
        api.kda_prefill(*a, output_final_state=ht, fast_math=fast, **kw)
        assert _stages(recorder[-1])[0] == "k1"


def test_varlen_calls_take_it_only_with_max_seqlen(recorder):
    lens = [3, 0, 16, 1]
    a, kw = _call(1, sum(lens), lens=lens)
    api.kda_prefill(*a, **kw)
    assert _stages(recorder[-1])[0] == "k1"
    api.kda_prefill(*a, max_seqlen=16, **kw)
    assert _stages(recorder[-1]) == ("k1_short",) and recorder[-1][0].config.varlen
    assert recorder[-1][0].config.short_chunks == 1
    for m in (17, 64):
        api.kda_prefill(*a, max_seqlen=m, **kw)
        assert _stages(recorder[-1]) == ("k1_short",) and recorder[-1][0].config.varlen
        assert recorder[-1][0].config.short_chunks == configs.PAIRWISE_CHUNKS
    api.kda_prefill(*a, max_seqlen=65, **kw)
    assert _stages(recorder[-1])[0] == "k1"
    a, kw = _call(1, sum(lens), lens=lens, h0=True)
    api.kda_prefill(*a, max_seqlen=16, **kw)
    assert _stages(recorder[-1])[0] == "k1"


def test_on_by_default_since_its_gpu_round():
    """Session 35's GPU round validated the short form (its GPU tests through the host entry, both
    forms faster than the two-kernel path at issue 9's rows): it serves by default, and
    KDA_TILE_SHORT=0 (or set_short(False)) turns it off."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "KDA_TILE_SHORT"}
    code = "from kda_tile import api; print(api.SHORT)"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip() == "True"
    for value, want in (("0", "False"), ("1", "True")):
        env["KDA_TILE_SHORT"] = value
        assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True).stdout.strip() == want


def test_forced_paths_and_the_switch_turn_it_off(recorder, monkeypatch):
    a, kw = _call(2, 8)
    monkeypatch.setattr(api, "FORCE_CHUNK", 32)
    api.kda_prefill(*a, **kw)
    assert recorder[-1][-1].config.chunk == 32
    monkeypatch.setattr(api, "FORCE_CHUNK", None)
    api.set_short(False)
    assert not api.takes_short(a[0], None, None, None)
    api.kda_prefill(*a, **kw)
    assert _stages(recorder[-1])[0] == "k1"
    api.set_short(True)
    assert api.takes_short(a[0], None, None, None)
    with pytest.raises(TypeError, match=r"^on: expected a bool, got int 1$"):
        api.set_short(1)


@pytest.mark.parametrize("bad,msg", [
    (-1, r"^max_seqlen: expected None or an int >= 0, got -1$"),
    (True, r"^max_seqlen: expected None or an int >= 0, got True$"),
    (16.0, r"^max_seqlen: expected None or an int >= 0, got 16.0$"),
    (torch.tensor(16), r"^max_seqlen: expected None or an int >= 0, got tensor\(16\)$"),
])
def test_bad_max_seqlen_is_named(recorder, bad, msg):
    lens = [3, 5]
    a, kw = _call(1, 8, lens=lens)
    with pytest.raises(ValueError, match=msg):
        api.kda_prefill(*a, max_seqlen=bad, **kw)
    assert not recorder


def test_max_seqlen_below_a_fixed_batchs_T_is_an_error(recorder):
    a, kw = _call(2, 80)
    with pytest.raises(ValueError, match=r"^max_seqlen: expected at least T = 80 \(q.shape\[1\]\) for a fixed "
                                         r"batch, got 64$"):
        api.kda_prefill(*a, max_seqlen=64, **kw)
    api.kda_prefill(*a, max_seqlen=80, **kw)
    assert _stages(recorder[-1])[0] == "k1"


@pytest.fixture
def _allow_unverified(monkeypatch):
    monkeypatch.setattr(gate, "check", lambda build: "")
    monkeypatch.setattr(gate, "check_artifact", lambda *a, **k: None)


def test_the_short_entry_checks_its_arguments(_allow_unverified, monkeypatch):
    """check_inputs runs the short entry's IR-derived checks on CPU tensors."""
    monkeypatch.setattr(api, "SHORT", True)
    a, kw = _call(4, 16)
    api.check_inputs(*a, device="cpu", output_final_state=True, **kw)
    lens = [3, 0, 16]
    a, kw = _call(1, 19, lens=lens)
    api.check_inputs(*a, device="cpu", max_seqlen=16, **kw)
    with pytest.raises(ValueError, match=r"^max_seqlen: expected None or an int >= 0, got -2$"):
        api.check_inputs(*a, device="cpu", max_seqlen=-2, **kw)
    # the fixed build's entry refuses rows longer than its chunk, whoever calls it
    from host_codegen import get_entry
    for n, T in ((1, 16), (configs.PAIRWISE_CHUNKS, 64)):
        entry = get_entry(registry.find("k1_short", varlen=False, short_ht=False, short_chunks=n), backend="py")
        x = torch.randn(2, T, 2, 128).to(bf)
        args = (torch.zeros(2, T, 2).to(bf), torch.zeros(2), torch.zeros(2, 128), None, None, -5.0, None)
        entry.validate_only(x, x, x, x, *args, expect_device="cpu")
        x = torch.randn(2, T + 1, 2, 128).to(bf)
        args = (torch.zeros(2, T + 1, 2).to(bf),) + args[1:]
        with pytest.raises(ValueError, match=rf"^q: expected T <= {T}, got T = {T + 1}$"):
            entry.validate_only(x, x, x, x, *args, expect_device="cpu")
    lens = [3, 0, 64, 17]
    a, kw = _call(1, sum(lens), lens=lens)
    api.check_inputs(*a, device="cpu", max_seqlen=64, output_final_state=True, **kw)
