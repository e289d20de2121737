"""K2, the chunk recurrence.

One program per (block of `block_v` value columns, value head, sequence) walks the chunks of
its sequence in order. The state is kept transposed, St = S^T [V, K] (the "state_v_first"
layout of initial_state/final_state), as an fp32 register fragment. Per chunk, with the
workspace written by K1 (kd, qd, kr [C, K]; Ab = A diag(beta), Mqk [C, C]; gC [K]):

    Wt   = v^T - St kd^T                    (V x C)
    Ut   = Wt Ab^T                          (= (A diag(beta) (v - kd S0))^T)
    out^T = St qd^T + Ut Mqk^T
    St   = St diag(gC) + Ut kr

Columns of S evolve independently, so V splits across programs with no communication.
"""
import tilelang.language as T

from . import _math, _tir
from .configs import CHUNK, K2Config  # noqa: F401  (re-exported)


def build_k2(cfg: K2Config):
    K = cfg.head_dim
    V = cfg.value_dim
    C = CHUNK
    BV = cfg.block_v
    accum = "float32"
    assert V % BV == 0

    B = T.dynamic("B")
    Tn = T.dynamic("T")
    HV = T.dynamic("HV")  # value heads (= H without GVA): K2 never reads q or k
    NC = T.dynamic("NC")
    N1 = T.dynamic("N1")
    NS = N1 - 1 if cfg.varlen else B  # number of sequences: rows of the state tensors
    h0_dtype = cfg.initial_state or accum
    ht_dtype = cfg.final_state_dtype or accum

    @T.macro
    def _body(v, kd, qd, kr, Ab, Mqk, gC, cu_seqlens, h0, o, ht):
        # The sequence is grid x (up to 2^31 - 1; y and z stop at 65535), and by = hv * (V / BV) + bv.
        with T.Kernel(NS, HV * (V // BV), threads=cfg.threads) as (n, by):
            hv = by // (V // BV)
            bv = by % (V // BV)
            kd_s = T.alloc_shared((C, K), cfg.ws_dtype)
            qd_s = T.alloc_shared((C, K), cfg.ws_dtype)
            kr_s = T.alloc_shared((C, K), cfg.ws_dtype)
            Ab_s = T.alloc_shared((C, C), cfg.mat_dtype)
            Mqk_s = T.alloc_shared((C, C), cfg.mat_dtype)
            gC_s = T.alloc_shared((K,), accum)
            v_s = T.alloc_shared((C, BV), cfg.in_dtype)
            St_s = T.alloc_shared((BV, K), cfg.ws_dtype)
            Wt_s = T.alloc_shared((BV, C), cfg.mat_dtype)
            Ut_s = T.alloc_shared((BV, C), cfg.ws_dtype)
            o_s = T.alloc_shared((C, BV), cfg.in_dtype)

            St = T.alloc_fragment((BV, K), accum)
            Wt = T.alloc_fragment((BV, C), accum)
            Ut = T.alloc_fragment((BV, C), accum)
            Ot = T.alloc_fragment((BV, C), accum)

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
            n_chunks = T.max(T.min(T.ceildiv(seqlen, C), NC - slot0), 0)
            b = 0 if cfg.varlen else n

            if cfg.initial_state is not None:
                T.copy(h0[n, hv, bv * BV:(bv + 1) * BV, :], St)
            else:
                T.clear(St)

            for c in T.Pipelined(n_chunks, num_stages=cfg.num_stages):
                row0 = (slot0 + c) * C
                T.copy(kd[hv, row0:row0 + C, :], kd_s)
                T.copy(qd[hv, row0:row0 + C, :], qd_s)
                T.copy(kr[hv, row0:row0 + C, :], kr_s)
                T.copy(Ab[hv, row0:row0 + C, :], Ab_s)
                T.copy(Mqk[hv, row0:row0 + C, :], Mqk_s)
                T.copy(gC[hv, slot0 + c, :], gC_s)
                # Rows past the sequence end belong to the next sequence (or lie past T, where
                # the bulk copy fills zeros); they are masked where Wt is formed.
                T.copy(v[b, bos + c * C:bos + c * C + C, hv, bv * BV:(bv + 1) * BV], v_s)

                T.copy(St, St_s)
                T.gemm(St_s, kd_s, Wt, transpose_B=True, clear_accum=True)
                T.gemm(St_s, qd_s, Ot, transpose_B=True, clear_accum=True)
                for j, r in T.Parallel(BV, C):
                    Wt_s[j, r] = T.Cast(cfg.mat_dtype, T.if_then_else(
                        c * C + r < seqlen, T.Cast(accum, v_s[r, j]) - Wt[j, r], 0.0))
                T.gemm(Wt_s, Ab_s, Ut, transpose_B=True, clear_accum=True)
                T.copy(Ut, Ut_s)
                T.gemm(Ut_s, Mqk_s, Ot, transpose_B=True)
                for j, d in T.Parallel(BV, K):
                    St[j, d] = St[j, d] * gC_s[d]
                T.gemm(Ut_s, kr_s, St)

                for j, r in T.Parallel(BV, C):
                    o_s[r, j] = T.Cast(cfg.in_dtype, Ot[j, r])
                for r, j in T.Parallel(C, BV):
                    if c * C + r < seqlen:
                        o[b, bos + c * C + r, hv, bv * BV + j] = o_s[r, j]

            if cfg.final_state:
                T.copy(St, ht[n, hv, bv * BV:(bv + 1) * BV, :])

    ws = dict(
        kd=T.Tensor((HV, NC * C, K), cfg.ws_dtype),
        qd=T.Tensor((HV, NC * C, K), cfg.ws_dtype),
        kr=T.Tensor((HV, NC * C, K), cfg.ws_dtype),
        Ab=T.Tensor((HV, NC * C, C), cfg.mat_dtype),
        Mqk=T.Tensor((HV, NC * C, C), cfg.mat_dtype),
        gC=T.Tensor((HV, NC, K), accum),
    )
    v_t = T.Tensor((B, Tn, HV, V), cfg.in_dtype)
    o_t = T.Tensor((B, Tn, HV, V), cfg.in_dtype)
    h0_t = T.Tensor((NS, HV, V, K), h0_dtype)
    ht_t = T.Tensor((NS, HV, V, K), ht_dtype)
    cu_t = T.Tensor((N1,), "int64")

    # One signature with every optional tensor; the absent ones are dropped (not null), so that
    # they stay out of the IR that `verify` and `host_codegen` read.
    @T.prim_func
    def k2_recurrence(v: v_t, kd: ws["kd"], qd: ws["qd"], kr: ws["kr"], Ab: ws["Ab"], Mqk: ws["Mqk"], gC: ws["gC"],
                      cu_seqlens: cu_t, h0: h0_t, o: o_t, ht: ht_t):
        _body(v, kd, qd, kr, Ab, Mqk, gC, cu_seqlens, h0, o, ht)

    absent = [name for name, present in (("cu_seqlens", cfg.varlen), ("h0", cfg.initial_state is not None),
                                         ("ht", cfg.final_state)) if not present]
    return _tir.drop_params(k2_recurrence, absent)
