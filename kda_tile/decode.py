"""kda_decode: S = 1..8 tokens for each of N sequences, each updating its own row of a state
pool in place (one kernel launch; kda_kernels/decode.py)."""
import torch

from kda_kernels import registry

from .api import _device_types, _expect_device, _gated_entry, _may_require_grad, _no_grad_inputs, _require_bool

_STATE_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16"}
_TENSOR_ARGS = ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "state_pool")  # (integer indices never require grad)
# (name, rank without the token axis, labels) of the token inputs
_ONE_TOKEN = (("k", 3, "[N, H, K]"), ("v", 3, "[N, HV, V]"), ("g", 3, "[N, HV, K]"), ("beta", 2, "[N, HV]"))

# (state_pool dtype, fast_math, token axis) -> the entry (its .fast: default validation, fresh o)
_ENTRIES: dict = {}


def select_build(*, state_dtype: str, fast_math: bool, token_axis: bool = True):
    return registry.find("decode", state_dtype=state_dtype, fast_math=fast_math, token_axis=token_axis,
                         block_v=registry.decode_block_v(state_dtype, token_axis))


def _build_for(state_pool, fast_math, token_axis):
    if not isinstance(state_pool, torch.Tensor):
        raise TypeError(f"state_pool: expected a torch.Tensor, got {type(state_pool).__name__}")
    if state_pool.dtype not in _STATE_DTYPES:
        raise TypeError(f"state_pool: expected dtype float32 or bfloat16, got {str(state_pool.dtype)[6:]}")
    return select_build(state_dtype=_STATE_DTYPES[state_pool.dtype], fast_math=fast_math, token_axis=token_axis)


def _entry(state_pool, fast_math, token_axis):
    try:
        return _ENTRIES[state_pool.dtype, fast_math, token_axis]
    except (KeyError, AttributeError):
        entry = _gated_entry(_build_for(state_pool, fast_math, token_axis))
        _ENTRIES[state_pool.dtype, fast_math, token_axis] = entry
        return entry


def _one_token(q):
    """q is [N, H, K]: the one-token builds take the token inputs as they are."""
    return isinstance(q, torch.Tensor) and q.dim() == 3


def _one_token_ranks(k, v, g, beta, out):
    """The one-token rank rules in the caller's terms (the entry names a wrong rank without them)."""
    for (name, rank, labels), t in zip(_ONE_TOKEN, (k, v, g, beta)):
        if isinstance(t, torch.Tensor) and t.dim() != rank:
            raise ValueError(f"{name}: expected {rank} dimensions {labels} (q is [N, H, K]: one token per "
                             f"sequence), got {t.dim()}")
    if isinstance(out, torch.Tensor) and out.dim() != 3:
        raise ValueError(f"out: expected 3 dimensions [N, HV, V] (q is [N, H, K]: one token per sequence), "
                         f"got {out.dim()}")


def _indices(state_indices):
    """int64 as it is; int32 as an int64 copy (one small elementwise kernel, captured like any
    other in a CUDA graph). Never reinterpreted."""
    if isinstance(state_indices, torch.Tensor) and state_indices.dtype != torch.int64:
        if state_indices.dtype != torch.int32:
            raise TypeError(f"state_indices: expected dtype int64 or int32, got {str(state_indices.dtype)[6:]}")
        return state_indices.to(torch.int64)
    return state_indices


def _caller_error(e: Exception, q, k, v, g, beta, out) -> Exception:
    """The entry's argument error in the caller's terms: a one-token call's wrong rank as the
    one-token rule (raised here), and the entry's output o as `out`."""
    if _one_token(q):
        _one_token_ranks(k, v, g, beta, out)
    msg = str(e)
    if out is not None and (msg.startswith("o: ") or msg.startswith("o.")):
        return type(e)("out" + msg[1:])
    return e


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
    if torch.is_grad_enabled() and _may_require_grad(q, k, v, g, beta, A_log, dt_bias, state_pool):
        _no_grad_inputs(_TENSOR_ARGS, (q, k, v, g, beta, A_log, dt_bias, state_pool), "kda_decode has no backward")
    state_indices = _indices(state_indices)
    entry = _entry(state_pool, fast_math, not _one_token(q))
    args = (q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices, lower_bound, scale)
    try:
        if out is None and validate == "fast":
            return (entry._fast or entry.fast)(*args) if hasattr(entry, "fast") else entry(*args)
        entry(*args, o=out, validate=validate)
        return out
    except (TypeError, ValueError) as e:
        raise _caller_error(e, q, k, v, g, beta, out) from None
    except RuntimeError:
        _device_types(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, state_pool=state_pool,
                      state_indices=state_indices, out=out)
        raise


def check_decode_inputs(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None, state_pool,
                        state_indices, fast_math=False, validate="fast", out=None, device=None):
    """Runs every check kda_decode runs, launching nothing: the release gate, then the generated
    entry's argument checks (validate="full": the contents of state_indices too). `device` names
    the device type the tensors must share (default cuda), so the rules run on CPU tensors.
    Returns the shape variables and scalars the entry read."""
    _check_flags(fast_math, validate)
    state_indices = _indices(state_indices)
    kw = _expect_device(device)
    entry = _entry(state_pool, fast_math, not _one_token(q))
    try:
        return entry.validate_only(q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices, lower_bound, scale,
                                   o=out, validate=validate, **kw)
    except (TypeError, ValueError) as e:
        raise _caller_error(e, q, k, v, g, beta, out) from None


__all__ = ["kda_decode", "check_decode_inputs", "select_build"]
