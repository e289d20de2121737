"""kda_tile as a backend of fla's `chunk_kda` (flash-linear-attention >= 0.6).

    pip install "kda_tile[fla]"
    import kda_tile.fla                     # registers the backend; KDA_TILE_FLA=0 turns it off
    o, ht = fla.ops.kda.chunk_kda(...)      # as before: eligible calls run on kda_tile

The backend takes exactly the calls kda_tile computes identically and declines every other one
with a reason (fla then runs its next backend or its own kernels):
- no gradient: no input requires grad while grad mode is on (kda_tile has no backward);
- q, k, v, g, beta in bf16 on an sm_90 GPU, K = V = 128; GVA (HV value heads, a multiple of the
  H q/k heads) as in fla;
- use_gate_in_kernel, use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel and safe_gate all on,
  allow_neg_eigval off, A_log and dt_bias given, -5 <= lower_bound < 0;
- no context parallelism, no intermediate states, no graph-mode padding;
- a bf16 initial_state only without output_final_state (fla returns an fp32 final state).

Both state layouts are accepted. With state_v_first=True the state passes through untouched; with
the default [N, H, K, V] layout the initial state is transposed into a copy (kda_tile's kernels
read [N, H, V, K]) and the final state comes back as a transposed view, without a copy.
"""
from __future__ import annotations

import os

import torch

try:
    from fla.backends import BaseBackend, register
    from fla.ops.kda.chunk import chunk_kda
except ImportError as e:  # pragma: no cover - exercised only without fla
    raise ImportError("kda_tile.fla needs flash-linear-attention >= 0.6: pip install 'kda_tile[fla]'") from e

_ACCEPTED_KWARGS = {"A_log", "dt_bias"}
_FLAG_ARGS = ("use_qk_l2norm_in_kernel", "use_gate_in_kernel", "use_beta_sigmoid_in_kernel", "safe_gate")


def _on_hopper(t: torch.Tensor) -> bool:
    return t.is_cuda and torch.cuda.get_device_capability(t.device) == (9, 0)


def check(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
          use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, use_beta_sigmoid_in_kernel=False,
          allow_neg_eigval=False, safe_gate=False, lower_bound=None, disable_recompute=False,
          return_intermediate_states=False, state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
          cp_context=None, use_graph=False, max_num_seqs=None, **kwargs) -> tuple[bool, str | None]:
    """fla's verifier contract: (True, None) when kda_tile computes this call, else (False, why)."""
    flags = dict(use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, use_gate_in_kernel=use_gate_in_kernel,
                 use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, safe_gate=safe_gate)
    for name in _FLAG_ARGS:
        if flags[name] is not True:
            return False, f"kda_tile needs {name}=True"
    if allow_neg_eigval:
        return False, "kda_tile has no allow_neg_eigval"
    unknown = set(kwargs) - _ACCEPTED_KWARGS
    if unknown:
        return False, f"kda_tile does not take {sorted(unknown)}"
    A_log, dt_bias = kwargs.get("A_log"), kwargs.get("dt_bias")
    if A_log is None or dt_bias is None:
        return False, "kda_tile needs A_log and dt_bias"
    if lower_bound is None or not -5.0 <= float(lower_bound) < 0.0:
        return False, f"kda_tile needs -5 <= lower_bound < 0, got {lower_bound}"
    if cp_context is not None or return_intermediate_states or use_graph:
        return False, "kda_tile has no context parallelism, intermediate states or graph-mode padding"
    tensors = [q, k, v, g, beta, A_log, dt_bias] + ([initial_state] if initial_state is not None else [])
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return False, "kda_tile has no backward (an input requires grad)"
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        if t.dtype != torch.bfloat16:
            return False, f"kda_tile needs bf16 {name}, got {t.dtype}"
    if q.dim() != 4 or q.shape[-1] != 128 or v.shape[-1] != 128:
        return False, f"kda_tile needs K = V = 128, got q {tuple(q.shape)}, v {tuple(v.shape)}"
    if v.dim() != 4 or v.shape[2] % q.shape[2] != 0:
        return False, f"kda_tile needs HV a multiple of H, got q {tuple(q.shape)}, v {tuple(v.shape)}"
    if initial_state is not None and initial_state.dtype not in (torch.float32, torch.bfloat16):
        return False, f"kda_tile needs an fp32 or bf16 initial_state, got {initial_state.dtype}"
    if initial_state is not None and initial_state.dtype == torch.bfloat16 and output_final_state:
        return False, "fla returns an fp32 final state; kda_tile's follows a bf16 initial_state"
    if cu_seqlens is not None and q.shape[0] != 1:
        return False, f"cu_seqlens needs B == 1, got B = {q.shape[0]}"
    if not _on_hopper(q):
        return False, f"kda_tile runs on sm_90 GPUs; q is on {q.device}"
    return True, None


def run(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
        use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, use_beta_sigmoid_in_kernel=False,
        allow_neg_eigval=False, safe_gate=False, lower_bound=None, disable_recompute=False,
        return_intermediate_states=False, state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
        cp_context=None, use_graph=False, max_num_seqs=None, *, A_log=None, dt_bias=None, **kwargs):
    """The call, converted to kda_prefill's layouts."""
    from . import api
    HV = v.shape[2]
    dt_bias = dt_bias.reshape(HV, -1)  # fla passes [HV * K]: a view
    A_log, dt_bias = A_log.float(), dt_bias.float()  # exact widening when given in bf16
    if initial_state is not None and not state_v_first:
        initial_state = initial_state.transpose(-1, -2).contiguous()
    if cu_seqlens is not None and cu_seqlens.dtype != torch.int64:
        cu_seqlens = cu_seqlens.to(torch.int64)
    max_seqlen = None
    if cu_seqlens is not None and isinstance(cu_seqlens_cpu, torch.Tensor) and cu_seqlens_cpu.numel() >= 2:
        # fla's host copy: the longest sequence without a sync (kda_prefill's short form)
        max_seqlen = max(int((cu_seqlens_cpu[1:] - cu_seqlens_cpu[:-1]).max()), 0)
    o, ht = api.kda_prefill(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=float(lower_bound),
                            scale=scale, initial_state=initial_state, output_final_state=bool(output_final_state),
                            cu_seqlens=cu_seqlens, max_seqlen=max_seqlen)
    if ht is not None and not state_v_first:
        ht = ht.transpose(-1, -2)
    return o, ht


@register(chunk_kda)
class KdaTileBackend(BaseBackend):
    """kda_tile's forward for fla.ops.kda.chunk_kda; KDA_TILE_FLA=0 turns it off."""

    backend_type = "kda_tile"
    package_name = "kda_tile"
    env_var = "KDA_TILE_FLA"
    default_enable = True
    priority = 2  # ahead of fla's own backends: importing kda_tile.fla asks for it

    def chunk_kda_verifier(self, *args, **kwargs):
        return check(*args, **kwargs)

    def chunk_kda(self, *args, **kwargs):
        return run(*args, **kwargs)


def enabled() -> bool:
    return os.environ.get(KdaTileBackend.env_var, "1") != "0"
