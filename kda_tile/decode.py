"""kda_decode: S = 1..8 tokens for each of N sequences, each updating its own row of a state
pool in place (one kernel launch; kda_kernels/decode.py)."""
import re

import torch

from kda_kernels import registry

from .api import _device_types, _expect_device, _gated_entry, _no_grad_inputs, _require_bool

_STATE_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16"}
_TENSOR_ARGS = ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "state_pool", "state_indices")
# (name, rank without the token axis, labels) of the token inputs
_ONE_TOKEN = (("k", 3, "[N, H, K]"), ("v", 3, "[N, HV, V]"), ("g", 3, "[N, HV, K]"), ("beta", 2, "[N, HV]"))

# (state_pool dtype, fast_math) -> the entry's fast call (default validation, fresh o)
_ENTRIES: dict = {}


def select_build(*, state_dtype: str, fast_math: bool):
    return registry.find("decode", state_dtype=state_dtype, fast_math=fast_math, block_v=32)


def _build_for(state_pool, fast_math):
    if not isinstance(state_pool, torch.Tensor):
        raise TypeError(f"state_pool: expected a torch.Tensor, got {type(state_pool).__name__}")
    if state_pool.dtype not in _STATE_DTYPES:
        raise TypeError(f"state_pool: expected dtype float32 or bfloat16, got {str(state_pool.dtype)[6:]}")
    return select_build(state_dtype=_STATE_DTYPES[state_pool.dtype], fast_math=fast_math)


def _entry(state_pool, fast_math):
    try:
        return _ENTRIES[state_pool.dtype, fast_math]
    except (KeyError, AttributeError):
        entry = _gated_entry(_build_for(state_pool, fast_math))
        _ENTRIES[state_pool.dtype, fast_math] = entry
        return entry


def _with_token_axis(q, k, v, g, beta, out):
    """Views with a token axis of length 1 when q is [N, H, K] (one token per sequence)."""
    if not (isinstance(q, torch.Tensor) and q.dim() == 3):
        return False, (q, k, v, g, beta), out
    try:  # the steady state: no per-argument loop (its Python costs more than the five views)
        if out is None and k.dim() == 3 and v.dim() == 3 and g.dim() == 3 and beta.dim() == 2:
            return True, (q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), g.unsqueeze(1), beta.unsqueeze(1)), None
    except AttributeError:  # not a tensor: the checks below leave it to the entry, which names it
        pass
    return _checked_token_axis(q, k, v, g, beta, out)


def _checked_token_axis(q, k, v, g, beta, out):
    for (name, rank, labels), t in zip(_ONE_TOKEN, (k, v, g, beta)):
        if isinstance(t, torch.Tensor) and t.dim() != rank:
            raise ValueError(f"{name}: expected {rank} dimensions {labels} (q is [N, H, K]: one token per "
                             f"sequence), got {t.dim()}")
    if isinstance(out, torch.Tensor) and out.dim() != 3:
        raise ValueError(f"out: expected 3 dimensions [N, HV, V] (q is [N, H, K]: one token per sequence), "
                         f"got {out.dim()}")
    views = tuple(t.unsqueeze(1) if isinstance(t, torch.Tensor) else t for t in (q, k, v, g, beta))
    return True, views, (out.unsqueeze(1) if isinstance(out, torch.Tensor) else out)


def _indices(state_indices):
    """int64 as it is; int32 as an int64 copy (one small elementwise kernel, captured like any
    other in a CUDA graph). Never reinterpreted."""
    if isinstance(state_indices, torch.Tensor) and state_indices.dtype != torch.int64:
        if state_indices.dtype != torch.int32:
            raise TypeError(f"state_indices: expected dtype int64 or int32, got {str(state_indices.dtype)[6:]}")
        return state_indices.to(torch.int64)
    return state_indices


_DIM_REF = re.compile(r"^(q|k|v|g|beta|o)(\.shape\[|\.stride\()(\d+)")


def _caller_names(e: Exception, single: bool, out_given: bool) -> Exception:
    """The entry's message in the caller's terms: its output o is `out`, and without a token axis
    a dimension d >= 2 of the entry's [N, 1, ...] view is dimension d - 1 of the caller's tensor."""
    msg = str(e)
    m = _DIM_REF.match(msg)
    if single and m and int(m.group(3)) >= 2:
        msg = f"{m.group(1)}{m.group(2)}{int(m.group(3)) - 1}" + msg[m.end():]
    if out_given and (msg.startswith("o: ") or msg.startswith("o.")):
        msg = "out" + msg[1:]
    return e if msg == str(e) else type(e)(msg)


def _check_flags(fast_math, validate):
    _require_bool("fast_math", fast_math)
    if validate != "fast" and validate != "full":
        raise ValueError(f"validate: expected 'fast' or 'full', got {validate!r}")


def kda_decode(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None, state_pool, state_indices,
               fast_math=False, validate="fast", out=None):
    """One decode step of KDA (safe gate, in-kernel q/k L2 norm and beta sigmoid) for N sequences,
    each reading and updating its row of a state pool in place.

    Args:
        q, k: [N, H, 128] bf16, or [N, S, H, 128] with a token axis (S = 1..8: speculative decoding).
        v: [N, HV, 128] (or [N, S, HV, 128]) bf16; HV is a multiple of H (GVA: q, k head h serves
            value heads h * HV/H .. (h + 1) * HV/H - 1).
        g: [N, HV, 128] (or [N, S, HV, 128]) bf16, the raw gate input.
        beta: [N, HV] (or [N, S, HV]) bf16 logits.
        A_log: [HV] fp32. dt_bias: [HV, 128] fp32.
        lower_bound: float in [-5, 0). scale: positive float, default 1/sqrt(128).
        state_pool: [P, HV, 128, 128] fp32 or bf16, (V, K) order: the layout of kda_prefill's
            initial_state / final_state. Row state_indices[n] is read and written in place.
        state_indices: [N] int64 (int32 is converted to an int64 copy first). -1 pads a batch:
            that sequence's o is zero and no pool row is touched. The non-negative entries must
            be distinct rows of the pool; validate="full" checks it.
        fast_math: bool; True uses ex2.approx, a tanh.approx sigmoid and rsqrt.approx.
        validate: "fast" (shapes, dtypes, strides, devices, no overlap; reads no tensor contents,
            never synchronizes, safe under CUDA-graph capture) or "full" (also copies state_indices
            to the host and checks them; synchronizes the current stream).
        out: optional o in the caller's rank, checked like an input and written in place.

    Returns:
        o: [N, HV, 128] bf16 ([N, S, HV, 128] with a token axis), the outputs after each token.

    Raises:
        TypeError, ValueError: one line naming the argument, the expected and the given value.
        RuntimeError: an input requires grad under grad mode (there is no backward).
        kda_tile.gate.UnverifiedBuildError: the build has no proved record in the manifest.

    Example:
        o = kda_tile.kda_decode(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, state_pool=pool,
                                state_indices=slots)   # pool rows slots[n] advanced by one token
    """
    _check_flags(fast_math, validate)
    if torch.is_grad_enabled():
        _no_grad_inputs(_TENSOR_ARGS, (q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices),
                        "kda_decode has no backward")
    single, (q, k, v, g, beta), o = _with_token_axis(q, k, v, g, beta, out)
    state_indices = _indices(state_indices)
    entry = _entry(state_pool, fast_math)
    args = (q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices, lower_bound, scale)
    try:
        if o is None and validate == "fast":
            r = (entry._fast or entry.fast)(*args) if hasattr(entry, "fast") else entry(*args)
        else:
            r = entry(*args, o=o, validate=validate)
    except (TypeError, ValueError) as e:
        raise _caller_names(e, single, out is not None) from None
    except RuntimeError:
        _device_types(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, state_pool=state_pool,
                      state_indices=state_indices, out=out)
        raise
    if out is not None:
        return out
    return r.squeeze(1) if single else r


def check_decode_inputs(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None, state_pool,
                        state_indices, fast_math=False, validate="fast", out=None, device=None):
    """Runs every check kda_decode runs, launching nothing: the release gate, then the generated
    entry's argument checks (validate="full": the contents of state_indices too). `device` names
    the device type the tensors must share (default cuda), so the rules run on CPU tensors.
    Returns the shape variables and scalars the entry read."""
    _check_flags(fast_math, validate)
    single, (q, k, v, g, beta), o = _with_token_axis(q, k, v, g, beta, out)
    state_indices = _indices(state_indices)
    kw = _expect_device(device)
    entry = _gated_entry(_build_for(state_pool, fast_math))
    try:
        return entry.validate_only(q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices, lower_bound, scale,
                                   o=o, validate=validate, **kw)
    except (TypeError, ValueError) as e:
        raise _caller_names(e, single, out is not None) from None


__all__ = ["kda_decode", "check_decode_inputs", "select_build"]
