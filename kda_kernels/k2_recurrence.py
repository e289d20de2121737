"""K2, the chunk recurrence, in the WY form with the state in registers.

One program per (block of 64 x `consumers` value rows, value head, sequence) walks the chunks
of its sequence in order. Each consumer warpgroup holds 64 rows of St = S^T [V, K] (the
"state_v_first" layout of initial_state/final_state) as an fp32 register fragment. With the
workspace written by K1 (Wk = A diag(beta) kd, qd, kr [C, K]; U0 = A diag(beta) v [C, V];
Mqk [C, C]; gC [K]), per chunk:

    Sh   = fp16(St)                         (the A operand of wgmma, from registers)
    Ut   = U0^T - Sh Wk^T                   (V x C; = (A diag(beta) (v - kd S0))^T)
    Ot   = Sh qd^T + Ut Mqk^T               (the output, transposed)
    St   = St diag(gC) + Ut kr

so the chain per chunk is two dependent wgmma groups. A loading warpgroup fills a ring of
`stages` slots by TMA; the roles meet only at the ring's mbarriers, with no CTA-wide barrier
per chunk.
"""
import tilelang.language as T

from . import _math, _tir
from .configs import CHUNK, K2Config  # noqa: F401  (re-exported)

WARPGROUP = 128


def wy_chain_step(BV, K, C, op):
    """One chunk of the chain for a warpgroup's BV rows of St, from ring slot s (K2's consumers
    and kda_kernels/fused.py's); U0's rows start at column u0_col of its slot."""
    f32 = "float32"

    @T.macro
    def step(s, u0_col, St, Sh, WO, Oa, Uh, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r):
        T.copy(St, Sh)
        T.wgmma_gemm(Sh, Wk_r[s, :, :], WO, transpose_B=True, clear_accum=True)
        T.wgmma_gemm(Sh, qd_r[s, :, :], Oa, transpose_B=True, clear_accum=True)
        T.wait_wgmma(1)
        # after the wait: before it, ptxas injects a full wait (C7517) for St
        for j, d in T.Parallel(BV, K):
            St[j, d] = St[j, d] * gC_r[s, d]
        for j, r in T.Parallel(BV, C):
            Uh[j, r] = T.Cast(op, T.Cast(f32, U0_r[s, r, u0_col + j]) - WO[j, r])
        T.wgmma_gemm(Uh, kr_r[s, :, :], St)
        T.wgmma_gemm(Uh, Mqk_r[s, :, :], Oa, transpose_B=True)
        T.wait_wgmma(0)
    return step


def build_k2(cfg: K2Config):
    K, V, C = cfg.head_dim, cfg.value_dim, CHUNK
    NW = cfg.consumers
    BV = 64
    BP = BV * NW
    S = cfg.stages
    assert V % BP == 0 and NW in (1, 2)
    f32, op, bf = "float32", cfg.ws_dtype, cfg.in_dtype
    creg, preg = cfg.regs
    launch = 65536 // (cfg.threads * max(cfg.min_blocks, 1)) // 8 * 8
    if NW * creg + preg > (NW + 1) * launch:
        raise ValueError(f"{cfg.name}: {NW} x {creg} + {preg} registers a thread asked for; "
                         f"the launch provides {NW + 1} x {launch}")

    B = T.dynamic("B")
    Tn = T.dynamic("T")
    HV = T.dynamic("HV")
    NC = T.dynamic("NC")
    N1 = T.dynamic("N1")
    NS = N1 - 1 if cfg.varlen else B
    h0_dtype = cfg.initial_state or f32
    ht_dtype = cfg.final_state_dtype or f32
    step = wy_chain_step(BV, K, C, op)

    @T.macro
    def consumer(w, St, Sh, WO, Oa, Uh, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r, full, empty,
                 h0, o, ht, b, n, hv, vb, bos, seqlen, nch):
        T.set_max_nreg(creg, 1)
        v0 = vb * BP + w * BV
        if cfg.initial_state is not None:
            T.copy(h0[n, hv, v0:v0 + BV, :], St)
        else:
            T.clear(St)
        for c in T.serial(nch):
            s = c % S
            T.barrier_wait(full[s], (c // S) % 2)
            step(s, w * BV, St, Sh, WO, Oa, Uh, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r)
            T.barrier_arrive(empty[s])
            if cfg.probe != "no_store":
                for j, r in T.Parallel(BV, C):
                    if c * C + r < seqlen:
                        o[b, bos + c * C + r, hv, v0 + j] = T.Cast(bf, Oa[j, r])
        if cfg.final_state:
            T.copy(St, ht[n, hv, v0:v0 + BV, :])

    @T.macro
    def loader(tx, Wk, qd, kr, U0, Mqk, gC, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r, full, empty, hv, vb, slot0, nch):
        T.set_max_nreg(preg, 0)
        if tx - NW * WARPGROUP < 32:
            for c in T.serial(nch):
                s = c % S
                T.barrier_wait(empty[s], (c // S + 1) % 2)
                row0 = (slot0 + c) * C
                T.tma_copy(Wk[hv, row0:row0 + C, :], Wk_r[s, :, :], barrier=full[s])
                T.tma_copy(qd[hv, row0:row0 + C, :], qd_r[s, :, :], barrier=full[s])
                T.tma_copy(kr[hv, row0:row0 + C, :], kr_r[s, :, :], barrier=full[s])
                T.tma_copy(U0[hv, row0:row0 + C, vb * BP:(vb + 1) * BP], U0_r[s, :, :], barrier=full[s])
                T.tma_copy(Mqk[hv, row0:row0 + C, :], Mqk_r[s, :, :], barrier=full[s])
                T.tma_copy(gC[hv, slot0 + c, :], gC_r[s, :], barrier=full[s])
                T.barrier_arrive(full[s])

    @T.macro
    def _body(Wk, qd, kr, U0, Mqk, gC, cu_seqlens, h0, o, ht):
        # The sequence is grid x (up to 2^31 - 1; y and z stop at 65535), and by = hv * (V / BP) + vb.
        with T.Kernel(NS, HV * (V // BP), threads=cfg.threads) as (n, by):
            hv = by // (V // BP)
            vb = by % (V // BP)
            Wk_r = T.alloc_shared((S, C, K), op)
            qd_r = T.alloc_shared((S, C, K), op)
            kr_r = T.alloc_shared((S, C, K), op)
            U0_r = T.alloc_shared((S, C, BP), op)
            Mqk_r = T.alloc_shared((S, C, C), op)
            gC_r = T.alloc_shared((S, K), f32)
            full = T.alloc_barrier(arrive_count=[32] * S)
            empty = T.alloc_barrier(arrive_count=[NW * WARPGROUP] * S)

            frags = [(T.alloc_fragment((BV, K), f32), T.alloc_fragment((BV, K), op), T.alloc_fragment((BV, C), f32),
                      T.alloc_fragment((BV, C), f32), T.alloc_fragment((BV, C), op)) for _ in range(NW)]

            if cfg.min_blocks:
                T.annotate_min_blocks_per_sm(cfg.min_blocks)

            bos = T.alloc_var("int32", init=0)
            seqlen = T.alloc_var("int32", init=0)
            slot0 = T.alloc_var("int32", init=0)
            if cfg.varlen:
                # Clamped as in K1, so that any cu_seqlens contents stay inside the buffers;
                # the sequence's first chunk slot is bos // C + n (see K1).
                bos = _math.token_index(cu_seqlens[n], Tn)
                seqlen = T.max(_math.token_index(cu_seqlens[n + 1], Tn), bos) - bos
                slot0 = bos // C + n
            else:
                seqlen = Tn
                slot0 = n * T.ceildiv(Tn, C)
            slot0 = T.max(slot0, 0)
            nch = T.max(T.min(T.ceildiv(seqlen, C), NC - slot0), 0)
            b = 0 if cfg.varlen else n

            ring = (Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r)
            tx = T.get_thread_binding()
            args = (*ring, full, empty, h0, o, ht, b, n, hv, vb, bos, seqlen, nch)
            if tx < WARPGROUP:
                consumer(0, *frags[0], *args)
            elif NW == 2 and tx < 2 * WARPGROUP:
                consumer(1, *frags[-1], *args)
            else:
                loader(tx, Wk, qd, kr, U0, Mqk, gC, *ring, full, empty, hv, vb, slot0, nch)

    # A fresh T.Tensor per parameter: parameters annotated with one shared T.Tensor object become
    # one buffer (TileLang 0.1.x; `verify` checks it: model.params).
    ws = dict(
        Wk=T.Tensor((HV, NC * C, K), op),
        qd=T.Tensor((HV, NC * C, K), op),
        kr=T.Tensor((HV, NC * C, K), op),
        U0=T.Tensor((HV, NC * C, V), op),
        Mqk=T.Tensor((HV, NC * C, C), op),
        gC=T.Tensor((HV, NC, K), f32),
    )
    o_t = T.Tensor((B, Tn, HV, V), bf)
    h0_t = T.Tensor((NS, HV, V, K), h0_dtype)
    ht_t = T.Tensor((NS, HV, V, K), ht_dtype)
    cu_t = T.Tensor((N1,), "int64")

    # One signature with every optional tensor; the absent ones are dropped (not null), so that
    # they stay out of the IR that `verify` and `host_codegen` read.
    @T.prim_func
    def k2_recurrence(Wk: ws["Wk"], qd: ws["qd"], kr: ws["kr"], U0: ws["U0"], Mqk: ws["Mqk"], gC: ws["gC"],
                      cu_seqlens: cu_t, h0: h0_t, o: o_t, ht: ht_t):
        _body(Wk, qd, kr, U0, Mqk, gC, cu_seqlens, h0, o, ht)

    absent = [name for name, present in (("cu_seqlens", cfg.varlen), ("h0", cfg.initial_state is not None),
                                         ("ht", cfg.final_state)) if not present]
    return _tir.drop_params(k2_recurrence, absent)
