"""kda_prefill's dispatch: the steady-state key picks the same builds as select_builds, for every
configuration and in any call order, and makes exactly one call into the entry. CPU only: the
entry is replaced by a recorder."""
import itertools

import pytest
import torch

from kda_kernels import configs
from kda_tile import api

bf = torch.bfloat16


def _recording_entry(monkeypatch, result):
    """Replaces the entry by one that records (K1, the last kernel, argument count, every build)
    and returns result(args)."""
    calls = []

    def fake_entry(*builds):
        def call(*a):
            calls.append((builds[0], builds[-1], len(a), builds))
            return result(a)
        return call
    monkeypatch.setattr(api, "_entry", fake_entry)
    monkeypatch.setattr(api, "_ENTRIES", {})
    return calls


@pytest.fixture
def recorder(monkeypatch):
    return _recording_entry(monkeypatch, lambda a: ("o", None))


def _inputs(n_seqs, H, varlen, h0, L=3):
    T = L * n_seqs
    B = 1 if varlen else n_seqs
    T = T if varlen else L
    x = torch.zeros(B, T, H, 128, dtype=bf)
    kw = dict(A_log=torch.zeros(H), dt_bias=torch.zeros(H, 128))
    if varlen:
        kw["cu_seqlens"] = torch.arange(0, T + 1, L, dtype=torch.int64)
    if h0 is not None:
        kw["initial_state"] = torch.zeros(n_seqs, H, 128, 128, dtype=h0)
    return x, kw


CONFIGS = list(itertools.product([False, True], [False, True], [None, torch.float32, torch.bfloat16],
                                 [False, True], [(1, 1, 3), (65, 1, 3), (66, 1, 3), (3, 32, 3), (1, 1, 512),
                                                 (2, 33, 600), (2, 34, 600), (1, 96, 512), (2, 66, 600),
                                                 (1, 104, 512), (1, 105, 512), (1, 96, 511)]))


def test_each_call_gets_the_builds_select_builds_names(recorder):
    # Twice over, in two orders, so that a cached key can never hand one configuration another's entry.
    keys = set()   # one for every shape of a chunk size (and for the short form, every form of it)
    for cases in (CONFIGS, CONFIGS[::-1]):
        for varlen, fast, h0, ht, (n, H, L) in cases:
            x, kw = _inputs(n, H, varlen, h0, L)
            out = api.kda_prefill(x, x, x, x, x[..., 0], output_final_state=ht, fast_math=fast, **kw)
            assert out == ("o", None)
            k1, k2, nargs, _ = recorder[-1]
            short = api.SHORT and not varlen and h0 is None and L <= configs.PAIRWISE_TOKENS
            keys.add((varlen, fast, h0, ht) + (("short", L <= configs.SHORT_TOKENS) if short
                                               else (configs_chunk32(n, H, L, fast),
                                                     configs_form(n, H, L) if configs_chunk32(n, H, L, fast) else 1)))
            want = api.select_builds(varlen=varlen, fast_math=fast,
                                     initial_state_dtype=None if h0 is None else api._STATE_DTYPES[h0],
                                     output_final_state=ht,
                                     chunk=32 if configs_chunk32(n, H, L, fast) else 16,
                                     spp=(api.SHORT_FORM if L <= configs.SHORT_TOKENS else api.PAIRWISE_FORM) if short
                                     else configs_form(n, H, L) if configs_chunk32(n, H, L, fast)
                                     else 1)
            assert (k1, k2) == (want[0], want[-1]), (varlen, fast, h0, ht, n, H, L)
            assert (len(want) == 1) == short
            assert nargs == 11
    assert len(recorder) == 2 * len(CONFIGS)
    assert len(api._ENTRIES) == len(keys)


def configs_chunk32(n, H, L, fast):
    """32-token chunks: at most one 16-token chain an SM (2 n H <= 132), or two consumers a K2
    program (below), and sequences of 512 tokens or more (kda_kernels.configs.use_chunk32), with or
    without fast_math."""
    return n * H <= 104 and L >= 512


def configs_form(n, H, L):
    """A 32-token call's K2: two consumers a program where the one-consumer chains outnumber the
    SMs (2 n H > 132) and at most 104 programs (kda_kernels.configs.use_two_consumers); else one
    consumer, with v_ss at 96 chains or fewer (configs.use_vss_one)."""
    if 66 < n * H <= 104 and L >= 512:
        return configs.TWO_CONSUMERS
    return configs.VSS_ONE if 2 * n * H <= 96 else 1


def test_chunk_rule_takes_32_token_builds_only_for_few_long_chains():
    x, kw = _inputs(1, 1, True, None, 512)
    assert api.chunk_for(x, x, kw["cu_seqlens"]) == 32
    x, kw = _inputs(1, 1, True, None, 511)
    assert api.chunk_for(x, x, kw["cu_seqlens"]) == 16
    x, kw = _inputs(2, 34, False, None, 600)   # 136 chains, 68 two-consumer programs
    assert api.chunk_for(x, x, None) == 32 and api._plan(x, x, None) == (False, 32, configs.TWO_CONSUMERS)
    x, kw = _inputs(2, 53, False, None, 600)   # 106 two-consumer programs
    assert api.chunk_for(x, x, None) == 16
    x, kw = _inputs(1, 49, True, None, 600)    # 98 chains: one consumer, v^T from registers
    assert api._plan(x, x, kw["cu_seqlens"]) == (False, 32, 1)
    k1, k2 = api.select_builds(varlen=True, fast_math=False, initial_state_dtype=None, output_final_state=False,
                               chunk=32)
    assert k1.config.chunk == k2.config.chunk == 32 and k2.config.consumers == 1
    assert not k1.config.ab_halves and not k2.config.v_ss
    x, kw = _inputs(1, 48, True, None, 600)    # 96 chains: one consumer with v_ss
    assert api._plan(x, x, kw["cu_seqlens"]) == (False, 32, configs.VSS_ONE)
    k1, k2 = api.select_builds(varlen=True, fast_math=False, initial_state_dtype=None, output_final_state=False,
                               chunk=32, spp=configs.VSS_ONE)
    assert k1.config.chunk == k2.config.chunk == 32 and k2.config.consumers == 1
    assert k1.config.ab_halves and k2.config.v_ss and k2.config.seqs_per_program == 1
    k1, k2 = api.select_builds(varlen=False, fast_math=True, initial_state_dtype="bfloat16", output_final_state=True,
                               chunk=32, spp=configs.TWO_CONSUMERS)
    assert k1.config.chunk == k2.config.chunk == 32 and k2.config.consumers == 2 and not k2.config.varlen


def test_bad_keys_go_to_the_slow_path(recorder):
    x, kw = _inputs(2, 2, True, torch.float16)
    with pytest.raises(TypeError, match=r"^initial_state: expected dtype float32 or bfloat16, got torch.float16$"):
        api.kda_prefill(x, x, x, x, x[..., 0], **kw)
    x, kw = _inputs(2, 2, True, None)
    api.kda_prefill("not a tensor", x, x, x, x[..., 0], **kw)  # no shape: the entry's checks name q
    assert recorder[-1][0].config.varlen


def test_short_calls_skip_both_shape_rules_and_obey_force_chunk(recorder, monkeypatch):
    # Below _RULES_MIN_TOKENS tokens neither rule can choose the split or 32-token chunks, so the
    # call reads q's shape once and looks nothing up; a forced chunk size still wins.
    from kda_kernels import configs
    assert api._RULES_MIN_TOKENS == min(api._SPLIT_MIN_TOKENS, configs.CHUNK32_MIN_TOKENS)
    for varlen in (True, False):
        x, kw = _inputs(1, 1, varlen, None, api._RULES_MIN_TOKENS - 1)
        cu = kw.get("cu_seqlens")
        assert not api.use_split(x, x, cu) and api.chunk_for(x, x, cu) == 16
        api.kda_prefill(x, x, x, x, x[..., 0], **kw)
        assert recorder[-1][1].config.chunk == 16
        monkeypatch.setattr(api, "FORCE_CHUNK", 32)
        api.kda_prefill(x, x, x, x, x[..., 0], **kw)
        assert recorder[-1][1].config.chunk == 32
        monkeypatch.setattr(api, "FORCE_CHUNK", None)


def test_spp_rule_follows_the_measurements():
    # K2 over four sequences a program through kda_prefill (rounds 26a/26b): faster at H32 256 x 512,
    # 2048 x 64, 8192 x 16, H8 4096 x 32, H1 4096 x 32, H2 2112 x 64; slower at H32 132 x 512, at one
    # sequence and at H64 8 x 1024 / H96 16 x 1024 (bench/NOTES.md, sessions 25 and 26)
    # Eight a program where eight still leave 1024 programs (round 26e: faster than four at every
    # grouped row, equal at 2048 x 64), four below that.
    from kda_kernels import configs
    for N, T, HV, want in ((256, 131072, 32, 8), (2048, 131072, 32, 8), (8192, 131072, 32, 8), (4096, 131072, 8, 8),
                           (4096, 131072, 1, 8), (2112, 135168, 2, 8), (2112, 6336, 1, 4), (3000, 96000, 1, 4)):
        assert configs.use_spp(N, T, HV) == want, (N, T, HV)
    for N, T, HV in ((132, 67584, 32), (1, 8192, 96), (8, 8192, 64), (16, 16384, 96), (1, 65536, 8),
                     (1, 32768, 32), (64, 65536, 32)):
        assert configs.use_spp(N, T, HV) == 1, (N, T, HV)


@pytest.mark.parametrize("varlen", [True, False])
def test_many_short_sequences_take_the_spp_builds(monkeypatch, varlen):
    # 2112 sequences of 3 tokens at H = 1: 528 programs of 4 sequences, two value blocks each. A
    # fixed batch goes as packed sequences (the grouped K2 is varlen only), its o viewed back. (The
    # short form, on by default, takes such a fixed batch without a state: here the two kernels.)
    from kda_kernels import configs
    monkeypatch.setattr(api, "SHORT", False)
    recorder = _recording_entry(monkeypatch, lambda a: (a[2], None))
    n = 4 * configs.SPP_MIN_PROGRAMS[0] // 2
    for fast, h0, ht in itertools.product([False, True], [None, torch.float32, torch.bfloat16], [False, True]):
        x, kw = _inputs(n, 1, varlen, h0)
        o, _ = api.kda_prefill(x, x, x, x, x[..., 0], output_final_state=ht, fast_math=fast, **kw)
        assert o.shape == x.shape
        k1, k2, _, _ = recorder[-1]
        want = api.select_builds(varlen=True, fast_math=fast,
                                 initial_state_dtype=None if h0 is None else api._STATE_DTYPES[h0],
                                 output_final_state=ht, spp=configs.SPP)
        assert (k1, k2) == want and k2.config.seqs_per_program == configs.SPP == configs.use_spp(n, 3 * n, 1)
    # one sequence fewer than the rule needs: one sequence a program
    x, kw = _inputs(n - 4, 1, varlen, None)
    api.kda_prefill(x, x, x, x, x[..., 0], **kw)
    assert recorder[-1][1].config.seqs_per_program == 1


def test_force_spp_reaches_short_calls(recorder, monkeypatch):
    from kda_kernels import configs
    x, kw = _inputs(3, 2, True, torch.float32, 5)
    api.kda_prefill(x, x, x, x, x[..., 0], **kw)
    assert recorder[-1][1].config.seqs_per_program == 1
    for spp in configs.SPPS:
        monkeypatch.setattr(api, "FORCE_SPP", spp)
        api.kda_prefill(x, x, x, x, x[..., 0], **kw)
        assert recorder[-1][1].config.seqs_per_program == spp


def test_longest_first_rule_and_dispatch(recorder, monkeypatch):
    """K2 longest first (session 28): the rule takes it where K2 has more than one wave of programs
    and k2_order ranks the sequences (round 28c: ragged rows 0.80-0.91 of the time without it,
    uniform ones 0.98-0.99); forced on, every varlen call of 2 to LF_MAX_SEQS sequences that takes
    one sequence a program runs (K1, the order, K2 through it); one sequence, a fixed batch,
    32-token chunks and the grouped K2 keep their builds."""
    from kda_kernels import configs
    assert configs.LONGEST_FIRST is True and api.LONGEST_FIRST is None
    assert configs.use_longest_first(6, 8192, 96) and configs.use_longest_first(600, 3 * 10**5, 8)
    assert configs.use_longest_first(133, 133 * 64, 1) and not configs.use_longest_first(132, 132 * 64, 1)
    assert not configs.use_longest_first(2, 8192, 32) and not configs.use_longest_first(1, 8192, 200)
    assert not configs.use_longest_first(configs.LF_MAX_RANKED + 1, 2**20, 1)
    x, kw = _inputs(133, 1, True, None, 64)
    assert api.spp_for(x, x, kw["cu_seqlens"]) == configs.SPP_LONGEST_FIRST
    x, kw = _inputs(133, 1, False, None, 64)
    assert api.spp_for(x, x, None) == 1
    x, kw = _inputs(3, 2, True, torch.float32, 5)
    api.set_longest_first(False)
    api.kda_prefill(x, x, x, x, x[..., 0], output_final_state=True, **kw)
    assert len(recorder[-1][3]) == 2
    api.set_longest_first(None)
    api.kda_prefill(x, x, x, x, x[..., 0], output_final_state=True, **kw)
    assert len(recorder[-1][3]) == 2     # 12 programs: one wave
    api.set_longest_first(True)
    try:
        api.kda_prefill(x, x, x, x, x[..., 0], output_final_state=True, **kw)
        builds = recorder[-1][3]
        assert [b.stage for b in builds] == ["k1", "k2_order", "k2"]
        assert builds[2].config.longest_first and builds[2].config.initial_state == "float32"
        assert builds == api.select_builds(varlen=True, fast_math=False, initial_state_dtype="float32",
                                           output_final_state=True, spp=configs.SPP_LONGEST_FIRST)
        for n, varlen in ((1, True), (3, False)):
            x, kw = _inputs(n, 2, varlen, None, 5)
            api.kda_prefill(x, x, x, x, x[..., 0], **kw)
            assert len(recorder[-1][3]) == 2 and not recorder[-1][1].config.longest_first
        x, kw = _inputs(2, 2, True, None, 600)      # 32-token chunks
        api.kda_prefill(x, x, x, x, x[..., 0], **kw)
        assert recorder[-1][1].config.chunk == 32 and len(recorder[-1][3]) == 2
        n = 4 * configs.SPP_MIN_PROGRAMS[0] // 2   # the grouped K2
        x, kw = _inputs(n, 1, True, None)
        api.kda_prefill(x, x, x, x, x[..., 0], **kw)
        assert recorder[-1][1].config.seqs_per_program == configs.SPP
        with pytest.raises(TypeError, match=r"^on: expected True, False or None, got 1$"):
            api.set_longest_first(1)
    finally:
        api.set_longest_first(None)
