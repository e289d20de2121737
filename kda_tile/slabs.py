"""Time slabs: one long sequence run as consecutive calls of at most `tokens` tokens each, so that
the K1 -> K2 workspace a call allocates stays under a byte limit (issue 13's memory point).

Each slab is an ordinary call of the host entry on views of the caller's tensors; the state
crosses from one slab to the next in fp32 and slab ends fall on 32-token boundaries, so the
chunks are the whole call's and the result is the whole call's (the split path's segments
differ, within its own accuracy). Only one-sequence calls are cut: a fixed batch of one row, or
cu_seqlens of one sequence (the contract makes it [0, T]), which the host knows without reading
the device. A batch of several sequences would need their lengths on the host (a sync).
"""
import os

import torch

from kda_kernels import configs

K = V = 128
# Slab ends fall on multiples of this many tokens: whole chunks at 16 and 32.
ALIGN = 32
# PyTorch's CUDA caching allocator: a request of 10 MiB or more gets a segment rounded up to 2
# MiB, and keeps the whole segment as the block (so torch.cuda.max_memory_allocated counts it)
# when what is left would be 1 MiB or less (kMinLargeAlloc, kRoundLarge, kSmallSize).
_MIB = 1 << 20


def allocated_bytes(nbytes: int) -> int:
    """What the caching allocator counts as allocated for one request of `nbytes` bytes (round 49c:
    a 61.4 MiB split workspace counted as 62 MiB took H8 1x1M over a 64 MB limit by 0.48 MB)."""
    n = -(-nbytes // 512) * 512
    if n >= 10 * _MIB:
        segment = -(-n // (2 * _MIB)) * (2 * _MIB)
        if segment - n <= _MIB:
            return segment
    return n
# The shortest slab: below it the per-slab costs (launches, the state's trip through memory)
# would dominate; a limit too small for it is exceeded rather than honoured. (H96 under 64 MB
# takes 640-token slabs.)
MIN_TOKENS = 256


def ab_halves(split: bool, spp: int) -> bool:
    """Whether a call of api._plan's (split, spp) reads Ab as K1's two bf16 halves (K1Config.ab_halves,
    K2Config.v_ss): the split's passes with configs.SPLIT_VSS, the K2 form configs.VSS_ONE."""
    return configs.SPLIT_VSS if split else spp == configs.VSS_ONE


def workspace_bytes(N: int, T: int, HV: int, split: bool, chunk: int, varlen: bool = True, *, spp: int = 1) -> int:
    """Device bytes the host entry allocates for a call of N sequences of T tokens in all (a fixed
    batch: N rows of T // N) and K2 form `spp` (api._plan's): K1's chunk slots (Wk, qd, kr fp16
    [HV, NC * chunk, K]; Ab, Mqk fp16 [HV, NC * chunk, chunk], Ab twice the rows in bf16 halves
    where K2 or the split's passes read them so, configs.VSS_ONE and SPLIT_VSS; gC fp32 [HV, NC,
    K]) and, with the split, pass A's maps and the scan's segment starts (fp32 [N, G, HV, V + K, K]
    and [N, G, HV, V, K])."""
    NC = T // chunk + N if varlen else N * (-(-(T // N) // chunk))
    ab_rows = 2 if ab_halves(split, spp) else 1
    b = HV * NC * (chunk * (3 * K * 2 + (1 + ab_rows) * chunk * 2) + K * 4)
    if split:
        _, G = configs.split_plan(N, T, HV, chunk)
        b += N * G * HV * (2 * V + K) * K * 4
    return b


def slab_tokens(T: int, HV: int, limit: int, plan) -> int:
    """Tokens a slab of a one-sequence call of T tokens so that each slab's workspace and the
    two fp32 carry states fit in `limit` bytes; 0 when the whole call fits (or is too short to
    cut). plan(T) -> (split, chunk, spp) is the API's choice for a one-sequence call of T tokens."""
    if T <= MIN_TOKENS:
        return 0
    carry = allocated_bytes(2 * HV * V * K * 4)

    def nbytes(t):   # the entry allocates its workspace as one request
        split, chunk, spp = plan(t)
        return allocated_bytes(workspace_bytes(1, t, HV, split, chunk, spp=spp) + WS_SLACK)

    def fits(t):
        # the entry keeps one workspace per configuration: a tail slab that takes another plan
        # (unsplit below the split's threshold, another chunk) holds its own beside the slabs'
        need = nbytes(t) + carry
        tail = T % t
        if tail and plan(tail) != plan(t):
            need += nbytes(tail)
        return need <= limit

    if nbytes(T) <= limit:
        return 0
    n = 2
    while True:
        t = -(-T // n)
        t = -(-t // ALIGN) * ALIGN
        if t <= MIN_TOKENS:
            return MIN_TOKENS
        if fits(t):
            return t
        n += 1


# (device, tokens) -> cu_seqlens [0, tokens] of one slab
_CU: dict = {}


def _cu(n: int, device):
    cu = _CU.get((device, n))
    if cu is None:
        cu = torch.arange(2, dtype=torch.int64, device=device) * n
        if not (cu.is_cuda and torch.cuda.is_current_stream_capturing()):
            _CU[(device, n)] = cu
    return cu


def _outputs(q, v, initial_state, output_final_state, out, final_state_out):
    """(o, the two fp32 carry states, the final state or None, the first slab's initial state)."""
    HV = v.shape[2]
    dev = q.device
    o = out if out is not None else torch.empty(v.shape, dtype=torch.bfloat16, device=dev)
    carry = torch.empty((2, 1, HV, V, K), dtype=torch.float32, device=dev)
    ht_dtype = torch.float32 if initial_state is None else initial_state.dtype
    ht = None
    if output_final_state:
        ht = final_state_out if final_state_out is not None else torch.empty((1, HV, V, K), dtype=ht_dtype,
                                                                             device=dev)
    if os.environ.get("KDA_TILE_POISON") == "1":   # as the entry does for its own allocations
        carry.fill_(float("nan"))
        if out is None:
            o.fill_(float("nan"))
        if ht is not None and final_state_out is None:
            ht.fill_(float("nan"))
    cur = initial_state
    if initial_state is not None and initial_state.dtype != torch.float32:
        cur = carry[1].copy_(initial_state)      # the state crosses slabs in fp32
    return o, carry, ht, cur


def _slabs(T, tokens, output_final_state, ht, carry):
    """(j, start, end, wants a final state, its destination) of each slab."""
    for j, s in enumerate(range(0, T, tokens)):
        e = min(T, s + tokens)
        last = e == T
        want = output_final_state or not last
        dst = None
        if want:
            dst = ht if last and ht.dtype == torch.float32 else carry[j % 2]
        yield j, s, e, want, dst


def run(call, tokens, q, k, v, g, beta, *, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
        cu_seqlens, fast_math, out, final_state_out):
    """A one-sequence call (arguments already checked) as slabs of `tokens` tokens, each through
    call(...) with kda_prefill's keywords and caller outputs. Returns (o, final state or None)."""
    T = q.shape[1]
    dev = q.device
    o, carry, ht, cur = _outputs(q, v, initial_state, output_final_state, out, final_state_out)
    for j, s, e, want, dst in _slabs(T, tokens, output_final_state, ht, carry):
        sl = [x[0, s:e].unsqueeze(0) for x in (q, k, v, g, beta)]
        call(*sl, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale, initial_state=cur,
             output_final_state=want, cu_seqlens=None if cu_seqlens is None else _cu(e - s, dev),
             fast_math=fast_math, out=o[0, s:e].unsqueeze(0), final_state_out=dst)
        cur = dst
    if ht is not None and ht.dtype != torch.float32:
        ht.copy_(cur)
    return o, ht


# The pipeline: each slab's K1 on a low-priority stream, its K2 on a high-priority one, so that K1
# of slab j + 1 runs beside K2 of slab j on the SMs its chains leave (a one-sequence call has 2 HV
# chains: 64 of 132 SMs at H32). The entry's flag bits 8 and 9 launch one kernel of the pair; the
# argument after the flags is the slab's workspace, one of two the call allocates (slab j's K1
# waits for K2 of slab j - 2, the last reader of its workspace).
SKIP_K1, SKIP_K2 = 256, 512
# bytes a workspace holds beyond workspace_bytes: the entry rounds each of its six buffers up to
# 256 bytes and its base up to 256 (host_codegen.gen_cpp.WS_ALIGN)
WS_SLACK = 7 * 256
# device -> (K1's stream, K2's stream)
_STREAMS: dict = {}
# A list: run_pipelined appends (slab, "K1" or "K2", start event, end event) of each launch, timed
# events on the launch's stream (bench/pipeline_probe.py's timeline); None: no events.
TRACE = None


def _streams(device):
    s = _STREAMS.get(device)
    if s is None:
        # lower is higher; torch maps -1 into the device's range
        s = _STREAMS[device] = (torch.cuda.Stream(device, priority=0), torch.cuda.Stream(device, priority=-1))
    return s


def _launch(j, kernel, stream, raw, a, flags, ws):
    if TRACE is None:
        raw(*a, flags, ws)
        return
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record(stream)
    raw(*a, flags, ws)
    t1.record(stream)
    TRACE.append((j, kernel, t0, t1))


def pipeline_workspace_bytes(tokens: int, HV: int, chunk: int, varlen: bool, spp: int = 1) -> int:
    """Device bytes of the pipeline's two workspaces and two fp32 carry states."""
    return 2 * allocated_bytes(workspace_bytes(1, tokens, HV, False, chunk, varlen, spp=spp) + WS_SLACK) \
        + allocated_bytes(2 * HV * V * K * 4)


def run_pipelined(raw_for, tokens, chunk, q, k, v, g, beta, *, A_log, dt_bias, lower_bound, scale, initial_state,
                  output_final_state, cu_seqlens, out, final_state_out, spp=1):
    """A one-sequence call (arguments already checked; unsplit, `chunk`-token chunks, K2 form
    `spp`) as slabs of `tokens` tokens whose K1 and K2 run on two streams. raw_for(initial_state,
    want_final) is the raw entry of that plan for a slab with that initial state (None or fp32)
    and final state. Returns (o, final state or None), written on the caller's stream's order."""
    T, HV = q.shape[1], v.shape[2]
    dev = q.device
    o, carry, ht, cur = _outputs(q, v, initial_state, output_final_state, out, final_state_out)
    nbytes = workspace_bytes(1, tokens, HV, False, chunk, cu_seqlens is not None, spp=spp) + WS_SLACK
    ws = (torch.empty(nbytes, dtype=torch.uint8, device=dev), torch.empty(nbytes, dtype=torch.uint8, device=dev))
    plan = list(_slabs(T, tokens, output_final_state, ht, carry))
    # every slab's cu_seqlens made on the caller's stream before the two streams fork from it
    cus = {e - s: None if cu_seqlens is None else _cu(e - s, dev) for _, s, e, _, _ in plan}
    # each slab's views of q, k, v, g, beta and o, [1, tokens, ...], one split a tensor
    views = list(zip(*(x.split(tokens, dim=1) for x in (q, k, v, g, beta, o))))
    # each slab's initial state and its raw entry, looked up before the streams switch (two kinds
    # at most: the caller's initial state, then the fp32 carry)
    curs = [cur] + [dst for *_, dst in plan[:-1]]
    by_key, raws = {}, []
    for c, (*_, want, _) in zip(curs, plan):
        key = (None if c is None else c.dtype, want)
        if key not in by_key:
            by_key[key] = raw_for(c, want)
        raws.append(by_key[key])
    main = torch.cuda.current_stream(dev)
    prev = torch.cuda.current_stream()   # the current device's, which may not be dev
    lo, hi = _streams(dev)
    lo.wait_stream(main)
    hi.wait_stream(main)
    k2_done = []
    # set_stream, not torch.cuda.stream contexts: the loop's host time paces the pipeline at short
    # slabs (bench/pipeline_probe.py's timeline), and the entry launches on the current stream of
    # the tensors' device, which set_stream sets as the context would. set_stream also makes the
    # stream's device current, so the caller's device and stream are set back last.
    try:
        for j, s, e, want, dst in plan:
            a = [*views[j][:5], A_log, dt_bias, cus[e - s], curs[j], lower_bound, scale, views[j][5], dst]
            torch.cuda.set_stream(lo)
            if j >= 2:
                lo.wait_event(k2_done[j - 2])
            _launch(j, "K1", lo, raws[j], a, SKIP_K2 | 8, ws[j % 2])
            k1_done = torch.cuda.Event()
            k1_done.record(lo)
            torch.cuda.set_stream(hi)
            hi.wait_event(k1_done)
            _launch(j, "K2", hi, raws[j], a, SKIP_K1 | 8, ws[j % 2])
            ev = torch.cuda.Event()
            ev.record(hi)
            k2_done.append(ev)
    finally:
        torch.cuda.set_stream(main)
        if prev != main:
            torch.cuda.set_stream(prev)
    main.wait_stream(hi)
    main.wait_stream(lo)
    if ht is not None and ht.dtype != torch.float32:
        ht.copy_(plan[-1][4])
    return o, ht
