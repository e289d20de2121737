"""Launch path through TileLang's own JIT kernels (its TVM-FFI host code), used when no
generated host entry is available. Allocates the K1->K2 workspace and the outputs."""
import functools
import os

import torch

from kda_kernels import registry

_TORCH_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@functools.lru_cache(maxsize=None)
def compiled(build: registry.Build):
    import tilelang
    return tilelang.compile(build.prim_func(), target=registry.TARGET, pass_configs=build.config.pass_configs())


def workspace_slots(B: int, T: int, n_seqs: int, varlen: bool, chunk: int = 16) -> int:
    return T // chunk + n_seqs if varlen else B * ((T + chunk - 1) // chunk)


def _buffers(k1, k2, q, v, cu_seqlens):
    c1, c2 = k1.config, k2.config
    B, T, _, K = q.shape
    HV, V = v.shape[2], v.shape[-1]
    n_seqs = cu_seqlens.shape[0] - 1 if c1.varlen else B
    C = c1.chunk
    NC = workspace_slots(B, T, n_seqs, c1.varlen, C)
    dev = q.device
    ws_dt, mat_dt = _TORCH_DTYPE[c1.ws_dtype], _TORCH_DTYPE[c1.mat_dtype]
    Wk = torch.empty(HV, NC * C, K, dtype=ws_dt, device=dev)
    ws = dict(Wk=Wk, qd=torch.empty_like(Wk), kr=torch.empty_like(Wk))
    if c1.ab_halves:  # a chunk's C rows of bf16(Ab), then C of bf16(Ab - hi)
        ws["Ab"] = torch.empty(HV, 2 * NC * C, C, dtype=torch.bfloat16, device=dev)
    elif c1.u0_in_k2:
        ws["Ab"] = torch.empty(HV, NC * C, C, dtype=mat_dt, device=dev)
    else:
        ws["U0"] = torch.empty(HV, NC * C, V, dtype=ws_dt, device=dev)
    ws.update(Mqk=torch.empty(HV, NC * C, C, dtype=mat_dt, device=dev),
              gC=torch.empty(HV, NC, K, dtype=torch.float32, device=dev))
    o = torch.empty(B, T, HV, V, dtype=v.dtype, device=dev)
    ht = None
    if c2.final_state:
        ht = torch.empty(n_seqs, HV, V, K, dtype=_TORCH_DTYPE[c2.final_state_dtype], device=dev)
    if os.environ.get("KDA_TILE_POISON") == "1":
        for t in list(ws.values()) + [o] + ([ht] if ht is not None else []):
            t.fill_(float("nan"))
    return ws, o, ht


@functools.lru_cache(maxsize=None)
def param_names(build: registry.Build) -> tuple:
    """The kernel's parameters in call order (tensors by buffer name, scalars by name)."""
    f = build.prim_func()
    return tuple(f.buffer_map[p].name if p in f.buffer_map else p.name for p in f.params)


def _args(k1, k2, q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale, ws, o, ht):
    """Each kernel's arguments, taken by its parameters' names."""
    named = dict(ws, q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, cu_seqlens=cu_seqlens,
                 lower_bound=float(lower_bound), scale=float(scale), h0=initial_state, o=o, ht=ht)
    return [named[n] for n in param_names(k1)], [named[n] for n in param_names(k2)]


def launch(k1: registry.Build, k2: registry.Build, q, k, v, g, beta, A_log, dt_bias, cu_seqlens,
           initial_state, lower_bound: float, scale: float):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    ws, o, ht = _buffers(k1, k2, q, v, cu_seqlens)
    a1, a2 = _args(k1, k2, q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale, ws, o, ht)
    compiled(k1)(*a1)
    compiled(k2)(*a2)
    return o, ht


def stage_callables(k1, k2, q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale):
    """(run K1, run K2) on preallocated buffers, for timing each stage alone."""
    ws, o, ht = _buffers(k1, k2, q, v, cu_seqlens)
    a1, a2 = _args(k1, k2, q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale, ws, o, ht)
    f1, f2 = compiled(k1), compiled(k2)
    f1(*a1)
    return (lambda: f1(*a1)), (lambda: f2(*a2))
