"""Time slabs on the CPU (issue 13's memory point, kda_tile.slabs): the workspace formula against
the host entry's own allocation, the slab plan against the limit, the slab loop against the
float64 reference run whole (a reference-backed stand-in for each slab's call), and the API's
routing. The kernels run slabbed in tests/test_gpu_correctness.py (test_slabs_*)."""
import pytest
import torch

import host_codegen as hc
from host_codegen import expr as X
from kda_kernels.configs import SPLIT_CHUNK, TWO_CONSUMERS, VSS_ONE
from kda_kernels.reference import kda_chunked, random_inputs
from kda_tile import api, slabs

BF = torch.bfloat16
_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


def _entry_workspace_bytes(N, T, HV, split, chunk, varlen, spp=1):
    builds = api.select_builds(varlen=varlen, fast_math=False, initial_state_dtype=None, output_final_state=False,
                               split=split, chunk=chunk, spp=spp)
    e = hc.get_entry(*builds, backend="cpp")
    B, Tq = (1, T) if varlen else (N, T // N)
    z = lambda *s: torch.zeros(*s, dtype=BF)  # noqa: E731
    cu = torch.arange(N + 1, dtype=torch.int64) * (T // N) if varlen else None
    if varlen:
        cu[-1] = T
    env = e.validate_only(z(B, Tq, 1, 128), z(B, Tq, 1, 128), z(B, Tq, HV, 128), z(B, Tq, HV, 128), z(B, Tq, HV),
                          torch.zeros(HV), torch.zeros(HV, 128), cu, None, -5.0, None, expect_device="cpu")
    total = 0
    for w in hc.entry_spec(*builds).workspace:
        n = 1
        for d in w.shape:
            n *= X.evaluate(d, env)
        total += n * _BYTES[w.dtype]
    return total


@pytest.mark.parametrize("N,T,HV,split,chunk,varlen,spp", [
    (1, 8192, 96, False, 16, True, 1), (1, 8192, 96, False, 16, False, 1), (1, 5000, 4, False, 32, True, 1),
    (3, 3001, 2, False, 16, True, 1), (2, 4096, 2, False, 32, False, 1), (1, 65536, 8, True, SPLIT_CHUNK, True, 1),
    (1, 9000, 3, True, SPLIT_CHUNK, True, 1), (1, 5000, 4, False, 32, True, VSS_ONE),
    (2, 4096, 2, False, 32, False, VSS_ONE), (1, 8192, 96, False, 32, True, TWO_CONSUMERS)])
def test_workspace_formula_is_the_entrys(N, T, HV, split, chunk, varlen, spp):
    assert slabs.workspace_bytes(N, T, HV, split, chunk, varlen, spp=spp) == _entry_workspace_bytes(
        N, T, HV, split, chunk, varlen, spp)


@pytest.mark.parametrize("force", [None, 32])
@pytest.mark.parametrize("T,HV,limit_mb", [(8192, 96, 64), (1 << 20, 8, 64), (65536, 8, 64), (32768, 32, 64),
                                           (8192, 96, 1024), (200_000, 1, 4), (5000, 96, 1), (70001, 1, 12), (8192, 64, 64),
                                           (5000, 4, 4)])
def test_slab_plan_fits_the_limit(T, HV, limit_mb, force, monkeypatch):
    """force 32: KDA_TILE_CHUNK=32, under which a 128-token tail of H96 8192 takes one consumer
    where the 576-token slabs take two: another entry, whose workspace the plan once left out
    (70.8 MB against 64 on an H100, session 47)."""
    monkeypatch.setattr(api, "FORCE_CHUNK", force)
    limit = limit_mb << 20
    plan = lambda t: api._slab_form(t, HV)  # noqa: E731
    tokens = slabs.slab_tokens(T, HV, limit, plan)
    nbytes = lambda t: slabs.workspace_bytes(1, t, HV, plan(t)[0], plan(t)[1], spp=plan(t)[2])  # noqa: E731
    whole = nbytes(T)
    if whole <= limit:
        assert tokens == 0
        return
    assert tokens % slabs.ALIGN == 0 or tokens == slabs.MIN_TOKENS
    assert slabs.MIN_TOKENS <= tokens < T
    # what the slabs hold at once: the two fp32 carry states, the slabs' workspace, and the tail
    # slab's if it takes another entry (the API keeps a workspace per entry)
    need = 2 * HV * 128 * 128 * 4 + nbytes(tokens)
    tail = T % tokens
    if tail and plan(tail) != plan(tokens):
        need += nbytes(tail)
    if tokens > slabs.MIN_TOKENS:
        assert need <= limit
    assert plan(tokens)[:2] == api._one_sequence_plan(tokens, HV)


def test_allocator_model_gives_round_49c_peak():
    """The caching allocator's count (slabs.allocated_bytes) of round 49c's H8 1x1M slabs under 64
    MB, as planned then (5792-token split slabs, a 224-token fixed tail on its own entry, the two
    fp32 carry states): 67,609,600 bytes measured on an H100, where the plain sum said 63.95 MB."""
    ws = slabs.allocated_bytes(slabs.workspace_bytes(1, 5792, 8, True, SPLIT_CHUNK, spp=4) + slabs.WS_SLACK)
    tail = slabs.allocated_bytes(slabs.workspace_bytes(1, 224, 8, False, 16, False) + slabs.WS_SLACK)
    carry = slabs.allocated_bytes(2 * 8 * 128 * 128 * 4)
    assert abs(ws + tail + carry - 67_609_600) <= 2048
    assert ws == 62 << 20 and slabs.allocated_bytes((60 << 20) - (2 << 20) + 512) == (58 << 20) + 512
    # the plan now leaves room for it
    plan = lambda t: api._slab_form(t, 8)  # noqa: E731
    tokens = slabs.slab_tokens(1 << 20, 8, 64 << 20, plan)
    need = carry + slabs.allocated_bytes(slabs.workspace_bytes(1, tokens, 8, *plan(tokens)[:2], spp=plan(tokens)[2])
                                         + slabs.WS_SLACK)
    assert need <= 64 << 20
    assert (1 << 20) % tokens == 0 or plan((1 << 20) % tokens) == plan(tokens)


def test_slab_plan_tells_entries_apart():
    """A plan whose third element differs for the tail counts the tail's workspace."""
    two = lambda t: (False, 32, 2 if t >= 512 else 1)  # noqa: E731
    plain = lambda t: (False, 32, 1)  # noqa: E731
    assert slabs.slab_tokens(8192, 96, 64 << 20, plain) == 576
    assert slabs.slab_tokens(8192, 96, 64 << 20, two) == 512


def _reference_call(calls):
    """A stand-in for kda_prefill on one slab: the float64 chunked reference, written into the
    caller's outputs in their dtypes; it records each slab's arguments."""
    def call(q, k, v, g, beta, *, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
             cu_seqlens, fast_math, out, final_state_out):
        assert out is not None and out.shape == v.shape and q.shape[0] == 1
        assert (final_state_out is not None) == output_final_state
        if cu_seqlens is not None:
            assert cu_seqlens.tolist() == [0, q.shape[1]]
        if initial_state is not None and final_state_out is not None:
            assert initial_state.data_ptr() != final_state_out.data_ptr()
        h0 = None if initial_state is None else initial_state.double()
        o, ht = kda_chunked(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale,
                            initial_state=h0, output_final_state=output_final_state, cu_seqlens=cu_seqlens)
        out.copy_(o)
        if output_final_state:
            final_state_out.copy_(ht)
        calls.append((q.shape[1], None if initial_state is None else initial_state.dtype,
                      None if final_state_out is None else final_state_out.dtype))
    return call


def _one_sequence(T, H, seed, h0, cu):
    """Random inputs of one sequence, the call's keywords, its initial state in dtype h0 (or None),
    cu_seqlens (or None) and the float64 chunked reference run whole (o, final state)."""
    x = random_inputs(1, T, H, seed=seed)
    q, k, v, g, beta = (x[n] for n in ("q", "k", "v", "g", "beta"))
    kw = dict(A_log=x["A_log"], dt_bias=x["dt_bias"], lower_bound=-5.0, scale=None)
    init = None if h0 is None else torch.randn(1, H, 128, 128).to(h0)
    cu_seqlens = torch.tensor([0, T]) if cu else None
    ro, rht = kda_chunked(q, k, v, g, beta, **kw, initial_state=None if init is None else init.double(),
                          output_final_state=True, cu_seqlens=cu_seqlens)
    return (q, k, v, g, beta), kw, init, cu_seqlens, ro, rht


@pytest.mark.parametrize("h0", [None, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("want_ht", [False, True])
@pytest.mark.parametrize("cu", [False, True])
def test_slab_loop_matches_the_whole_sequence(h0, want_ht, cu):
    T, H, tokens = 200, 2, 64
    (q, k, v, g, beta), kw, init, cu_seqlens, ro, rht = _one_sequence(T, H, 7 + T, h0, cu)
    calls = []
    out = torch.full(v.shape, float("nan"), dtype=BF)
    o, ht = slabs.run(_reference_call(calls), tokens, q, k, v, g, beta, **kw, initial_state=init,
                      output_final_state=want_ht, cu_seqlens=cu_seqlens, fast_math=False, out=out,
                      final_state_out=None)
    assert o is out and not torch.isnan(o.float()).any()
    assert [c[0] for c in calls] == [64, 64, 64, 8]
    # every slab after the first starts from the fp32 carry; the last writes the state asked for
    assert all(c[1] == torch.float32 for c in calls[1:]) and calls[0][1] == (None if h0 is None else torch.float32)
    assert all(c[2] == torch.float32 for c in calls[:-1])
    assert calls[-1][2] == (torch.float32 if want_ht else None)
    assert (o.double() - ro.to(BF).double()).abs().max() <= 2 ** -7 * ro.abs().max()
    if want_ht:
        assert ht.dtype == (h0 or torch.float32) and ht.shape == (1, H, 128, 128)
        assert torch.allclose(ht.double(), rht.to(ht.dtype).double(), rtol=1e-2 if h0 == BF else 1e-5, atol=1e-6)
    else:
        assert ht is None


def test_api_routes_long_single_sequences_to_slabs(monkeypatch):
    """With a limit, a one-sequence call over it goes to the slabs (after the whole call's checks);
    several sequences, short calls and no limit do not."""
    seen = []
    monkeypatch.setattr(api, "_slabbed", lambda tokens, *a: seen.append(tokens) or ("slabbed", None))
    q = torch.zeros(1, 8192, 96, 128, dtype=BF)
    cu1, cu2 = torch.tensor([0, 8192]), torch.tensor([0, 4096, 8192])
    try:
        api.set_workspace_limit(64 << 20)
        assert api.kda_prefill(q, q, q, q, q[..., 0], A_log=None, dt_bias=None)[0] == "slabbed"
        assert api.kda_prefill(q, q, q, q, q[..., 0], A_log=None, dt_bias=None, cu_seqlens=cu1)[0] == "slabbed"
        assert seen and seen[0] == seen[1] and seen[0] % 32 == 0
        with pytest.raises(ValueError, match="expected a cuda tensor|device"):
            api.kda_prefill(q, q, q, q, q[..., 0], A_log=torch.zeros(96), dt_bias=torch.zeros(96, 128),
                            cu_seqlens=cu2)   # two sequences: the entry's own checks, no slabs
        assert len(seen) == 2
        api.set_workspace_limit(None)
        with pytest.raises(ValueError, match="expected a cuda tensor|device"):
            api.kda_prefill(q, q, q, q, q[..., 0], A_log=torch.zeros(96), dt_bias=torch.zeros(96, 128))
        assert len(seen) == 2
    finally:
        api.set_workspace_limit(None)
    with pytest.raises(ValueError, match=r"^nbytes: expected a positive int or None, got 0$"):
        api.set_workspace_limit(0)


def test_slabbed_call_names_the_callers_arguments():
    """A bad argument of a slab-eligible call is reported as the caller passed it (whole shapes,
    out / final_state_out by their API names), before any slab runs."""
    q = torch.zeros(1, 8192, 4, 128, dtype=BF)
    kw = dict(A_log=torch.zeros(4), dt_bias=torch.zeros(4, 128))
    try:
        api.set_workspace_limit(1 << 20)
        with pytest.raises(TypeError, match=r"^out: expected a torch.Tensor or None, got list$"):
            api.kda_prefill(q, q, q, q, q[..., 0], **kw, out=[])
        with pytest.raises(ValueError, match=r"^final_state_out: given, but output_final_state is False$"):
            api.kda_prefill(q, q, q, q, q[..., 0], **kw, final_state_out=torch.zeros(1, 4, 128, 128))
        with pytest.raises(ValueError, match=r"^q: expected a cuda tensor, got device cpu$"):
            api.kda_prefill(q, q, q, q, q[..., 0], **kw)
    finally:
        api.set_workspace_limit(None)


def test_slab_loop_poisons_its_own_buffers(monkeypatch):
    """Under KDA_TILE_POISON=1 the loop's own o, carry and final state start as NaN, as the
    entry's do: a slab that wrote nothing would show."""
    monkeypatch.setenv("KDA_TILE_POISON", "1")
    x = random_inputs(1, 100, 1, seed=3)
    skipped = []

    def lazy(q, k, v, g, beta, **kw):   # writes nothing for the second slab
        skipped.append(q.shape[1])
        if len(skipped) != 2:
            _reference_call([])(q, k, v, g, beta, **kw)
    o, ht = slabs.run(lazy, 32, *(x[n] for n in ("q", "k", "v", "g", "beta")), A_log=x["A_log"],
                      dt_bias=x["dt_bias"], lower_bound=-5.0, scale=None, initial_state=None,
                      output_final_state=True, cu_seqlens=None, fast_math=False, out=None, final_state_out=None)
    assert torch.isnan(o[0, 32:64].float()).all() and not torch.isnan(o[0, :32].float()).any()
    assert torch.isnan(ht).all()    # the state after the unwritten slab is NaN, and so is every later one


def _entry_call(seen):
    """A stand-in for kda_prefill on one slab that runs the generated C++ entry in its dry-run
    mode (validation, workspace and output allocation, argument packing; no driver calls) with
    the builds kda_prefill would pick for the slab: each slab's views must pass the entry's own
    checks (shapes, strides, alignment, no overlap between outputs and inputs)."""
    def call(q, k, v, g, beta, *, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
             cu_seqlens, fast_math, out, final_state_out):
        T, HV = q.shape[1], v.shape[2]
        split, chunk = api._one_sequence_plan(T, HV)
        if split and cu_seqlens is None:       # kda_prefill takes a split fixed row as one sequence
            cu_seqlens = torch.tensor([0, T])
        builds = api._prepare(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk)
        e = hc.get_entry(*builds, backend="cpp")
        o, ht = e.dry_run(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
                          o=out, final_state=final_state_out)
        assert o is out and (ht is final_state_out)
        seen.append((T, split, chunk))
    return call


@pytest.mark.parametrize("T,HV,tokens,cu,h0", [(3000, 96, 608, False, None), (3000, 96, 608, True, torch.float32),
                                               (3500, 4, 896, True, torch.bfloat16), (70001, 1, 8768, False, None)])
def test_slab_views_pass_the_entrys_checks(T, HV, tokens, cu, h0):
    z = lambda *s: torch.zeros(*s, dtype=BF)  # noqa: E731
    q, v = z(1, T, HV, 128), z(1, T, HV, 128)
    seen = []
    init = None if h0 is None else torch.zeros(1, HV, 128, 128, dtype=h0)
    o, ht = slabs.run(_entry_call(seen), tokens, q, q, v, v, z(1, T, HV), A_log=torch.zeros(HV),
                      dt_bias=torch.zeros(HV, 128), lower_bound=-5.0, scale=None, initial_state=init,
                      output_final_state=True, cu_seqlens=torch.tensor([0, T]) if cu else None, fast_math=False,
                      out=None, final_state_out=None)
    assert sum(t for t, _, _ in seen) == T and len(seen) == -(-T // tokens)
    assert ht.dtype == (h0 or torch.float32)


# --------------------------------------------------------------------------------------------
# The slab pipeline (slabs.run_pipelined) on the CPU: fake streams and events record what each
# launch waits for, and a reference-backed stand-in for the raw entry runs K2's part of a slab.


class _Node:
    def __init__(self, deps, what=None):
        self.deps = {d for d in deps if d is not None}
        self.what = what

    def after(self, other):
        seen, todo = set(), [self]
        while todo:
            n = todo.pop()
            if n is other:
                return True
            if id(n) not in seen:
                seen.add(id(n))
                todo.extend(n.deps)
        return False


class _Stream:
    def __init__(self, name, priority=0):
        self.name, self.priority, self.last = name, priority, None

    def push(self, *deps, what=None):
        self.last = _Node((self.last,) + deps, what)
        return self.last

    def wait_stream(self, other):
        self.push(other.last)

    def wait_event(self, ev):
        self.push(ev.node)


class _Event:
    def __init__(self):
        self.node = None

    def record(self, stream):
        self.node = stream.push()


class _FakeCuda:
    """The torch.cuda names run_pipelined uses, over _Stream and _Event."""
    def __init__(self):
        self.main = _Stream("main")
        self.side = (_Stream("k1", 0), _Stream("k2", -1))
        self.cur = self.main

    def current_stream(self, device=None):
        return self.cur

    def set_stream(self, s):
        self.cur = s

    def stream(self, s):
        import contextlib

        @contextlib.contextmanager
        def ctx():
            prev, self.cur = self.cur, s
            try:
                yield
            finally:
                self.cur = prev
        return ctx()

    Event = _Event


def _pipeline_raw(fake, log):
    """raw(...) of one slab: flag bits 8 / 9 say which kernel runs; K2's part runs the float64
    reference into the caller's views; each launch is a node on the current fake stream. A raw
    entry serves every slab of its kind (initial state None or its dtype, and want): raw_for is
    asked once a kind."""
    kinds = []

    def raw_for(h0, want):
        kind = (None if h0 is None else h0.dtype, want)
        assert kind not in kinds
        kinds.append(kind)

        def raw(q, k, v, g, beta, A_log, dt_bias, cu, h0_, lb, scale, o, ht, flags, ws):
            assert (None if h0_ is None else h0_.dtype, ht is not None) == kind and o.shape == v.shape
            kernel = "K1" if flags & slabs.SKIP_K2 else "K2"
            assert flags & (slabs.SKIP_K1 | slabs.SKIP_K2) in (slabs.SKIP_K1, slabs.SKIP_K2)
            node = fake.cur.push(what=(kernel, len([e for e in log if e[0] == kernel]), ws, fake.cur.name))
            log.append(node.what + (node,))
            if kernel == "K2":
                init = None if h0_ is None else h0_.double()
                ro, rht = kda_chunked(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lb, scale=scale,
                                      initial_state=init, output_final_state=want, cu_seqlens=cu)
                o.copy_(ro)
                if want:
                    ht.copy_(rht)
        return raw
    return raw_for


@pytest.mark.parametrize("h0", [None, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("want_ht", [False, True])
@pytest.mark.parametrize("cu", [False, True])
def test_pipeline_orders_each_slab_and_matches_the_whole_sequence(monkeypatch, h0, want_ht, cu):
    fake = _FakeCuda()
    monkeypatch.setattr(torch.cuda, "current_stream", fake.current_stream)
    monkeypatch.setattr(torch.cuda, "stream", fake.stream)
    monkeypatch.setattr(torch.cuda, "set_stream", fake.set_stream)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(slabs, "_streams", lambda device: fake.side)
    T, H, tokens = 232, 2, 64
    (q, k, v, g, beta), kw, init, cu_seqlens, ro, rht = _one_sequence(T, H, 11 + T, h0, cu)
    before = fake.main.push(what="caller's earlier work")
    log = []
    o, ht = slabs.run_pipelined(_pipeline_raw(fake, log), tokens, 16, q, k, v, g, beta, **kw, initial_state=init,
                                output_final_state=want_ht, cu_seqlens=cu_seqlens, out=None, final_state_out=None)
    assert fake.cur is fake.main                           # the caller's stream is current again
    after = fake.main.push(what="caller's later work")
    k1 = [e for e in log if e[0] == "K1"]
    k2 = [e for e in log if e[0] == "K2"]
    assert len(k1) == len(k2) == 4
    for j in range(4):
        assert k1[j][3] == "k1" and k2[j][3] == "k2"      # K1 on the low-priority stream, K2 on the high
        assert k1[j][2] is k2[j][2]                       # one workspace a slab ...
        assert j == 0 or k1[j][2] is not k1[j - 1][2]     # ... two in turn
        assert k2[j][4].after(k1[j][4])                   # K2 of a slab after its K1
        assert j == 0 or k2[j][4].after(k2[j - 1][4])     # the state: K2 of slab j after K2 of slab j - 1
        assert j < 2 or k1[j][4].after(k2[j - 2][4])      # a workspace is written after its last reader
        assert j == 0 or not k1[j][4].after(k2[j - 1][4])  # ... and K1 of slab j runs beside K2 of slab j - 1
        assert k1[j][4].after(before) and after.after(k2[j][4]) and after.after(k1[j][4])
    assert k1[0][2].numel() >= slabs.workspace_bytes(1, tokens, H, False, 16, cu) + slabs.WS_SLACK
    assert (o.double() - ro.to(BF).double()).abs().max() <= 2 ** -7 * ro.abs().max()
    if want_ht:
        assert ht.dtype == (h0 or torch.float32)
        assert torch.allclose(ht.double(), rht.to(ht.dtype).double(), rtol=1e-2 if h0 == BF else 1e-5, atol=1e-6)
    else:
        assert ht is None


@pytest.mark.parametrize("T,HV,on,limit_mb,want", [
    (32768, 32, True, None, 4096), (32768, 32, None, None, 8192), (131072, 32, None, None, 16384),
    (40000, 32, None, None, 10016), (16384, 32, None, None, 0), (32768, 48, None, None, 0), (32768, 32, False, None, 0),
    (8192, 96, True, 64, None), (1 << 20, 8, True, None, 0), (2000, 4, True, None, 256), (300, 4, True, None, 256), (256, 4, True, None, 0)])
def test_pipeline_rule(T, HV, on, limit_mb, want):
    """The slab tokens of a one-sequence call: PIPE_SLABS slabs when forced on; as the rule picks,
    up to PIPE_SLABS slabs of at least PIPE_MIN_SLAB tokens at 64 chains or fewer; none where the
    call takes the split or is too short to cut; smaller slabs where a workspace limit needs them."""
    try:
        api.set_pipeline(on)
        api.set_workspace_limit(None if limit_mb is None else limit_mb << 20)
        tokens = api._pipe_rule(1, T, HV)
        assert api._pipe_rule(2, T, HV) == 0
        if want is not None:
            assert tokens == want
        if limit_mb is not None:
            chunk = api._one_sequence_plan(T, HV)[1]
            assert tokens and slabs.pipeline_workspace_bytes(tokens, HV, chunk, True,
                                                             api._pipe_form(T, HV, chunk)) <= limit_mb << 20
            assert tokens % slabs.ALIGN == 0
    finally:
        api.set_pipeline(None)
        api.set_workspace_limit(None)
    with pytest.raises(TypeError, match=r"^on: expected True, False or None, got 1$"):
        api.set_pipeline(1)


def test_api_routes_one_sequence_calls_to_the_pipeline(monkeypatch):
    """Forced on, a one-sequence unsplit call goes to the pipeline (fixed row or cu_seqlens); several
    sequences and split calls do not; its bad arguments are named as the caller passed them."""
    seen = []
    real = api._pipelined
    monkeypatch.setattr(api, "_pipelined", lambda tokens, *a: seen.append(tokens) or ("piped", None))
    q = torch.zeros(1, 8192, 32, 128, dtype=BF)
    cu1, cu2 = torch.tensor([0, 8192]), torch.tensor([0, 4096, 8192])
    kw = dict(A_log=torch.zeros(32), dt_bias=torch.zeros(32, 128))
    try:
        api.set_pipeline(True)
        assert api.kda_prefill(q, q, q, q, q[..., 0], **kw)[0] == "piped"
        assert api.kda_prefill(q, q, q, q, q[..., 0], **kw, cu_seqlens=cu1)[0] == "piped"
        assert seen == [1024, 1024]
        with pytest.raises(ValueError, match="expected a cuda tensor|device"):
            api.kda_prefill(q, q, q, q, q[..., 0], **kw, cu_seqlens=cu2)
        assert len(seen) == 2
        monkeypatch.setattr(api, "_pipelined", real)
        with pytest.raises(TypeError, match=r"^out: expected a torch.Tensor or None, got list$"):
            api.kda_prefill(q, q, q, q, q[..., 0], **kw, out=[])
        with pytest.raises(ValueError, match=r"^q: expected a cuda tensor, got device cpu$"):
            api.kda_prefill(q, q, q, q, q[..., 0], **kw)
    finally:
        api.set_pipeline(None)


@pytest.mark.parametrize("T,HV,cu,h0,want_ht", [(3000, 96, False, None, True), (3000, 4, True, torch.bfloat16, True),
                                               (8192, 32, True, torch.float32, False)])
def test_pipeline_through_the_entry(monkeypatch, T, HV, cu, h0, want_ht):
    """Every slab's two calls through the generated C++ entry of the builds the pipeline picks, in
    its dry-run mode (checks, workspace, argument packing; no driver calls), under
    KDA_TILE_POISON=1: the caller's workspace is big enough for each slab, K1's call poisons it,
    and K2's call leaves what K1 wrote (a marker standing in for K1's output)."""
    monkeypatch.setenv("KDA_TILE_POISON", "1")
    fake = _FakeCuda()
    monkeypatch.setattr(torch.cuda, "current_stream", fake.current_stream)
    monkeypatch.setattr(torch.cuda, "stream", fake.stream)
    monkeypatch.setattr(torch.cuda, "set_stream", fake.set_stream)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(slabs, "_streams", lambda device: fake.side)
    api.set_pipeline(True)
    try:
        tokens = api._pipe_rule(1, T, HV)
    finally:
        api.set_pipeline(None)
    split, chunk = api._one_sequence_plan(T, HV)
    assert tokens and not split
    cu_seqlens = torch.tensor([0, T]) if cu else None
    calls = []

    def raw_for(h0_, want):
        builds = api._prepare(h0_, want, cu_seqlens, False, False, chunk)
        e = hc.get_entry(*builds, backend="cpp")

        def raw(*a):
            *args, flags, ws = a
            if flags & slabs.SKIP_K2:
                ws.zero_()
                e._entry(*args, flags | 4, ws)
                assert int((ws != 0).sum()) > 0        # poisoned before K1
                ws.fill_(0x5A)                          # "K1's output"
            else:
                e._entry(*args, flags | 4, ws)
                assert bool((ws == 0x5A).all())        # K2's call kept it
            calls.append((args[0].shape[1], flags, ws.data_ptr()))
        return raw
    z = lambda *s: torch.zeros(*s, dtype=BF)  # noqa: E731
    q, v = z(1, T, HV, 128), z(1, T, HV, 128)
    init = None if h0 is None else torch.zeros(1, HV, 128, 128, dtype=h0)
    o, ht = slabs.run_pipelined(raw_for, tokens, chunk, q, q, v, v, z(1, T, HV), A_log=torch.zeros(HV),
                                dt_bias=torch.zeros(HV, 128), lower_bound=-5.0, scale=None, initial_state=init,
                                output_final_state=want_ht, cu_seqlens=cu_seqlens, out=None, final_state_out=None)
    n = -(-T // tokens)
    assert len(calls) == 2 * n and sum(c[0] for c in calls) == 2 * T
    assert len({c[2] for c in calls}) == 2
    assert (ht is not None) == want_ht and (ht is None or ht.dtype == (h0 or torch.float32))


@pytest.mark.parametrize("name,value,want", [
    ("KDA_TILE_PIPE_SLABS", "x", "expected a positive integer"), ("KDA_TILE_PIPE_SLABS", "-2", "expected a positive integer"),
    ("KDA_TILE_WORKSPACE_MB", "0", "expected a positive integer"),
    ("KDA_TILE_WORKSPACE_MB", "64MB", "expected a positive integer"),
    ("KDA_TILE_SPP", "16", "expected one of 1, 4, 8 or unset"), ("KDA_TILE_CHUNK", "64", "expected one of 16, 32 or unset"),
    ("KDA_TILE_SPLIT", "yes", "expected one of 0, 1 or unset"), ("KDA_TILE_PIPELINE", "on", "expected one of 0, 1 or unset")])
def test_bad_environment_values_are_named(name, value, want):
    import os
    import subprocess
    import sys
    env = dict(os.environ, **{name: value})
    r = subprocess.run([sys.executable, "-c", "import kda_tile.api"], env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == f"ValueError: {name}: {want}, got {value!r}"


@pytest.mark.parametrize("T,H,want", [(32768, 32, 8192), (131072, 24, 16384), (16384, 32, 0), (32768, 48, 0)])
def test_api_routes_by_the_pipeline_rule(monkeypatch, T, H, want):
    """As the rule picks (no set_pipeline): a one-sequence call of 64 chains or fewer and at least
    32768 tokens goes to the pipeline in slabs of at least 8192 tokens, fixed row or cu_seqlens;
    shorter calls and more chains take the whole call (here the entry's device check)."""
    seen = []
    monkeypatch.setattr(api, "_pipelined", lambda tokens, *a: seen.append(tokens) or ("piped", None))
    q = torch.zeros(1, 1, H, 128, dtype=BF).expand(1, T, H, 128)
    kw = dict(A_log=torch.zeros(H), dt_bias=torch.zeros(H, 128))
    api.set_pipeline(None)
    for cu in (None, torch.tensor([0, T])):
        if want:
            assert api.kda_prefill(q, q, q, q, q[..., 0], **kw, cu_seqlens=cu)[0] == "piped"
        else:
            with pytest.raises(ValueError, match="expected a cuda tensor|device"):
                api.kda_prefill(q, q, q, q, q[..., 0], **kw, cu_seqlens=cu)
    assert seen == ([want, want] if want else [])
