"""kda_prefill as a torch custom op (`torch.ops.kda_tile.prefill`), for torch.compile.

Eager calls of `kda_tile.kda_prefill` go straight to the generated host entry (a few us of host
time); under torch.compile the same call is recorded as this op, whose fake implementation gives
the output shapes from the same rules. On CUDA the op runs kda_prefill; on the CPU it runs the
float64 reference (for tests and debugging; results in the same dtypes as the GPU path).
"""
from __future__ import annotations

from typing import Optional

import torch

__all__ = ["prefill"]


def _final_state_spec(q, v, initial_state, output_final_state, cu_seqlens):
    if not output_final_state:
        return (0,), torch.float32
    n = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else q.shape[0]
    dtype = initial_state.dtype if initial_state is not None else torch.float32
    return (n, v.shape[2], v.shape[-1], q.shape[-1]), dtype


@torch.library.custom_op("kda_tile::prefill", mutates_args=())
def prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor,
            A_log: torch.Tensor, dt_bias: torch.Tensor, lower_bound: float, scale: Optional[float],
            initial_state: Optional[torch.Tensor], output_final_state: bool, cu_seqlens: Optional[torch.Tensor],
            fast_math: bool, max_seqlen: Optional[int] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, final_state); final_state is an empty tensor when output_final_state is False."""
    from . import api
    o, ht = api.kda_prefill_eager(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                                  scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                                  cu_seqlens=cu_seqlens, fast_math=fast_math, max_seqlen=max_seqlen)
    return o, (ht if ht is not None else torch.empty(0, device=o.device))


@prefill.register_fake
def _(q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state, cu_seqlens,
      fast_math, max_seqlen=None):
    shape, dtype = _final_state_spec(q, v, initial_state, output_final_state, cu_seqlens)
    return q.new_empty(v.shape, dtype=v.dtype), q.new_empty(shape, dtype=dtype)


@prefill.register_kernel("cpu")
def _(q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state, cu_seqlens,
      fast_math, max_seqlen=None):
    from kda_kernels import reference
    o, ht = reference.kda_recurrent(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                                    scale=scale, initial_state=initial_state,
                                    output_final_state=output_final_state, cu_seqlens=cu_seqlens)
    shape, dtype = _final_state_spec(q, v, initial_state, output_final_state, cu_seqlens)
    return o.to(v.dtype), (ht.to(dtype) if ht is not None else q.new_empty(shape, dtype=dtype))
