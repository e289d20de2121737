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
# The shortest slab: below it the per-slab costs (launches, the state's trip through memory)
# would dominate; a limit too small for it is exceeded rather than honoured. (H96 under 64 MB
# takes 640-token slabs.)
MIN_TOKENS = 256


def workspace_bytes(N: int, T: int, HV: int, split: bool, chunk: int, varlen: bool = True) -> int:
    """Device bytes the host entry allocates for a call of N sequences of T tokens in all (a fixed
    batch: N rows of T // N): K1's chunk slots (Wk, qd, kr fp16 [HV, NC * chunk, K]; Ab, Mqk fp16
    [HV, NC * chunk, chunk]; gC fp32 [HV, NC, K]) and, with the split, pass A's maps and the
    scan's segment starts (fp32 [N, G, HV, V + K, K] and [N, G, HV, V, K])."""
    NC = T // chunk + N if varlen else N * (-(-(T // N) // chunk))
    b = HV * NC * (chunk * (3 * K * 2 + 2 * chunk * 2) + K * 4)
    if split:
        _, G = configs.split_plan(N, T, HV, chunk)
        b += N * G * HV * (2 * V + K) * K * 4
    return b


def slab_tokens(T: int, HV: int, limit: int, plan) -> int:
    """Tokens a slab of a one-sequence call of T tokens so that each slab's workspace and the
    two fp32 carry states fit in `limit` bytes; 0 when the whole call fits (or is too short to
    cut). plan(T) -> (split, chunk) is the API's choice for a one-sequence call of T tokens."""
    if T <= MIN_TOKENS:
        return 0
    carry = 2 * HV * V * K * 4

    def fits(t):
        # the entry keeps one workspace per configuration: a tail slab that takes another plan
        # (unsplit below the split's threshold, another chunk) holds its own beside the slabs'
        need = workspace_bytes(1, t, HV, *plan(t)) + carry
        tail = T % t
        if tail and plan(tail) != plan(t):
            need += workspace_bytes(1, tail, HV, *plan(tail))
        return need <= limit

    if workspace_bytes(1, T, HV, *plan(T)) <= limit:
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


def run(call, tokens, q, k, v, g, beta, *, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
        cu_seqlens, fast_math, out, final_state_out):
    """A one-sequence call (arguments already checked) as slabs of `tokens` tokens, each through
    call(...) with kda_prefill's keywords and caller outputs. Returns (o, final state or None)."""
    T, HV = q.shape[1], v.shape[2]
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
    for j, s in enumerate(range(0, T, tokens)):
        e = min(T, s + tokens)
        last = e == T
        want = output_final_state or not last
        dst = None
        if want:
            dst = ht if last and ht.dtype == torch.float32 else carry[j % 2]
        sl = [x[0, s:e].unsqueeze(0) for x in (q, k, v, g, beta)]
        call(*sl, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale, initial_state=cur,
             output_final_state=want, cu_seqlens=None if cu_seqlens is None else _cu(e - s, dev),
             fast_math=fast_math, out=o[0, s:e].unsqueeze(0), final_state_out=dst)
        cur = dst
    if ht is not None and ht.dtype != torch.float32:
        ht.copy_(cur)
    return o, ht
