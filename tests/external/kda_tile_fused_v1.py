"""kda_tile's fused forward as first written (kda_tile/fused.py at commit 93a5466, "fused forward
v1"; main has since rewritten it, see kda_tile_fused.py), kept here frozen because its protocol
is the one the verifier first reported false findings on: three warpgroups of 128 threads, an
unrolled prologue `for x in unroll(3): if x < nch: tma_load(..., load_full[x])` over three raw
slots (slot index periodic in nothing: x itself), load_full with 32 arrivals plus TMA bytes, a
two-slot ring with ring_full (128 producer arrivals) and ring_empty (256: 128 from each consumer
branch), RS-wgmma chains on a register-resident state, named barriers and AllReduce in the
producer, setmaxnreg 184 / 184 / 136 (the launch provides 3 x 168). It ran correctly on the H200
(126 randomized runs against a float64 reference). Both configurations must be proved.

The kernel below is that commit's build function unchanged but for its imports and the module
docstring."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dataclasses import dataclass  # noqa: E402
from typing import Optional  # noqa: E402

import tilelang.language as T  # noqa: E402

from kda_kernels import _math, _tir  # noqa: E402

CHUNK = 16


@dataclass(frozen=True)
class FusedConfig:
    # variant
    varlen: bool = False
    fast_math: bool = False
    initial_state: Optional[str] = None  # None, "float32" or "bfloat16"
    final_state: bool = False            # its dtype follows initial_state (float32 without one)
    # tiling
    head_dim: int = 128
    value_dim: int = 128
    stages: int = 2
    raw_stages: int = 3   # q, k, g, v tiles in flight: loads run this many chunks ahead
    # setmaxnreg budgets. The three warpgroups share what the launch gave them, 168 registers a
    # thread (65536 / 384, in steps of 8): 2 x 184 + 136 = 3 x 168. Asking for more deadlocks.
    consumer_regs: int = 184
    producer_regs: int = 136
    # numerics
    in_dtype: str = "bfloat16"
    op_dtype: str = "float16"   # ring operands: Wk, qd, kr, U0, Mqk (|entries| <= 1, or scale with v)
    # verification
    bank_conflict_budget: int = 8
    # Measurement only, never released: "chain" skips the producer's work (the consumers run on
    # a zeroed ring), "producer" skips the consumers' chain.
    probe: str = ""

    @property
    def final_state_dtype(self) -> Optional[str]:
        if not self.final_state:
            return None
        return self.initial_state or "float32"

    @property
    def name(self) -> str:
        h0 = {None: "h0none", "float32": "h0f32", "bfloat16": "h0bf16"}[self.initial_state]
        ht = "ht" if self.final_state else "htnone"
        return ("fused_" + ("varlen" if self.varlen else "fixed") + f"_{h0}_{ht}"
                + ("_fast" if self.fast_math else "") + (f"_probe_{self.probe}" if self.probe else ""))

    def pass_configs(self) -> dict:
        return {}

    def derived_vars(self) -> dict[str, str]:
        return {}

    def scalar_preconditions(self) -> list[str]:
        return ["lower_bound >= -5.0", "lower_bound < 0.0", "scale > 0.0", "scale < 1e30"]

    def preconditions(self) -> list[str]:
        pre = ["B >= 1", "T >= 1", "H >= 1", "H <= 256", "B * T * H <= 2**31 // 128 - 1"]
        if self.varlen:
            pre += ["B == 1", "N1 >= 2", "N1 <= 2**20"]
        return pre


def build_fused(cfg: FusedConfig):
    K, V, C = cfg.head_dim, cfg.value_dim, CHUNK
    assert K == 128 and V == 128, "one producer thread per key channel, two 64-row consumers"
    S = cfg.stages
    launch_regs = 65536 // (3 * 128) // 8 * 8
    if 2 * cfg.consumer_regs + cfg.producer_regs > 3 * launch_regs:
        raise ValueError(f"{cfg.name}: setmaxnreg asks for 2 x {cfg.consumer_regs} + {cfg.producer_regs} registers a "
                         f"thread, more than the 3 x {launch_regs} the launch provides")
    R = cfg.raw_stages
    fast = cfg.fast_math
    f32, op, bf = "float32", cfg.op_dtype, cfg.in_dtype
    BV = 64
    P0 = 2 * 128  # first producer thread

    B = T.dynamic("B")
    Tn = T.dynamic("T")
    H = T.dynamic("H")
    N1 = T.dynamic("N1")
    NS = N1 - 1 if cfg.varlen else B
    h0_dtype = cfg.initial_state or f32
    ht_dtype = cfg.final_state_dtype or f32

    @T.macro
    def load(q, k, g, v, q_s, k_s, g_s, v_s, load_full, b, t, h, x):
        T.tma_copy(q[b, t:t + C, h, :], q_s[x, :, :], barrier=load_full[x])
        T.tma_copy(k[b, t:t + C, h, :], k_s[x, :, :], barrier=load_full[x])
        T.tma_copy(g[b, t:t + C, h, :], g_s[x, :, :], barrier=load_full[x])
        T.tma_copy(v[b, t:t + C, h, :], v_s[x, :, :], barrier=load_full[x])
        T.barrier_arrive(load_full[x])

    @T.macro
    def consumer(w, scale, St, Sh, WO, Oacc, Uh, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r, ring_full, ring_empty,
                 h0, o, ht, b, n, h, t0, seqlen, nch):
        T.set_max_nreg(cfg.consumer_regs, 1)
        if cfg.initial_state is not None:
            T.copy(h0[n, h, w * BV:(w + 1) * BV, :], St)
        else:
            T.clear(St)
        if cfg.probe == "producer":
            for c in T.serial(nch):
                T.barrier_wait(ring_full[c % S], (c // S) % 2)
                T.barrier_arrive(ring_empty[c % S])
        # (the probe keeps the chain in the IR, never run, so that its layouts are inferred)
        for c in T.serial(T.if_then_else(scale < 0.0, nch, 0) if cfg.probe == "producer" else nch):
            s = c % S
            T.barrier_wait(ring_full[s], (c // S) % 2)
            T.copy(St, Sh)
            T.wgmma_gemm(Sh, Wk_r[s, :, :], WO, transpose_B=True, clear_accum=True)
            T.wgmma_gemm(Sh, qd_r[s, :, :], Oacc, transpose_B=True, clear_accum=True)
            T.wait_wgmma(1)
            # after the wait: before it, ptxas injects a full wait (C7517) for St
            for j, d in T.Parallel(BV, K):
                St[j, d] = St[j, d] * gC_r[s, d]
            for j, r in T.Parallel(BV, C):
                Uh[j, r] = T.Cast(op, T.Cast(f32, U0_r[s, r, w * BV + j]) - WO[j, r])
            T.wgmma_gemm(Uh, kr_r[s, :, :], St)
            T.wgmma_gemm(Uh, Mqk_r[s, :, :], Oacc, transpose_B=True)
            T.wait_wgmma(0)
            T.barrier_arrive(ring_empty[s])
            for j, r in T.Parallel(BV, C):
                if c * C + r < seqlen:
                    o[b, t0 + c * C + r, h, w * BV + j] = T.Cast(bf, Oacc[j, r])
        if cfg.final_state:
            T.copy(St, ht[n, h, w * BV:(w + 1) * BV, :])

    @T.macro
    def body(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, h0, lower_bound, scale, o, ht):
        with T.Kernel(H, NS, threads=3 * 128) as (h, n):
            # raw inputs of the next chunk, through TMA
            q_s = T.alloc_shared((R, C, K), bf)
            k_s = T.alloc_shared((R, C, K), bf)
            g_s = T.alloc_shared((R, C, K), bf)
            v_s = T.alloc_shared((R, C, V), bf)
            # producer scratch
            rq_s = T.alloc_shared((C,), f32)
            rk_s = T.alloc_shared((C,), f32)
            beta_s = T.alloc_shared((C,), f32)
            kq_b = T.alloc_shared((2 * C, K), bf)   # [kd; qd] for the L / Mqk product
            ki_b = T.alloc_shared((C, K), bf)
            L_s = T.alloc_shared((C, C), f32)
            # the ring the consumers read
            Wk_r = T.alloc_shared((S, C, K), op)
            qd_r = T.alloc_shared((S, C, K), op)
            kr_r = T.alloc_shared((S, C, K), op)
            U0_r = T.alloc_shared((S, C, V), op)
            Mqk_r = T.alloc_shared((S, C, C), op)
            gC_r = T.alloc_shared((S, K), f32)

            load_full = T.alloc_barrier(arrive_count=[32] * R)
            ring_full = T.alloc_barrier(arrive_count=[128] * S)
            ring_empty = T.alloc_barrier(arrive_count=[2 * 128] * S)

            sq = T.alloc_fragment((C, K), f32)
            nrm = T.alloc_fragment((C,), f32)
            LM = T.alloc_fragment((2 * C, C), f32)

            St0 = T.alloc_fragment((BV, K), f32)
            Sh0 = T.alloc_fragment((BV, K), op)
            WO0 = T.alloc_fragment((BV, C), f32)
            Oa0 = T.alloc_fragment((BV, C), f32)
            Uh0 = T.alloc_fragment((BV, C), op)
            St1 = T.alloc_fragment((BV, K), f32)
            Sh1 = T.alloc_fragment((BV, K), op)
            WO1 = T.alloc_fragment((BV, C), f32)
            Oa1 = T.alloc_fragment((BV, C), f32)
            Uh1 = T.alloc_fragment((BV, C), op)
            G = T.alloc_local((C,), f32)
            kd = T.alloc_local((C,), f32)
            vv = T.alloc_local((C,), f32)

            T.import_source(_math.ACCURATE_SOURCE + (_math.FAST_SOURCE if fast else ""))

            # This program's sequence: tokens [t0, t0 + seqlen) of batch row b. Clamped so that
            # any cu_seqlens contents stay inside the buffers.
            t0 = T.alloc_var("int32", init=0)
            seqlen = T.alloc_var("int32", init=0)
            if cfg.varlen:
                t0 = T.max(T.min(T.Cast("int32", cu_seqlens[n]), Tn), 0)
                seqlen = T.max(T.min(T.Cast("int32", cu_seqlens[n + 1]), Tn), t0) - t0
            else:
                seqlen = Tn
            b = 0 if cfg.varlen else n
            nch = T.ceildiv(seqlen, C)

            tx = T.get_thread_binding()
            if tx < 128:
                consumer(0, scale, St0, Sh0, WO0, Oa0, Uh0, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r, ring_full, ring_empty,
                         h0, o, ht, b, n, h, t0, seqlen, nch)
            elif tx < P0:
                consumer(1, scale, St1, Sh1, WO1, Oa1, Uh1, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r, ring_full, ring_empty,
                         h0, o, ht, b, n, h, t0, seqlen, nch)
            else:
                T.set_max_nreg(cfg.producer_regs, 0)
                a_h = _math.exp(A_log[h], fast)
                d = tx - P0
                dtb = dt_bias[h, d]
                if tx < P0 + 32 and cfg.probe != "chain":
                    for i in T.unroll(R):
                        if i < nch:
                            load(q, k, g, v, q_s, k_s, g_s, v_s, load_full, b, t0 + i * C, h, i)
                if cfg.probe == "chain":
                    for i, e in T.Parallel(S * C, K):
                        Wk_r[i // C, i % C, e] = T.Cast(op, 0.0)
                        qd_r[i // C, i % C, e] = T.Cast(op, 0.0)
                        kr_r[i // C, i % C, e] = T.Cast(op, 0.0)
                        U0_r[i // C, i % C, e] = T.Cast(op, 0.0)
                    for i, e in T.Parallel(S * C, C):
                        Mqk_r[i // C, i % C, e] = T.Cast(op, 0.0)
                    for i, e in T.Parallel(S, K):
                        gC_r[i, e] = 1.0
                    T.fence_proxy_async()
                    for c in T.serial(nch):
                        T.barrier_wait(ring_empty[c % S], (c // S + 1) % 2)
                        T.barrier_arrive(ring_full[c % S])
                for c in T.serial(0 if cfg.probe == "chain" else nch):
                    s = c % S
                    x = c % R
                    tc = t0 + c * C
                    ln = T.min(seqlen - c * C, C)
                    T.barrier_wait(load_full[x], (c // R) % 2)
                    for r in T.Parallel(C):
                        beta_s[r] = T.if_then_else(
                            r < ln, _math.sigmoid_rcp(T.Cast(f32, beta[b, T.min(tc + r, Tn - 1), h]), fast), 0.0)
                    # row norms of q and k
                    for r, e in T.Parallel(C, K):
                        sq[r, e] = T.if_then_else(r < ln, T.Cast(f32, q_s[x, r, e]) * T.Cast(f32, q_s[x, r, e]), 0.0)
                    T.reduce_sum(sq, nrm, dim=1)
                    for r in T.Parallel(C):
                        rq_s[r] = _math.rsqrt(nrm[r] + 1e-6, fast) * scale
                    for r, e in T.Parallel(C, K):
                        sq[r, e] = T.if_then_else(r < ln, T.Cast(f32, k_s[x, r, e]) * T.Cast(f32, k_s[x, r, e]), 0.0)
                    T.reduce_sum(sq, nrm, dim=1)
                    for r in T.Parallel(C):
                        rk_s[r] = _math.rsqrt(nrm[r] + 1e-6, fast)
                    # the ring slot must be free before this chunk writes it
                    T.barrier_wait(ring_empty[s], (c // S + 1) % 2)
                    # One key channel per thread, in registers: gate, cumsum, decays. The raw slot
                    # is read for the last time here.
                    for r in T.unroll(C):
                        G[r] = T.if_then_else(
                            r < ln,
                            lower_bound * _math.LOG2E * _math.sigmoid_rcp(
                                a_h * (T.Cast(f32, g_s[x, r, d]) + dtb), fast),
                            0.0)
                    for r in T.unroll(1, C):
                        G[r] = G[r] + G[r - 1]
                    gc = _math.exp2(G[C - 1], fast)
                    gC_r[s, d] = gc
                    for r in T.unroll(C):
                        kn = T.if_then_else(r < ln, T.Cast(f32, k_s[x, r, d]) * rk_s[r], 0.0)
                        qn = T.if_then_else(r < ln, T.Cast(f32, q_s[x, r, d]) * rq_s[r], 0.0)
                        ep = _math.exp2(G[r], fast)
                        ki = kn * _math.exp2(-G[r], fast)
                        kq_b[r, d] = T.Cast(bf, kn * ep)
                        kq_b[C + r, d] = T.Cast(bf, qn * ep)
                        ki_b[r, d] = T.Cast(bf, ki)
                        qd_r[s, r, d] = T.Cast(op, qn * ep)
                        kr_r[s, r, d] = T.Cast(op, ki * gc)
                        kd[r] = kn * ep * beta_s[r]
                        vv[r] = T.if_then_else(r < ln, T.Cast(f32, v_s[x, r, d]), 0.0) * beta_s[r]
                    T.gemm(kq_b, ki_b, LM, transpose_B=True, clear_accum=True)
                    # every producer thread is past its last read of raw slot x: refill it
                    if tx < P0 + 32:
                        if c + R < nch:
                            load(q, k, g, v, q_s, k_s, g_s, v_s, load_full, b, tc + R * C, h, x)
                    for r, j in T.Parallel(2 * C, C):
                        if r < C:
                            L_s[r, j] = T.if_then_else(r > j, LM[r, j] * beta_s[r], 0.0)
                        else:
                            Mqk_r[s, r - C, j] = T.Cast(op, T.if_then_else(r - C >= j, LM[r, j], 0.0))
                    # Wk = (I + L)^-1 diag(beta) kd, U0 likewise for v: forward substitution
                    for r in T.unroll(1, C):
                        for j in T.unroll(C - 1):
                            if j < r:
                                kd[r] = kd[r] - L_s[r, j] * kd[j]
                                vv[r] = vv[r] - L_s[r, j] * vv[j]
                    for r in T.unroll(C):
                        Wk_r[s, r, d] = T.Cast(op, kd[r])
                        U0_r[s, r, d] = T.Cast(op, vv[r])
                    T.fence_proxy_async()
                    T.barrier_arrive(ring_full[s])

    @T.prim_func
    def fused_forward(q: T.Tensor((B, Tn, H, K), bf), k: T.Tensor((B, Tn, H, K), bf),
                      v: T.Tensor((B, Tn, H, V), bf), g: T.Tensor((B, Tn, H, K), bf),
                      beta: T.Tensor((B, Tn, H), bf), A_log: T.Tensor((H,), f32),
                      dt_bias: T.Tensor((H, K), f32), cu_seqlens: T.Tensor((N1,), "int64"),
                      h0: T.Tensor((NS, H, V, K), h0_dtype), lower_bound: T.float32, scale: T.float32,
                      o: T.Tensor((B, Tn, H, V), bf), ht: T.Tensor((NS, H, V, K), ht_dtype)):
        body(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, h0, lower_bound, scale, o, ht)

    absent = [name for name, present in (("cu_seqlens", cfg.varlen), ("h0", cfg.initial_state is not None),
                                         ("ht", cfg.final_state)) if not present]
    return _tir.drop_params(fused_forward, absent)


CFG = FusedConfig()
CFGV = FusedConfig(varlen=True, initial_state="float32", final_state=True)
SOURCE = {"fused_v1_fixed": "kda_tile/fused.py@93a5466", "fused_v1_varlen": "kda_tile/fused.py@93a5466"}
KERNELS = {"fused_v1_fixed": lambda: build_fused(CFG), "fused_v1_varlen": lambda: build_fused(CFGV)}
PRECONDITIONS = {"fused_v1_fixed": CFG.preconditions(), "fused_v1_varlen": CFGV.preconditions()}
BANK_BUDGET = {"fused_v1_fixed": 8, "fused_v1_varlen": 8}
MONOTONE = {"cu_seqlens": ("N1", "T")}
EXPECT = {"fused_v1_fixed": None, "fused_v1_varlen": None}
