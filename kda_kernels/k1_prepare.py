"""K1, the token-parallel prepare kernel.

One program handles `chunks_per_cta` chunk slots of one value head hv (GVA: HV value heads, each
group of HV / H sharing the q, k of head hv // (HV / H); HV = H without it). For each chunk of C=16
tokens it computes, with G the per-channel cumulative base-2 log-decay inside the chunk:

    kd = k 2^G        qd = scale q 2^G        kr = k 2^(G_C - G)       gC = 2^G_C
    L  = strictly_lower(kd ki^T) * beta_row,   ki = k 2^-G
    A  = (I + L)^-1                             (forward substitution in fp32)
    Ab = A diag(beta)
    Wk = Ab kd        U0 = Ab v                 (the WY form: K2's chain is U = U0 - Wk S0)
    Mqk = lower_incl_diag(qd ki^T)

and writes Wk, qd, kr, U0, Mqk, gC to the workspace read by K2. Chunk j of sequence n goes to
slot b * ceil(T / 16) + j in a fixed batch and to slot bos_n // 16 + n + j in a varlen one, so
that K2 finds a sequence's first slot in O(1) and K1 a slot's sequence by binary search.
Slots that hold no chunk (at most one per sequence, plus the tail) write nothing.

q, k and g reach shared memory by cp.async, all copies in flight at once, and v the same way
behind the L and Mqk work; the row norms come from 16-byte reads and lane shuffles. Then a thread
owns two adjacent (chunk, channel) columns: it keeps the gate's cumsum G in registers and forms
every output of its columns there, stored as pairs, so the per-element work needs no barrier.
Accurate math runs on the MUFU unit: 2^x = ex2.approx, sigmoid = rcp.approx(1 + ex2.approx(-x
log2 e)) (relative errors ~2^-22; the ftz forms by default). Wk and U0 are two small mma products
of the block-diagonal Ab.
Variants measured on the H200 are in bench/NOTES.md (sessions 7 and 8). K1Config.short_out is the
whole forward of sequences of one chunk: o = Mqk (Ab v) (and S^T = U0^T kr) in place of the
workspace (session 32, registry stage k1_short); with short_chunks 4 it runs up to four chunks of a
sequence one after another (the pairwise form, sessions 33-34).
"""

import tilelang.language as T

from . import _math, _tir
from .configs import CHUNK, SEARCH_STEPS, K1Config  # noqa: F401  (re-exported)

NAN = T.float32(float("nan"))


def build_k1(cfg: K1Config):
    K = cfg.head_dim
    V = K
    C = cfg.chunk
    CPB = cfg.chunks_per_cta
    # A 32-token chunk: two threads a column pair, one for each 16-row half (SUB rows)
    SUB = CHUNK
    NSUB = C // SUB
    assert C in (CHUNK, 2 * CHUNK) and (NSUB == 1 or (CPB == 1 and cfg.threads == NSUB * K // 2)), \
        f"{cfg.name}: chunk {C} takes one chunk a program and {NSUB * K // 2} threads"
    R = C * CPB
    LPR = K // 8                 # lanes a row in the loads (16-byte vectors)
    RPP = cfg.threads // LPR     # rows a pass
    assert LPR in (1, 2, 4, 8, 16, 32) and cfg.threads % LPR == 0 and R % RPP == 0 and V == K
    NPASS = R // RPP             # load passes a thread
    fast = cfg.fast_math
    nr = cfg.rsqrt_nr and not fast
    accum = "float32"
    skip = set(cfg.probe.split("+")) - {""}
    assert not cfg.skip_holes or (cfg.varlen and CPB == 1), "skip_holes: varlen, one chunk a program"
    assert cfg.mqk_split in ("", "k", "qk"), cfg.mqk_split
    assert not cfg.ab_halves or (cfg.u0_in_k2 and not cfg.short_out), f"{cfg.name}: ab_halves is u0_in_k2's workspace"
    split_k, split_q = cfg.mqk_split != "", cfg.mqk_split == "qk"
    u0k2 = cfg.u0_in_k2
    short = cfg.short_out
    short_ht = short and cfg.short_ht
    NCH = cfg.short_chunks
    multi = short and NCH > 1
    assert NCH == 1 or (short and NCH in (2, 4)), f"{cfg.name}: short_chunks {NCH} takes short_out, 2 or 4"
    NR = NCH * CHUNK             # the pairwise form's rows of krs and U
    # ... all of them (the last chunk's only matter to the final state), or with short_lean_rows
    # and no final state all but the last chunk's: 57 KB of shared memory against 65, a fourth
    # program an SM
    lean = multi and cfg.short_lean_rows          # the barrier diet (below), with or without the state
    # last_kr_regs: the final state's last chunk kr in registers and its U in v_s, so lean rows too
    lkr = lean and short_ht and cfg.last_kr_regs
    assert not cfg.last_kr_regs or (lean and short_ht and cfg.threads == 128), \
        f"{cfg.name}: last_kr_regs takes the 128-thread lean pairwise form with the final state"
    lean_rows = lean and (not short_ht or lkr)
    NRB = NR - CHUNK if lean_rows else NR
    NDK = NR - 2 * CHUNK                          # rows a chunk's start decays (chunks 0 .. j - 2)
    # The pairwise form over 128 threads (session 36): two threads a column pair, one for each
    # 8-row half of the chunk (HR rows), so that a program runs 4 warps in the shared memory of 2.
    # Four warps cannot split a 16-row product's 16 or 48 columns, so k over q (the L and Mqk
    # operand) and kd over qd (the P and Q operand) are stacked: one 32-row product each.
    TPC = cfg.threads // (K // 2) if NSUB == 1 else 1
    HR = C // TPC
    stack = TPC == 2
    assert not cfg.next_early or multi, f"{cfg.name}: next_early takes the pairwise form"
    # ws_chunks: the workspace form walks NW slots a program, next chunk's copies early
    NW = cfg.ws_chunks
    wsm = NW > 1
    assert not wsm or (not short and not cfg.varlen and NSUB == 2 and CPB == 1 and cfg.lean_prologue
                       and cfg.early_loads and u0k2), f"{cfg.name}: ws_chunks takes the fixed 32-token workspace K1"
    ne = multi and cfg.next_early or wsm
    assert not cfg.col_quads or stack, f"{cfg.name}: col_quads takes the 128-thread pairwise form"
    HB = C // 2                  # K1Config.inv_blocks: the inverse's 8-row blocks
    if NSUB == 2:
        HB = SUB // 2            # ... of a 32-token chunk's 16-row diagonal blocks
    assert not cfg.inv_blocks or stack or NSUB == 2, \
        f"{cfg.name}: inv_blocks takes the 128-thread pairwise form or a 32-token chunk"
    KO, QO, DQO = (0, R, R) if stack else (0, 0, 0)    # rows of k, q in q_s and of qd in kdh_s
    assert TPC == 1 or (multi and TPC == 2 and cfg.mqk_diag), f"{cfg.name}: 128 threads at 16 tokens: the pairwise form's"
    assert not short or (CPB == 1 and C == CHUNK and not u0k2 and not split_k and cfg.lean_prologue
                         and not cfg.skip_holes), f"{cfg.name}: short_out's form"
    # Every program's one chunk holds tokens in a fixed batch, and in a varlen one that returns at
    # holes: a 32-token build then stores without guards (the grid keeps bc < NC), which leaves the
    # compiler the stores' addresses as offsets of one base. (16-token builds keep theirs.)
    unguarded = CPB == 1 and (not cfg.varlen or cfg.skip_holes) and NSUB == 2
    assert not (u0k2 and split_k), "u0_in_k2 with the fp16 Wk operand only"
    assert NSUB == 1 or not split_k, "a 32-token chunk takes Mqk from one bf16 product"
    # the row norms' lanes a row (K1Config.norm_lanes; the copies' LPR by default)
    NL = cfg.norm_lanes or LPR
    NRP = cfg.threads // NL      # rows a norm pass
    VPL = LPR // NL              # 16-byte vectors a lane
    XORS_NL = [NL >> j for j in range(1, NL.bit_length())]
    assert LPR % NL == 0 and cfg.threads % NL == 0 and R % NRP == 0, f"{cfg.name}: norm_lanes {NL}"

    def sigm(x, fast):
        if cfg.ftz and not fast:
            return T.call_extern("float32", "kda_sigmoid_rcp_ftz", x)
        return _math.sigmoid_rcp(x, fast)

    def gate_sigm(a_h, x, nb_e):
        """sigmoid(a_h (x + dt_bias)) with nb_e the bias term gate_args formed: the accurate ftz
        form takes -log2(e) a_h x + nb_e straight into ex2"""
        if fast or not cfg.ftz:
            return sigm(a_h * x + nb_e, fast)
        return T.call_extern("float32", "kda_rcp_1p_ex2_ftz", (-_math.LOG2E * a_h) * x + nb_e)

    def pow2(x, fast):
        return _math.ex2(x, fast or cfg.ftz)

    def nan_if(spill, x):
        """x, or NaN where a short program's sequence spills past its chunk (spill > 0)"""
        return x if spill is None else T.if_then_else(spill > 0, NAN, x)

    B = T.dynamic("B")
    Tn = T.dynamic("T")
    H = T.dynamic("H")
    HV = T.dynamic("HV")
    NC = T.dynamic("NC")
    N1 = T.dynamic("N1")
    NH = N1 - 1 if cfg.varlen else B     # sequences (short_ht's state rows)
    if short:
        NC = N1 - 1 if cfg.varlen else B   # programs: one a sequence (its first chunk)

    @T.macro
    def ab_product(Ab_s, x_s, st_s, acc, out, slot_len, bc, hv, negate=False):
        """out = Ab x (-Ab x with negate) for this program's chunks, staged in st_s (x_s itself
        where x_s is free after the product) so that the global stores are 16-byte rows."""
        T.gemm(Ab_s, x_s, acc, clear_accum=True)
        for r, e in T.Parallel(R, K):
            st_s[r, e] = T.Cast(cfg.ws_dtype, -acc[r, e] if negate else acc[r, e])
        for r, e in T.Parallel(R, K):
            c = r // C
            if unguarded or (slot_len[c] > 0 and bc * CPB + c < NC):
                out[hv, (bc * CPB + c) * C + r % C, e] = st_s[r, e]

    @T.macro
    def short_tail(o, ht, Sf, U_s, kr_s, rows, start, end, spill, bc, b, hv, U2_s=None, kr2_s=None):
        """The short form's end of a sequence [start, end) whose first `rows` tokens it ran: NaN
        over the tokens past them (spill > 0: a broken max_seqlen; spill None: none can spill,
        end unused), then with short_ht the final state S^T = U^T kr over those rows, 32 columns
        of K at a time (a V x 32 fp32 fragment); with U2_s and kr2_s (last_kr_regs) the last
        chunk's C rows come from those, the rest from U_s and kr_s. (No shape variable such as T
        goes in as an argument: the macro's parameter name would become its name in the IR.)"""
        if spill is not None:
            if spill > 0:
                for blk in T.serial(T.ceildiv(spill, R)):
                    for r, e in T.Parallel(R, V):
                        t = start + rows + blk * R + r
                        if t < end and t >= 0 and t < Tn and b >= 0 and b < B:
                            o[b, t, hv, e] = T.Cast(cfg.in_dtype, NAN)
        if short_ht:
            n_seq = bc if cfg.varlen else b
            for kb in T.unroll(K // 32):
                kr_rows = rows if U2_s is None else rows - C
                if "htmm" not in skip:
                    T.gemm(U_s, kr_s[0:kr_rows, kb * 32:(kb + 1) * 32], Sf, transpose_A=True, clear_accum=True)
                    if U2_s is not None:
                        T.gemm(U2_s, kr2_s[0:C, kb * 32:(kb + 1) * 32], Sf, transpose_A=True)
                if "htstore" not in skip:
                    for e, j in T.Parallel(V, 32):
                        if n_seq >= 0 and n_seq < NH:
                            ht[n_seq, hv, e, kb * 32 + j] = nan_if(spill, Sf[e, j])

    @T.macro
    def decay_krs(krs_s, gcl_s, rows, below, tx):
        """The pairwise form's krs rows r < below times gcl_s (a chunk's gC), for r < rows: each
        thread its two columns (over 128 threads, of one half of the rows), every row read before
        any is written (a read and a write in one row's iteration would take two barriers a row)."""
        hf = tx // (K // 2)
        d2 = tx % (K // 2)
        RH = rows // TPC
        kold = T.alloc_local((RH, 2), cfg.ws_dtype)
        for r in T.unroll(RH):
            for e in T.vectorized(2):
                kold[r, e] = krs_s[hf * RH + r, d2 * 2 + e]
        for r in T.unroll(RH):
            for e in T.vectorized(2):
                if hf * RH + r < below:
                    krs_s[hf * RH + r, d2 * 2 + e] = T.Cast(
                        cfg.ws_dtype, T.Cast(accum, kold[r, e]) * gcl_s[d2 * 2 + e])

    @T.macro
    def gate_args(nb, d2, hv, A_log, dt_bias, a_h0, nb_s):
        """a_h = exp(A_log) and the bias terms nb of channels 2 d2, 2 d2 + 1: the gate's argument
        a_h (g + dt_bias) folded into one fma per element (the accurate form takes -log2(e)
        a_h (g + dt_bias) straight into ex2). With early_loads both were formed in the prologue."""
        if cfg.early_loads:
            for e in T.unroll(2):
                nb[e] = nb_s[d2 * 2 + e]
            return a_h0
        a_h = _math.exp(A_log[hv], fast)
        for e in T.unroll(2):
            nb[e] = a_h * dt_bias[hv, d2 * 2 + e] * (1.0 if fast or not cfg.ftz else -_math.LOG2E)
        return a_h

    @T.macro
    def column_pass_halves(q_s, k_s, ki_s, kdh_s, tot_s, rk_s, rq_s, A_log, dt_bias, lower_bound, qd, kr, gC,
                           slot_len, bc, hv, tx, a_h0, nb_s):
        """The column pass of a 32-token chunk: thread (hf, d2) walks rows hf SUB .. hf SUB + SUB - 1
        of channels 2 d2, 2 d2 + 1. With Gl the half's own cumsum, T1 and T2 the halves' totals
        (exchanged through tot_s) and the anchor G_m = T1 (the first half's end), rel = G - G_m
        is Gl - T1 in the first half and Gl in the second, so |rel| <= SUB 5 log2(e) ~ 115:

            kdm = kn 2^rel    qdm = qn 2^rel    kim = kn 2^-rel        (bf16: the L, Mqk operands)
            kd  = kdm 2^T1    qd = scale qdm 2^T1                      (2^G, from the chunk start)
            kr  = kim 2^T2    gC = 2^(T1 + T2)                         (2^(G_C - G), G_C - G_m = T2)

        since kdm_r kim_s = kn_r kn_s 2^(G_r - G_s). No factor leaves fp32's range."""
        hf = tx // (K // 2)
        d2 = tx % (K // 2)
        gcol = T.alloc_local((SUB, 2), accum)
        kraw = T.alloc_local((SUB, 2), cfg.in_dtype)
        qraw = T.alloc_local((SUB, 2), cfg.in_dtype)
        nb = T.alloc_local((2,), accum)
        e1 = T.alloc_local((2,), accum)
        e2 = T.alloc_local((2,), accum)
        t1 = T.alloc_local((2,), accum)
        lbl = lower_bound * _math.LOG2E
        a_h = gate_args(nb, d2, hv, A_log, dt_bias, a_h0, nb_s)
        for i in T.unroll(SUB):
            for e in T.unroll(2):
                x = T.Cast(accum, ki_s[hf * SUB + i, d2 * 2 + e])
                # probe gate (measurement only): the gate's two MUFU operations left out
                s_ = gate_sigm(a_h, x, nb[e]) if "gate" not in skip else a_h * x + nb[e]
                if cfg.tail_unswitch:
                    gcol[i, e] = lbl * s_
                else:
                    gcol[i, e] = T.if_then_else(hf * SUB + i < slot_len[0], lbl * s_, 0.0)
        if cfg.tail_unswitch:
            # rows past the chunk's tokens (g zero-filled: s_ finite) out of G, in the half that has some
            if hf * SUB + SUB > slot_len[0]:
                for i in T.unroll(SUB):
                    for e in T.unroll(2):
                        gcol[i, e] = T.if_then_else(hf * SUB + i < slot_len[0], gcol[i, e], 0.0)
        for i in T.unroll(1, SUB):
            for e in T.unroll(2):
                gcol[i, e] = gcol[i, e] + gcol[i - 1, e]
        for i in T.unroll(SUB):
            for e in T.vectorized(2):
                kraw[i, e] = k_s[hf * SUB + i, d2 * 2 + e]
            for e in T.vectorized(2):
                qraw[i, e] = q_s[hf * SUB + i, d2 * 2 + e]
        for e in T.unroll(2):
            tot_s[hf, d2 * 2 + e] = gcol[SUB - 1, e]
        T.sync_threads()
        for e in T.unroll(2):
            t1[e] = tot_s[0, d2 * 2 + e]
            e1[e] = pow2(t1[e], fast)
            e2[e] = pow2(tot_s[1, d2 * 2 + e], fast)
            # the anchor G_m in the half's own terms: T1 in the first half, 0 in the second
            t1[e] = T.if_then_else(hf == 0, t1[e], 0.0)
        # probe colstore: qd, kr and gC not stored (K1 with 512 of its 912 workspace bytes a token)
        live = False if "colstore" in skip else True if unguarded else slot_len[0] > 0 and bc < NC
        for i in T.unroll(SUB):
            r = hf * SUB + i
            kn = T.alloc_local((2,), accum)
            qn = T.alloc_local((2,), accum)
            ea = T.alloc_local((2,), accum)
            kim = T.alloc_local((2,), accum)
            for e in T.unroll(2):
                rel = gcol[i, e] - t1[e]
                kn[e] = T.Cast(accum, kraw[i, e]) * rk_s[r]
                qn[e] = T.Cast(accum, qraw[i, e]) * rq_s[r]
                ea[e] = pow2(rel, fast)
                kim[e] = kn[e] * pow2(-rel, fast)
            for e in T.vectorized(2):
                kdh_s[r, d2 * 2 + e] = T.Cast(cfg.ws_dtype, kn[e] * ea[e] * e1[e])
            if live:
                for e in T.vectorized(2):
                    qd[hv, bc * C + r, d2 * 2 + e] = T.Cast(cfg.ws_dtype, qn[e] * ea[e] * e1[e])
                for e in T.vectorized(2):
                    kr[hv, bc * C + r, d2 * 2 + e] = T.Cast(cfg.ws_dtype, kim[e] * e2[e])
            for e in T.vectorized(2):
                ki_s[r, d2 * 2 + e] = T.Cast(cfg.in_dtype, kim[e])
            for e in T.vectorized(2):
                k_s[r, d2 * 2 + e] = T.Cast(cfg.in_dtype, kn[e] * ea[e])
            for e in T.vectorized(2):
                q_s[r, d2 * 2 + e] = T.Cast(cfg.in_dtype, qn[e] * ea[e])
        if live and hf == 0:
            for e in T.vectorized(2):
                gC[hv, bc, d2 * 2 + e] = e1[e] * e2[e]

    def column_cell(tx, quads):
        """Thread tx's cell in the pairwise column pass, (row group, channel group): its rows
        group * KLR .. + KLR - 1 of channels group * KLC .. + KLC - 1. Channel pairs: (tx // 64,
        tx % 64) over HR rows; quads: lane l of warp w -> (l // 8, 8 w + l % 8) over C / 4 rows."""
        if quads:
            return tx % 32 // 8, (tx // 32) * 8 + tx % 32 % 8
        return tx // (K // 2), tx % (K // 2)

    @T.macro
    def column_row_stores(kq_s, ki_s, kq2_s, krs_s, krl, kn, qn, ep, ki, gcl, jc, r, i, c0, W):
        """The pairwise column passes' stores of row r (the thread's row i) over its W channels from
        c0: kd and qd in fp16 (kq2_s), kr_j into krs's rows of chunk j (they meet zero rows of U this
        chunk) or, past them, into krl (last_kr_regs), ki and kd, qd in bf16 (ki_s, kq_s)."""
        for e in T.vectorized(W):
            kq2_s[r, c0 + e] = T.Cast(cfg.ws_dtype, kn[e] * ep[e])
        for e in T.vectorized(W):
            kq2_s[DQO + r, c0 + e] = T.Cast(cfg.ws_dtype, qn[e] * ep[e])
        for e in T.vectorized(W):
            if jc * C + r < NRB:
                krs_s[jc * C + r, c0 + e] = T.Cast(cfg.ws_dtype, ki[e] * gcl[e])
        if krl is not None:
            for e in T.unroll(W):
                krl[i, e] = T.if_then_else(jc * C + r >= NRB, T.Cast(cfg.ws_dtype, ki[e] * gcl[e]),
                                           T.Cast(cfg.ws_dtype, 0))
        for e in T.vectorized(W):
            ki_s[r, c0 + e] = T.Cast(cfg.in_dtype, ki[e])
        for e in T.vectorized(W):
            kq_s[KO + r, c0 + e] = T.Cast(cfg.in_dtype, kn[e] * ep[e])
        for e in T.vectorized(W):
            kq_s[QO + r, c0 + e] = T.Cast(cfg.in_dtype, qn[e] * ep[e])

    @T.macro
    def column_pass_rows(kq_s, ki_s, kq2_s, tot_s, rk_s, rq_s, A_log, dt_bias, lower_bound, krs_s, gcl_s, jc,
                         slot_len, hv, tx, a_h0, nb_s, krl=None):
        """The pairwise form's column pass over 128 threads: thread (hf, d2) walks rows hf HR ..
        hf HR + HR - 1 of channels 2 d2, 2 d2 + 1 with its half's cumsum, and the second half adds
        the first half's total T1 (exchanged through tot_s), so that G runs from the chunk's start
        as in the one-thread pass. kq_s holds k over q (KO, QO) and kq2_s kd over qd (DQO).
        krl (last_kr_regs): the thread's kr of the rows past krs's (the last chunk's), else zero."""
        hf, d2 = column_cell(tx, False)
        gcol = T.alloc_local((HR, 2), accum)
        kraw = T.alloc_local((HR, 2), cfg.in_dtype)
        qraw = T.alloc_local((HR, 2), cfg.in_dtype)
        nb = T.alloc_local((2,), accum)
        t1 = T.alloc_local((2,), accum)
        gcl = T.alloc_local((2,), accum)
        lbl = lower_bound * _math.LOG2E
        a_h = gate_args(nb, d2, hv, A_log, dt_bias, a_h0, nb_s)
        for i in T.unroll(HR):
            for e in T.unroll(2):
                x = T.Cast(accum, ki_s[hf * HR + i, d2 * 2 + e])
                s_ = gate_sigm(a_h, x, nb[e])
                gcol[i, e] = T.if_then_else(hf * HR + i < slot_len[0], lbl * s_, 0.0)
        for i in T.unroll(1, HR):
            for e in T.unroll(2):
                gcol[i, e] = gcol[i, e] + gcol[i - 1, e]
        for i in T.unroll(HR):
            for e in T.vectorized(2):
                kraw[i, e] = kq_s[KO + hf * HR + i, d2 * 2 + e]
            for e in T.vectorized(2):
                qraw[i, e] = kq_s[QO + hf * HR + i, d2 * 2 + e]
        for e in T.unroll(2):
            tot_s[hf, d2 * 2 + e] = gcol[HR - 1, e]
        T.sync_threads()
        for e in T.unroll(2):
            t1[e] = T.if_then_else(hf == 1, tot_s[0, d2 * 2 + e], 0.0)
            gcl[e] = pow2(tot_s[0, d2 * 2 + e] + tot_s[1, d2 * 2 + e], fast)
        for i in T.unroll(HR):
            r = hf * HR + i
            kn = T.alloc_local((2,), accum)
            qn = T.alloc_local((2,), accum)
            ep = T.alloc_local((2,), accum)
            ki = T.alloc_local((2,), accum)
            for e in T.unroll(2):
                gi = gcol[i, e] + t1[e]
                kn[e] = T.Cast(accum, kraw[i, e]) * rk_s[r]
                qn[e] = T.Cast(accum, qraw[i, e]) * rq_s[r]
                ep[e] = pow2(gi, fast)
                ki[e] = kn[e] * pow2(-gi, fast)
            column_row_stores(kq_s, ki_s, kq2_s, krs_s, krl, kn, qn, ep, ki, gcl, jc, r, i, d2 * 2, 2)
        if hf == 0:
            for e in T.vectorized(2):
                gcl_s[d2 * 2 + e] = gcl[e]

    @T.macro
    def column_pass_quads(kq_s, ki_s, kq2_s, rk_s, rq_s, A_log, dt_bias, lower_bound, krs_s, gcl_s, jc,
                          slot_len, hv, tx, a_h0, nb_s, krl=None):
        """column_pass_rows with four adjacent channels and four rows a thread (K1Config.col_quads):
        lane l of warp w walks rows 4 (l // 8) .. 4 (l // 8) + 3 of channels 4 d4 .. 4 d4 + 3, with
        d4 = 8 w + l % 8, so that a channel's four row quarters sit in one warp, 8 lanes apart: the
        quarters' gate totals become each quarter's offset (the sum of those before it) and the
        chunk's total by shuffles. Shared loads and stores move 8 bytes, not 4."""
        QR = C // 4
        lane = tx % 32
        hq, d4 = column_cell(tx, True)
        gcol = T.alloc_local((QR, 4), accum)
        graw = T.alloc_local((QR, 4), cfg.in_dtype)
        kraw = T.alloc_local((QR, 4), cfg.in_dtype)
        qraw = T.alloc_local((QR, 4), cfg.in_dtype)
        nb = T.alloc_local((4,), accum)
        incl = T.alloc_local((4,), accum)
        t1 = T.alloc_local((4,), accum)
        gcl = T.alloc_local((4,), accum)
        lbl = lower_bound * _math.LOG2E
        if cfg.early_loads:
            for e in T.vectorized(4):
                nb[e] = nb_s[d4 * 4 + e]
            a_h = a_h0
        else:
            a_h = _math.exp(A_log[hv], fast)
            for e in T.unroll(4):
                nb[e] = a_h * dt_bias[hv, d4 * 4 + e] * (1.0 if fast or not cfg.ftz else -_math.LOG2E)
        for i in T.unroll(QR):
            for e in T.vectorized(4):
                graw[i, e] = ki_s[hq * QR + i, d4 * 4 + e]
            for e in T.vectorized(4):
                kraw[i, e] = kq_s[KO + hq * QR + i, d4 * 4 + e]
            for e in T.vectorized(4):
                qraw[i, e] = kq_s[QO + hq * QR + i, d4 * 4 + e]
        for i in T.unroll(QR):
            for e in T.unroll(4):
                s_ = gate_sigm(a_h, T.Cast(accum, graw[i, e]), nb[e])
                gcol[i, e] = T.if_then_else(hq * QR + i < slot_len[0], lbl * s_, 0.0)
        for i in T.unroll(1, QR):
            for e in T.unroll(4):
                gcol[i, e] = gcol[i, e] + gcol[i - 1, e]
        for e in T.unroll(4):
            # inclusive sums of the quarters' totals over hq (two steps), then each quarter's
            # offset from the quarter before it and the chunk's total from the last
            incl[e] = gcol[QR - 1, e]
            up8 = T.shfl_up(incl[e], 8, 32)
            incl[e] = T.if_then_else(hq >= 1, incl[e] + up8, incl[e])
            up16 = T.shfl_up(incl[e], 16, 32)
            incl[e] = T.if_then_else(hq >= 2, incl[e] + up16, incl[e])
            prev = T.shfl_up(incl[e], 8, 32)
            t1[e] = T.if_then_else(hq >= 1, prev, 0.0)
            gcl[e] = pow2(T.shfl_sync(incl[e], 24 + lane % 8, 32), fast)
        for i in T.unroll(QR):
            r = hq * QR + i
            kn = T.alloc_local((4,), accum)
            qn = T.alloc_local((4,), accum)
            ep = T.alloc_local((4,), accum)
            ki = T.alloc_local((4,), accum)
            rk = rk_s[r]
            rq = rq_s[r]
            for e in T.unroll(4):
                gi = gcol[i, e] + t1[e]
                kn[e] = T.Cast(accum, kraw[i, e]) * rk
                qn[e] = T.Cast(accum, qraw[i, e]) * rq
                ep[e] = pow2(gi, fast)
                ki[e] = kn[e] * pow2(-gi, fast)
            column_row_stores(kq_s, ki_s, kq2_s, krs_s, krl, kn, qn, ep, ki, gcl, jc, r, i, d4 * 4, 4)
        if hq == 0:
            for e in T.vectorized(4):
                gcl_s[d4 * 4 + e] = gcl[e]

    @T.macro
    def inverse_halves(L_s, tot_s, Ab_s, beta_s):
        """Ab = (I + L)^-1 diag(beta) of a 16-token chunk from its 8-row blocks (K1Config.inv_blocks):
        A11 and A22 by forward substitution (16 threads, a column of a block each: chains of 28
        products, not 120), then A21 = -A22 (L21 A11) over 64 threads. A11 over A22 and L21 A11
        live in the gate totals' buffer tot_s (free after the column pass; no shared memory more)."""
        for hb, j in T.Parallel(2, HB):
            acol = T.alloc_local((HB,), accum)
            for i in T.unroll(HB):
                acol[i] = 0.0
            for i in T.unroll(HB):
                acc4 = T.alloc_var(accum, init=T.if_then_else(i == j, 1.0, 0.0))
                for m in T.unroll(HB):
                    if m < i:
                        acc4 = acc4 - L_s[hb * HB + i, hb * HB + m] * acol[m]
                acol[i] = acc4
            for i in T.unroll(HB):
                tot_s[0, (hb * HB + i) * HB + j] = acol[i]
                Ab_s[hb * HB + i, hb * HB + j] = T.Cast(cfg.mat_dtype, acol[i] * beta_s[hb * HB + j])
        for i, j in T.Parallel(HB, HB):
            x = T.alloc_var(accum, init=0.0)
            for m in T.unroll(HB):
                x = x + L_s[HB + i, m] * tot_s[0, m * HB + j]
            tot_s[1, i * HB + j] = x
        for i, j in T.Parallel(HB, HB):
            a21 = T.alloc_var(accum, init=0.0)
            for m in T.unroll(HB):
                a21 = a21 - tot_s[0, (HB + i) * HB + m] * tot_s[1, m * HB + j]
            Ab_s[HB + i, j] = T.Cast(cfg.mat_dtype, a21 * beta_s[j])
            Ab_s[i, HB + j] = T.Cast(cfg.mat_dtype, 0)

    @T.macro
    def row_pair(a_s, row, b_s, j2, out):
        """out[e] = sum_m a_s[row, m] b_s[m, 2 j2 + e], e = 0, 1, with a_s's row read as vectors."""
        arow = T.alloc_local((SUB,), accum)
        for m in T.vectorized(SUB):
            arow[m] = a_s[row, m]
        for e in T.unroll(2):
            out[e] = 0.0
        for m in T.unroll(SUB):
            for e in T.unroll(2):
                out[e] = out[e] + arow[m] * b_s[m, j2 * 2 + e]

    @T.macro
    def substitute_column(L_s, r0, c0, n, j, acol):
        """Column j of A = (I + L)^-1 for the n x n block of L_s at (r0, c0), into acol by forward
        substitution: A[i, j] = [i == j] - sum_{m < i} L[i, m] A[m, j] (probe inverse: the sums
        left out)."""
        for i in T.unroll(n):
            acol[i] = 0.0
        for i in T.unroll(n):
            acc4 = T.alloc_var(accum, init=T.if_then_else(i == j, 1.0, 0.0))
            if "inverse" not in skip:
                for m in T.unroll(n):
                    if m < i:
                        acc4 = acc4 - L_s[r0 + i, c0 + m] * acol[m]
            acol[i] = acc4

    @T.macro
    def block_inverse(L_s, Ad_s, X_s, Ab_s, beta_s):
        """Ab = (I + L)^-1 diag(beta) of a 32-token chunk from its 16-row blocks: the diagonal
        blocks A11, A22 by forward substitution (a thread a column of a block, as for a 16-token
        chunk), then A21 = -A22 (L21 A11) over all threads."""
        # The diagonal blocks of BS rows by forward substitution, a thread a column of a block:
        # the 16-row blocks, or with inv_blocks their 8-row blocks (chains of 28 products, not 120)
        BS = HB if cfg.inv_blocks else SUB
        for hb, j in T.Parallel(C // BS, BS):
            acol = T.alloc_local((BS,), accum)
            substitute_column(L_s, hb * BS, hb * BS, BS, j, acol)
            for i in T.unroll(BS):
                if cfg.inv_blocks:
                    Ad_s[hb * BS + i, hb % 2 * HB + j] = acol[i]
                else:
                    Ad_s[hb * BS + i, j] = acol[i]
                Ab_s[hb * BS + i, hb * BS + j] = T.Cast(cfg.mat_dtype, acol[i] * beta_s[hb * BS + j])
        if cfg.inv_blocks:
            # each 16-row block's lower left -P2 (L21 P1) over 128 threads, by way of Y = L21 P1
            # in X_s's first rows
            for hb, i, j in T.Parallel(NSUB, HB, HB):
                y = T.alloc_var(accum, init=0.0)
                for m in T.unroll(HB):
                    y = y + L_s[hb * SUB + HB + i, hb * SUB + m] * Ad_s[hb * SUB + m, j]
                X_s[hb * HB + i, j] = y
            for hb, i, j in T.Parallel(NSUB, HB, HB):
                z = T.alloc_var(accum, init=0.0)
                for m in T.unroll(HB):
                    z = z - Ad_s[hb * SUB + HB + i, HB + m] * X_s[hb * HB + m, j]
                Ad_s[hb * SUB + HB + i, j] = z
                Ad_s[hb * SUB + i, HB + j] = 0.0
                Ab_s[hb * SUB + HB + i, hb * SUB + j] = T.Cast(cfg.mat_dtype, z * beta_s[hb * SUB + j])
                Ab_s[hb * SUB + i, hb * SUB + HB + j] = T.Cast(cfg.mat_dtype, 0)
        if cfg.inv_rows:
            # thread (i, j2): row i of the left factor as vectors, columns 2 j2, 2 j2 + 1
            for i, j2 in T.Parallel(SUB, SUB // 2):
                xo = T.alloc_local((2,), accum)
                row_pair(L_s, SUB + i, Ad_s, j2, xo)
                for e in T.vectorized(2):
                    X_s[i, j2 * 2 + e] = xo[e]
            for i, j2 in T.Parallel(SUB, SUB // 2):
                ao = T.alloc_local((2,), accum)
                row_pair(Ad_s, SUB + i, X_s, j2, ao)
                for e in T.unroll(2):
                    Ab_s[SUB + i, j2 * 2 + e] = T.Cast(cfg.mat_dtype, -ao[e] * beta_s[j2 * 2 + e])
                    Ab_s[i, SUB + j2 * 2 + e] = T.Cast(cfg.mat_dtype, 0)
        else:
            # probe inv21: the off-diagonal block's two products left out
            for i, j in T.Parallel(SUB, SUB):
                x = T.alloc_var(accum, init=0.0)
                if "inv21" not in skip:
                    for m in T.unroll(SUB):
                        x = x + L_s[SUB + i, m] * Ad_s[m, j]
                X_s[i, j] = x
            for i, j in T.Parallel(SUB, SUB):
                a21 = T.alloc_var(accum, init=0.0)
                if "inv21" not in skip:
                    for m in T.unroll(SUB):
                        a21 = a21 - Ad_s[SUB + i, m] * X_s[m, j]
                Ab_s[SUB + i, j] = T.Cast(cfg.mat_dtype, a21 * beta_s[j])
                Ab_s[i, SUB + j] = T.Cast(cfg.mat_dtype, 0)

    @T.macro
    def chunk_rows(ld_t, ld_b, ld_ok, t0, ln, b, tx):
        """Each thread's NPASS load rows of the chunk of ln tokens from token t0 of row b."""
        for it in T.unroll(NPASS):
            r = it * RPP + tx // LPR
            t = t0 + r
            ld_ok[it] = r < ln and t >= 0 and t < Tn and b >= 0 and b < B
            ld_t[it] = t
            ld_b[it] = b

    @T.macro
    def qkg_copies(q, k, g, q_s, k_s, ki_s, ld_t, ld_b, ld_ok, h, hv, tx):
        """q, k, g straight into shared memory by cp.async, 16 bytes a copy and LPR lanes a row,
        all in flight at once, one commit group; rows outside the chunk are zero-filled (the copy
        is predicated off and its address clamped into the tensor)."""
        for it in T.unroll(NPASS):
            r = it * RPP + tx // LPR
            d8 = tx % LPR
            # (clamped again where used: TileLang and `verify` read no bounds through a local)
            bb = T.max(T.min(ld_b[it], B - 1), 0)
            tt = T.max(T.min(ld_t[it], Tn - 1), 0)
            T.ptx_cp_async(T.access_ptr(q_s[QO + r, d8 * 8], "w", 8),
                           T.access_ptr(q[bb, tt, h, d8 * 8], "r", 8), 8, ld_ok[it])
            T.ptx_cp_async(T.access_ptr(k_s[KO + r, d8 * 8], "w", 8),
                           T.access_ptr(k[bb, tt, h, d8 * 8], "r", 8), 8, ld_ok[it])
            T.ptx_cp_async(T.access_ptr(ki_s[r, d8 * 8], "w", 8),
                           T.access_ptr(g[bb, tt, hv, d8 * 8], "r", 8), 8, ld_ok[it])
        T.ptx_commit_group()

    @T.macro
    def beta_row(beta, braw_n, t0, ln, b, hv, tx):
        """braw_n[0]: beta of the chunk's row tx (0 past its ln tokens), for next_early, kept in
        its own dtype so that nothing waits for the load before the chunk that reads it"""
        braw_n[0] = T.Cast(cfg.in_dtype, 0)
        if tx < C:
            if tx < ln and t0 + tx >= 0 and t0 + tx < Tn and b >= 0 and b < B:
                braw_n[0] = beta[T.max(T.min(b, B - 1), 0), T.max(T.min(t0 + tx, Tn - 1), 0), hv]

    @T.macro
    def slot_search(cu_seqlens, slot):
        """(t0, len) of the chunk in varlen slot `slot`, len 0 for a hole.

        Slot s holds chunk j of sequence n when s = f(n) + j, f(n) = bos_n // C + n,
        j < ceil(len_n / C): f grows by at least ceil(len_n / C) from n to n + 1, so the
        ranges are disjoint and below NC = T // C + N. n is the largest with f(n) <= s: a
        binary search of SEARCH_STEPS steps for N <= MAX_SEQUENCES, or with dyn_search of
        bit_length(N1 - 2), what its N1 - 1 candidates need (cu_seqlens clamped to [0, T], so
        that any contents stay inside the buffers)."""
        lo = T.alloc_var("int32", init=0)
        hi = T.alloc_var("int32", init=N1 - 2)
        f_mid = T.alloc_var("int32", init=0)
        steps = T.min(32 - T.clz(T.max(N1 - 2, 0)), SEARCH_STEPS) if cfg.dyn_search else SEARCH_STEPS
        if cfg.slot_guess:
            # the sequence a batch of equal lengths puts the slot in (f(n) = n NC / (N1 - 1)
            # there), checked with two independent loads: one round trip where it holds; where
            # not, the search below runs on the side it leaves
            guess = T.alloc_var("int32", init=T.Cast("int32", T.max(T.min(
                T.Cast("int64", slot) * T.Cast("int64", N1 - 1) // T.Cast("int64", T.max(NC, 1)),
                T.Cast("int64", N1 - 2)), T.int64(0))))
            guess_n = T.max(T.min(guess, N1 - 2), 0)
            guess_bos = T.alloc_var("int32", init=_math.token_index(cu_seqlens[guess_n], Tn))
            guess_eos = T.alloc_var("int32", init=_math.token_index(cu_seqlens[guess_n + 1], Tn))
            if guess_bos // C + guess_n > slot:
                hi = guess_n - 1
            elif guess_n < N1 - 2 and guess_eos // C + guess_n + 1 <= slot:
                lo = guess_n + 1
            else:
                lo = guess_n
                hi = guess_n
        for _ in T.serial(steps):
            # lo, hi stay in [0, N1 - 2]; the clamps say so to `verify`, which does
            # not infer loop invariants. Once lo == hi a step loads nothing, so the
            # chain of dependent loads is ceil(log2 N) long, not SEARCH_STEPS.
            mid = (T.max(T.min(lo, N1 - 2), 0) + T.max(T.min(hi, N1 - 2), 0) + 1) // 2
            if lo < hi:
                f_mid = _math.token_index(cu_seqlens[mid], Tn) // C + mid
                if f_mid <= slot:
                    lo = mid
                else:
                    hi = mid - 1
        n = T.max(T.min(lo, N1 - 2), 0)
        if cfg.slot_guess:
            # the guess's loads where it held (no second round trip)
            bos = T.alloc_var("int32", init=guess_bos)
            eos = T.alloc_var("int32", init=guess_eos)
            if n != guess_n:
                bos = _math.token_index(cu_seqlens[n], Tn)
                eos = _math.token_index(cu_seqlens[n + 1], Tn)
            eos = T.max(eos, bos)
        else:
            bos = _math.token_index(cu_seqlens[n], Tn)
            eos = T.max(_math.token_index(cu_seqlens[n + 1], Tn), bos)
        j = slot - (bos // C + n)
        t0 = bos + j * C
        ln = T.if_then_else(j >= 0 and j < T.ceildiv(eos - bos, C), T.min(C, eos - t0), 0)
        return t0, T.if_then_else(slot < NC, ln, 0)

    def fixed_slot(s):
        """(row, first token, tokens) of chunk slot s < NC of a fixed batch (ws_chunks)"""
        ncs = T.ceildiv(Tn, C)
        return s // ncs, (s % ncs) * C, T.min(C, Tn - (s % ncs) * C)

    @T.macro
    def _body(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, lower_bound, scale, Wk, qd, kr, U0, Ab, Mqk, gC, o, ht):
        grid = N1 - 1 if short and cfg.varlen else T.ceildiv(NC, NW) if wsm else T.ceildiv(NC, CPB)
        with T.Kernel(grid, HV, threads=cfg.threads) as (bc, hv):
            slot_b = T.alloc_shared((CPB,), "int32")
            slot_t0 = T.alloc_shared((CPB,), "int32")
            slot_len = T.alloc_shared((CPB,), "int32")

            # stack: k_s is q_s, k in rows [0, R) and q in rows [R, 2R)
            if stack:
                q_s = k_s = T.alloc_shared((2 * R, K), cfg.in_dtype)
            else:
                q_s = T.alloc_shared((R, K), cfg.in_dtype)
                k_s = T.alloc_shared((R, K), cfg.in_dtype)
            if split_k:
                # the bf16 residuals of ki (and of qd) for Mqk; Wk = Ab kd from k_s, staged in wk_s
                kil_s = T.alloc_shared((R, K), cfg.in_dtype)
                ql_s = T.alloc_shared((R, K), cfg.in_dtype) if split_q else None
                wk_s = T.alloc_shared((R, K), cfg.ws_dtype)
                Abb_s = T.alloc_shared((R, R), cfg.in_dtype)
            elif stack:
                # kd in fp16 (rows [0, R)), the operand of the Wk product, over qd in fp16 ([R, 2R))
                kdh_s = qdh_s = T.alloc_shared((2 * R, K), cfg.ws_dtype)
            else:
                # kd in fp16, the operand of the Wk product
                kdh_s = T.alloc_shared((R, K), cfg.ws_dtype)
            beta_s = T.alloc_shared((R,), accum)
            rq_s = T.alloc_shared((R,), accum)
            rk_s = T.alloc_shared((R,), accum)
            if cfg.mqk_diag:
                dg_s = T.alloc_shared((R,), accum)   # Mqk's diagonal, qn_r . kn_r
            # bf16 for the L and Mqk products: ki = k 2^-G reaches 2^115, past fp16's range.
            # It holds g until the column pass writes each ki over the g it read.
            ki_s = T.alloc_shared((R, K), cfg.in_dtype)
            # a 32-token chunk: each half's gate total, for the other half
            tot_s = T.alloc_shared((2, K), accum) if NSUB == 2 or TPC == 2 else None
            # and its inverse's blocks: A11 over A22 (Ad_s), and L21 A11 (X_s)
            Ad_s = T.alloc_shared((C, SUB), accum) if NSUB == 2 else None
            if wsm:
                # over tot_s, read only in the column pass (ws_chunks: 45.1 KB a program, 5 an SM)
                X_s = T.view(tot_s, (SUB, SUB))
            else:
                X_s = T.alloc_shared((SUB, SUB), accum) if NSUB == 2 else None
            L_s = T.alloc_shared((R, C), accum)
            # (ws_chunks: Mqk's fp16 values, which is all the workspace form reads of M_s)
            M_s = T.alloc_shared((R, C), cfg.mat_dtype if wsm else accum)

            # the operands of Wk = Ab kd and U0 = Ab v: v in fp16 and the block-diagonal Ab
            v_s = None if u0k2 else T.alloc_shared((R, V), cfg.ws_dtype)
            Ab_s = T.alloc_shared((R, R), cfg.mat_dtype)
            WU = T.alloc_fragment((R, K), accum)

            Sf = T.alloc_fragment((V, 32), accum) if short_ht else None
            # (rows, channels) of a thread's column pass: channel pairs or quads
            KLR, KLC = (C // 4, 4) if cfg.col_quads else (HR, 2)
            krl = T.alloc_local((KLR, KLC), cfg.ws_dtype) if lkr else None
            if multi:
                # the earlier chunks' kr decayed to this chunk's start, their U, this chunk's qd in
                # fp16, and -P = -Wk krs^T, Q = qd krs^T (rows of chunks not reached stay zero)
                krs_s = T.alloc_shared((NRB, K), cfg.ws_dtype)
                Ua_s = T.alloc_shared((NRB, V), cfg.ws_dtype)
                if not stack:
                    qdh_s = T.alloc_shared((R, K), cfg.ws_dtype)
                if stack:
                    P_s = T.alloc_shared((2 * R, NRB), cfg.ws_dtype)    # -P over Q
                else:
                    P_s = T.alloc_shared((R, NRB), cfg.ws_dtype)
                    Q_s = T.alloc_shared((R, NRB), cfg.ws_dtype)
                gcl_s = T.alloc_shared((K,), accum)
                if stack:
                    Pf = Qf = T.alloc_fragment((2 * R, NRB), accum)
                else:
                    Pf = T.alloc_fragment((R, NRB), accum)
                    Qf = T.alloc_fragment((R, NRB), accum)
            if stack:
                Lf = Mf = T.alloc_fragment((2 * R, R), accum)
            else:
                Lf = T.alloc_fragment((R, R), accum)
                Mf = T.alloc_fragment((R, R), accum)

            if cfg.min_blocks:
                T.annotate_min_blocks_per_sm(cfg.min_blocks)
            T.import_source(_math.ACCURATE_SOURCE + (_math.FAST_SOURCE if fast or cfg.ftz else "")
                            + (_math.FTZ_SOURCE if cfg.ftz and not fast else "") + (_math.NR_SOURCE if nr else ""))
            # GVA: value head hv reads q and k of head h, held in a register: inlined, the int64
            # divisions would run once per element loaded.
            tx = T.get_thread_binding()
            if cfg.lean_prologue:
                # no division where every value head has its own q/k head (HV == H, uniform)
                h = T.alloc_var("int32", init=hv)
                if HV != H:
                    h = _math.gva_head(hv, H, HV)
            elif cfg.head_once:
                # thread 0 divides, beside the slot's values; the rest read it after their barrier
                head_s = T.alloc_shared((1,), "int32")
                if tx == 0:
                    head_s[0] = _math.gva_head(hv, H, HV)
            else:
                h = T.alloc_var("int32", init=_math.gva_head(hv, H, HV))
            a_h0 = nb_s = None
            if cfg.early_loads:
                # the gate's per-head parameters issued first, consumed after q, k, g's copies are
                # issued: their DRAM round trip leaves the column pass's path
                NBT = K // cfg.threads if cfg.threads <= K else 1
                ah_raw = T.alloc_var(accum, init=A_log[hv])
                dtb = T.alloc_local((NBT,), accum)
                for j in T.unroll(NBT):
                    if j * cfg.threads + tx < K:
                        dtb[j] = dt_bias[hv, j * cfg.threads + tx]
                nb_s = T.alloc_shared((K,), accum)
            # lean_prologue: the copies' rows from registers every thread holds (no shared slot
            # values, so no barrier, before the copies)
            fixed_regs = cfg.lean_prologue and not cfg.varlen and CPB == 1
            short_varlen = short and cfg.varlen
            regs = cfg.lean_prologue and (cfg.skip_holes or fixed_regs or short_varlen)
            b_all = 0
            if short_varlen:
                # program bc: sequence bc's first chunk
                t0_all = T.alloc_var("int32", init=_math.token_index(cu_seqlens[bc], Tn))
                eos_all = T.alloc_var("int32", init=T.max(_math.token_index(cu_seqlens[bc + 1], Tn), t0_all))
                len_all = T.alloc_var("int32", init=T.min(eos_all - t0_all, C))
                if not short_ht:
                    # (with the final state an empty sequence runs through: every row is zero,
                    # so its state is)
                    if len_all <= 0:
                        T.thread_return()
            elif cfg.skip_holes:
                # every thread finds the slot's chunk (the same loads, so the same values), and the
                # whole block leaves at a hole
                t0_all = T.alloc_var("int32")
                len_all = T.alloc_var("int32")
                if "oddhole" in skip:
                    # measurement only: in a batch of 16-token sequences every odd slot is a hole;
                    # leave before the search, to bound what the holes' searches cost
                    if bc % 2 == 1:
                        T.thread_return()
                t0_all, len_all = slot_search(cu_seqlens, bc)
                if len_all <= 0:
                    T.thread_return()
                if tx == 0 and not cfg.lean_prologue:
                    slot_b[0] = 0
                    slot_t0[0] = t0_all
                    slot_len[0] = len_all
            elif fixed_regs and short:
                # program b: row b's first chunk
                b_all = T.alloc_var("int32", init=bc)
                t0_all = T.alloc_var("int32", init=0)
                len_all = T.alloc_var("int32", init=T.min(C, Tn))
            elif fixed_regs and wsm:
                # a fixed batch, NW chunks a program: the first slot's (b, t0, len) (bc NW < NC)
                b0, t00, len0 = fixed_slot(bc * NW)
                b_all = T.alloc_var("int32", init=b0)
                t0_all = T.alloc_var("int32", init=t00)
                len_all = T.alloc_var("int32", init=len0)
                sl = T.alloc_var("int32", init=bc * NW)
            elif fixed_regs:
                # a fixed batch, one chunk a program: every thread forms the slot's (b, t0, len)
                ncs = T.ceildiv(Tn, C)
                b_all = T.alloc_var("int32", init=bc // ncs)
                t0_all = T.alloc_var("int32", init=(bc % ncs) * C)
                len_all = T.alloc_var("int32", init=T.if_then_else(bc < NC, T.min(C, Tn - (bc % ncs) * C), 0))
            elif tx < CPB:
                slot = bc * CPB + tx
                if cfg.varlen:
                    t0, ln = slot_search(cu_seqlens, slot)
                    slot_b[tx] = 0
                    slot_t0[tx] = t0
                    slot_len[tx] = ln
                else:
                    ncs = T.ceildiv(Tn, C)
                    slot_b[tx] = slot // ncs
                    slot_t0[tx] = (slot % ncs) * C
                    slot_len[tx] = T.if_then_else(slot < NC, T.min(C, Tn - (slot % ncs) * C), 0)

            if multi:
                # the sequence's tokens [seq_start, seq_end), its chunks (at most NCH), and what it
                # spills past them (varlen: a broken max_seqlen; fixed: the entry's T <= NR)
                seq_start = T.alloc_var("int32", init=t0_all)
                seq_end = T.alloc_var("int32", init=eos_all if cfg.varlen else Tn)
                n_ch = T.alloc_var("int32", init=T.min(T.ceildiv(seq_end - seq_start, C), NCH))
                spill_m = T.alloc_var("int32", init=seq_end - seq_start - NR)
                for r, e in T.Parallel(NRB, K):
                    krs_s[r, e] = T.Cast(cfg.ws_dtype, 0)
                    Ua_s[r, e] = T.Cast(cfg.ws_dtype, 0)
                if lkr:
                    # the tail's last-chunk product reads v_s and krl even where no chunk ran
                    for r, e in T.Parallel(R, V):
                        v_s[r, e] = T.Cast(cfg.ws_dtype, 0)
                    for i in T.unroll(KLR):
                        for e in T.unroll(KLC):
                            krl[i, e] = T.Cast(cfg.ws_dtype, 0)

            # Guards below repeat what the slot computation ensures, so that each global access's
            # bounds follow from its own condition, which is what `verify` proves.
            # q, k, g by qkg_copies: rows and predicates first, then the copies back to back
            # (TileLang puts a barrier between a copy and a later read of shared memory).
            # short_chunks > 1: the pairwise form walks the sequence's chunks (a Python list of one
            # otherwise, which leaves the one-chunk builds' IR as it was)
            if ne:
                # chunk 0's copies and beta here, each later chunk's during the chunk before
                ld_t = T.alloc_local((NPASS,), "int32")
                ld_b = T.alloc_local((NPASS,), "int32")
                ld_ok = T.alloc_local((NPASS,), "bool")
                braw_n = T.alloc_local((1,), cfg.in_dtype)
                # (the pairwise form builds its length expression once a use: one bound name
                # would change its released IR)
                if wsm:
                    chunk_rows(ld_t, ld_b, ld_ok, t0_all, len_all, b_all, tx)
                    qkg_copies(q, k, g, q_s, k_s, ki_s, ld_t, ld_b, ld_ok, h, hv, tx)
                    beta_row(beta, braw_n, t0_all, len_all, b_all, hv, tx)
                else:
                    chunk_rows(ld_t, ld_b, ld_ok, seq_start, T.min(C, seq_end - seq_start), b_all, tx)
                    qkg_copies(q, k, g, q_s, k_s, ki_s, ld_t, ld_b, ld_ok, h, hv, tx)
                    beta_row(beta, braw_n, seq_start, T.min(C, seq_end - seq_start), b_all, hv, tx)
            if wsm:
                a_h0 = T.alloc_var(accum, init=_math.exp(ah_raw, fast))   # once, not a chunk
            for jc in (T.serial(n_ch) if multi else T.serial(T.min(NW, NC - bc * NW)) if wsm else [0]):
                if multi:
                    t0_all = seq_start + jc * C
                    len_all = T.min(C, seq_end - t0_all)
                if wsm:
                    sl = bc * NW + jc
                    b_all, t0_all, len_all = fixed_slot(sl)
                # the chunk slot the workspace stores go to (bound here: a name bound before the
                # loop would keep the first chunk's slot)
                SL = sl if wsm else bc
                if cfg.head_once and not cfg.lean_prologue:
                    h = T.alloc_var("int32", init=T.min(T.max(head_s[0], 0), H - 1))
                if not ne:
                    # (inline, not chunk_rows and qkg_copies: the macro binds h to a new name,
                    # and after that TileLang's sync pass puts a barrier between the 32-token
                    # varlen inverse's disjoint Ad_s reads and writes; session 51, static SASS)
                    ld_t = T.alloc_local((NPASS,), "int32")
                    ld_b = T.alloc_local((NPASS,), "int32")
                    ld_ok = T.alloc_local((NPASS,), "bool")
                    for it in T.unroll(NPASS):
                        r = it * RPP + tx // LPR
                        if regs:
                            t = t0_all + r
                            ld_ok[it] = r < len_all and t >= 0 and t < Tn and b_all >= 0 and b_all < B
                            ld_t[it] = t
                            ld_b[it] = b_all
                        else:
                            c = r // C
                            t = slot_t0[c] + r % C
                            ld_ok[it] = r % C < slot_len[c] and t >= 0 and t < Tn and slot_b[c] >= 0 and slot_b[c] < B
                            ld_t[it] = t
                            ld_b[it] = slot_b[c]
                    for it in T.unroll(NPASS):
                        r = it * RPP + tx // LPR
                        d8 = tx % LPR
                        bb = T.max(T.min(ld_b[it], B - 1), 0)
                        tt = T.max(T.min(ld_t[it], Tn - 1), 0)
                        T.ptx_cp_async(T.access_ptr(q_s[QO + r, d8 * 8], "w", 8),
                                       T.access_ptr(q[bb, tt, h, d8 * 8], "r", 8), 8, ld_ok[it])
                        T.ptx_cp_async(T.access_ptr(k_s[KO + r, d8 * 8], "w", 8),
                                       T.access_ptr(k[bb, tt, h, d8 * 8], "r", 8), 8, ld_ok[it])
                        T.ptx_cp_async(T.access_ptr(ki_s[r, d8 * 8], "w", 8),
                                       T.access_ptr(g[bb, tt, hv, d8 * 8], "r", 8), 8, ld_ok[it])
                    T.ptx_commit_group()
                if lean:
                    # behind the copies: the earlier chunks' kr rows decay over the chunk before
                    # (its gC, which this thread formed for these two channels in gcl_s)
                    decay_krs(krs_s, gcl_s, NDK, (jc - 1) * C, tx)
                if cfg.early_loads:
                    if not wsm:
                        a_h0 = T.alloc_var(accum, init=_math.exp(ah_raw, fast))
                    # beta of row tx, loaded behind the copies and stored once they have landed
                    braw = T.alloc_var(accum, init=T.Cast(accum, braw_n[0]) if ne else 0.0)
                    if not ne and tx < R:
                        if regs:
                            if tx < len_all and t0_all + tx >= 0 and t0_all + tx < Tn and b_all >= 0 and b_all < B:
                                # (clamped again where used, as the copies' rows)
                                braw = T.Cast(accum, beta[T.max(T.min(b_all, B - 1), 0),
                                                          T.max(T.min(t0_all + tx, Tn - 1), 0), hv])
                        else:
                            cb = tx // C
                            tb = slot_t0[cb] + tx % C
                            if (tx % C < slot_len[cb] and tb >= 0 and tb < Tn and slot_b[cb] >= 0 and slot_b[cb] < B):
                                braw = T.Cast(accum, beta[slot_b[cb], tb, hv])
                T.ptx_wait_group(0)
                T.sync_threads()
                # Shared writes that the passes after the norms read, here rather than between the
                # copies' commit and wait, where TileLang would order them behind the copies with a barrier
                if cfg.early_loads:
                    for j in T.unroll(NBT):
                        if j * cfg.threads + tx < K:
                            nb_s[j * cfg.threads + tx] = a_h0 * dtb[j] * (1.0 if fast or not cfg.ftz else -_math.LOG2E)
                if regs and tx == 0:
                    slot_b[0] = b_all
                    slot_t0[0] = t0_all
                    slot_len[0] = len_all
                # the row norms of q and k over NL lanes a row, VPL 16-byte vectors a lane (lane dl's
                # vectors dl, dl + NL, ...), summed by shuffles (probe norms, measurement only:
                # constants in their place)
                for it in T.unroll(R // NRP if "norms" not in skip else 0):
                    r = it * NRP + tx // NL
                    dl = tx % NL
                    qv = T.alloc_local((8 * VPL,), cfg.in_dtype)
                    kv = T.alloc_local((8 * VPL,), cfg.in_dtype)
                    ss = T.alloc_local((3 if cfg.mqk_diag else 2,), accum)
                    for j in T.unroll(VPL):
                        for i in T.vectorized(8):
                            qv[j * 8 + i] = q_s[QO + r, (j * NL + dl) * 8 + i]
                        for i in T.vectorized(8):
                            kv[j * 8 + i] = k_s[KO + r, (j * NL + dl) * 8 + i]
                    ss[0] = 0.0
                    ss[1] = 0.0
                    if cfg.mqk_diag:
                        ss[2] = 0.0
                    for i in T.unroll(8 * VPL):
                        ss[0] = ss[0] + T.Cast(accum, qv[i]) * T.Cast(accum, qv[i])
                        ss[1] = ss[1] + T.Cast(accum, kv[i]) * T.Cast(accum, kv[i])
                        if cfg.mqk_diag:
                            ss[2] = ss[2] + T.Cast(accum, qv[i]) * T.Cast(accum, kv[i])
                    for m in XORS_NL:
                        ss[0] = ss[0] + T.shfl_xor(ss[0], m)
                        ss[1] = ss[1] + T.shfl_xor(ss[1], m)
                        if cfg.mqk_diag:
                            ss[2] = ss[2] + T.shfl_xor(ss[2], m)
                    if NL != LPR:
                        # every lane of the row takes the rsqrt pair (one a row); lane 0 stores it
                        rq_n = T.alloc_var(accum, init=_math.rsqrt(ss[0] + 1e-6, fast, nr) * scale)
                        rk_n = T.alloc_var(accum, init=_math.rsqrt(ss[1] + 1e-6, fast, nr))
                        if dl == 0:
                            rq_s[r] = rq_n
                            rk_s[r] = rk_n
                            if cfg.mqk_diag:
                                dg_s[r] = ss[2] * rq_n * rk_n
                    elif dl == 0:
                        rq_s[r] = _math.rsqrt(ss[0] + 1e-6, fast, nr) * scale
                        rk_s[r] = _math.rsqrt(ss[1] + 1e-6, fast, nr)
                        if cfg.mqk_diag:
                            dg_s[r] = ss[2] * rq_s[r] * rk_s[r]
                if "norms" in skip and tx < R:
                    rq_s[tx] = scale
                    rk_s[tx] = 1.0
                    if cfg.mqk_diag:
                        dg_s[tx] = scale
                if cfg.early_loads:
                    if tx < R:
                        cb = tx // C
                        live_row = (tx < len_all) if regs else (tx % C < slot_len[cb])
                        beta_s[tx] = T.if_then_else(live_row, sigm(braw, fast), 0.0)
                else:
                    for r in T.Parallel(R):
                        c = r // C
                        valid = (r % C < slot_len[c] and slot_t0[c] + r % C >= 0 and slot_t0[c] + r % C < Tn
                                 and slot_b[c] >= 0 and slot_b[c] < B)
                        beta_s[r] = T.if_then_else(
                            valid, sigm(T.Cast(accum, beta[slot_b[c], slot_t0[c] + r % C, hv]), fast), 0.0)

                if stack and cfg.col_quads:
                    column_pass_quads(q_s, ki_s, kdh_s, rk_s, rq_s, A_log, dt_bias, lower_bound, krs_s,
                                      gcl_s, jc, slot_len, hv, tx, a_h0, nb_s, krl)
                elif stack:
                    column_pass_rows(q_s, ki_s, kdh_s, tot_s, rk_s, rq_s, A_log, dt_bias, lower_bound, krs_s,
                                     gcl_s, jc, slot_len, hv, tx, a_h0, nb_s, krl)
                elif NSUB == 2:
                    column_pass_halves(q_s, k_s, ki_s, kdh_s, tot_s, rk_s, rq_s, A_log, dt_bias, lower_bound,
                                       qd, kr, gC, slot_len, SL, hv, tx, a_h0, nb_s)
                # One (chunk, pair of channels) per thread: the gate's cumsum G in registers, and every
                # output of the two columns formed there and stored as pairs.
                else:
                    for c, d2 in T.Parallel(CPB, K // 2):
                        gcol = T.alloc_local((C, 2), accum)
                        kraw = T.alloc_local((C, 2), cfg.in_dtype)
                        qraw = T.alloc_local((C, 2), cfg.in_dtype)
                        kn = T.alloc_local((2,), accum)
                        qn = T.alloc_local((2,), accum)
                        ep = T.alloc_local((2,), accum)
                        ki = T.alloc_local((2,), accum)
                        gcl = T.alloc_local((2,), accum)
                        nb = T.alloc_local((2,), accum)
                        lbl = lower_bound * _math.LOG2E
                        a_h = gate_args(nb, d2, hv, A_log, dt_bias, a_h0, nb_s)
                        for i in T.unroll(C):
                            for e in T.unroll(2):
                                x = T.Cast(accum, ki_s[c * C + i, d2 * 2 + e])
                                s_ = gate_sigm(a_h, x, nb[e])
                                gcol[i, e] = T.if_then_else(i < slot_len[c], lbl * s_, 0.0)
                        for i in T.unroll(1, C):
                            for e in T.unroll(2):
                                gcol[i, e] = gcol[i, e] + gcol[i - 1, e]
                        # every read of the thread's k_s, q_s before its writes over them: with a read and a
                        # write in one row's iteration, TileLang puts two barriers in each
                        for i in T.unroll(C):
                            for e in T.vectorized(2):
                                kraw[i, e] = k_s[c * C + i, d2 * 2 + e]
                            for e in T.vectorized(2):
                                qraw[i, e] = q_s[c * C + i, d2 * 2 + e]
                        for e in T.unroll(2):
                            gcl[e] = pow2(gcol[C - 1, e], fast)
                        live = slot_len[c] > 0 and bc * CPB + c < NC and "colstore" not in skip
                        for i in T.unroll(C):
                            for e in T.unroll(2):
                                kn[e] = T.Cast(accum, kraw[i, e]) * rk_s[c * C + i]
                                qn[e] = T.Cast(accum, qraw[i, e]) * rq_s[c * C + i]
                                ep[e] = pow2(gcol[i, e], fast)
                                ki[e] = kn[e] * pow2(-gcol[i, e], fast)
                            if short_ht and not multi:
                                # kr in place of kd: the operand of the final state (no Wk here)
                                for e in T.vectorized(2):
                                    kdh_s[c * C + i, d2 * 2 + e] = T.Cast(cfg.ws_dtype, ki[e] * gcl[e])
                            elif not split_k and (not short or multi):
                                for e in T.vectorized(2):
                                    kdh_s[c * C + i, d2 * 2 + e] = T.Cast(cfg.ws_dtype, kn[e] * ep[e])
                            if multi:
                                # kr_j into krs's rows of chunk j (they meet zero rows of U this
                                # chunk), qd in fp16 for Q
                                if lean:
                                    for e in T.vectorized(2):
                                        if jc * C + i < NRB:
                                            krs_s[jc * C + i, d2 * 2 + e] = T.Cast(cfg.ws_dtype, ki[e] * gcl[e])
                                else:
                                    for e in T.vectorized(2):
                                        krs_s[jc * C + i, d2 * 2 + e] = T.Cast(cfg.ws_dtype, ki[e] * gcl[e])
                                for e in T.vectorized(2):
                                    qdh_s[c * C + i, d2 * 2 + e] = T.Cast(cfg.ws_dtype, qn[e] * ep[e])
                            if not short and live:
                                row = (bc * CPB + c) * C + i
                                for e in T.vectorized(2):
                                    qd[hv, row, d2 * 2 + e] = T.Cast(cfg.ws_dtype, qn[e] * ep[e])
                                # kr = k 2^(G_C - G) = ki 2^G_C
                                for e in T.vectorized(2):
                                    kr[hv, row, d2 * 2 + e] = T.Cast(cfg.ws_dtype, ki[e] * gcl[e])
                            for e in T.vectorized(2):
                                ki_s[c * C + i, d2 * 2 + e] = T.Cast(cfg.in_dtype, ki[e])
                            if split_k:
                                for e in T.vectorized(2):
                                    kil_s[c * C + i, d2 * 2 + e] = T.Cast(
                                        cfg.in_dtype, ki[e] - T.Cast(accum, T.Cast(cfg.in_dtype, ki[e])))
                            if split_q:
                                for e in T.vectorized(2):
                                    ql_s[c * C + i, d2 * 2 + e] = T.Cast(
                                        cfg.in_dtype, qn[e] * ep[e] - T.Cast(accum, T.Cast(cfg.in_dtype, qn[e] * ep[e])))
                            for e in T.vectorized(2):
                                k_s[c * C + i, d2 * 2 + e] = T.Cast(cfg.in_dtype, kn[e] * ep[e])
                            for e in T.vectorized(2):
                                q_s[c * C + i, d2 * 2 + e] = T.Cast(cfg.in_dtype, qn[e] * ep[e])
                        if not short and live:
                            for e in T.vectorized(2):
                                gC[hv, bc * CPB + c, d2 * 2 + e] = gcl[e]
                        if multi:
                            for e in T.vectorized(2):
                                gcl_s[d2 * 2 + e] = gcl[e]

                if "lm" not in skip and stack:
                    T.gemm(k_s, ki_s, Lf, transpose_B=True, clear_accum=True)   # [L; Mqk] = [kd; qd] ki^T
                elif "lm" not in skip:
                    T.gemm(k_s, ki_s, Lf, transpose_B=True, clear_accum=True)
                    T.gemm(q_s, ki_s, Mf, transpose_B=True, clear_accum=True)
                    if split_k:
                        T.gemm(q_s, kil_s, Mf, transpose_B=True)
                    if split_q:
                        T.gemm(ql_s, ki_s, Mf, transpose_B=True)

                # v by cp.async into the space q_s and k_s held, as raw bf16 bits in v_s (converted to
                # fp16 in place before the U0 product), in flight behind the L and M extraction, the
                # Mqk store and the inverse. Rows as in the q, k, g copies (V == K).
                if not u0k2:
                    for it in T.unroll(NPASS):
                        r = it * RPP + tx // LPR
                        e8 = tx % LPR
                        T.ptx_cp_async(T.access_ptr(v_s[r, e8 * 8], "w", 8),
                                       T.access_ptr(v[T.max(T.min(ld_b[it], B - 1), 0), T.max(T.min(ld_t[it], Tn - 1), 0),
                                                      hv, e8 * 8], "r", 8), 8,
                                       ld_ok[it] and "v" not in skip)
                    T.ptx_commit_group()
                if wsm:
                    # slot jc + 1's copies and beta (none after the last), q_s, k_s and ki_s read by
                    # the products above
                    b_n, t0_n, len_n = fixed_slot(T.min(bc * NW + jc + 1, NC - 1))
                    len_n = T.if_then_else(jc + 1 < T.min(NW, NC - bc * NW), len_n, 0)
                    chunk_rows(ld_t, ld_b, ld_ok, t0_n, len_n, b_n, tx)
                    qkg_copies(q, k, g, q_s, k_s, ki_s, ld_t, ld_b, ld_ok, h, hv, tx)
                    beta_row(beta, braw_n, t0_n, len_n, b_n, hv, tx)
                elif ne:
                    # chunk jc + 1's copies (none past the last chunk), q_s and ki_s read by the
                    # product above; and its beta (this chunk's went into beta_s before)
                    t0_n = seq_start + (jc + 1) * C
                    len_n = T.if_then_else(jc + 1 < n_ch, T.min(C, seq_end - t0_n), 0)
                    chunk_rows(ld_t, ld_b, ld_ok, t0_n, len_n, b_all, tx)
                    qkg_copies(q, k, g, q_s, k_s, ki_s, ld_t, ld_b, ld_ok, h, hv, tx)
                    beta_row(beta, braw_n, t0_n, len_n, b_all, hv, tx)

                if "lm" not in skip and stack:
                    # one chunk (R == C): rows [0, C) of the stacked product are L's, [C, 2C) Mqk's
                    # (one loop: TileLang 0.1.15 lays out no loop over half of a fragment's rows)
                    for r2, j in T.Parallel(2 * C, C):
                        if r2 < C:
                            L_s[r2, j] = T.if_then_else(r2 > j, Lf[r2, j] * beta_s[r2], 0.0)
                        else:
                            M_s[r2 - C, j] = T.if_then_else(r2 - C > j, Lf[r2, j],
                                                            T.if_then_else(r2 - C == j, dg_s[r2 - C], 0.0))
                elif "lm" not in skip:
                    for r, j in T.Parallel(R, R):
                        if r // C == j // C:
                            L_s[r, j % C] = T.if_then_else(r % C > j % C, Lf[r, j] * beta_s[r], 0.0)
                            if cfg.mqk_diag:
                                M_s[r, j % C] = T.Cast(M_s.dtype, T.if_then_else(r % C > j % C, Mf[r, j],
                                                                          T.if_then_else(r % C == j % C, dg_s[r], 0.0)))
                            else:
                                M_s[r, j % C] = T.if_then_else(r % C >= j % C, Mf[r, j], 0.0)

                    if not short:
                        for r, j in T.Parallel(R, C):
                            c = r // C
                            if unguarded or (slot_len[c] > 0 and bc * CPB + c < NC):
                                Mqk[hv, (SL * CPB + c) * C + r % C, j] = T.Cast(cfg.mat_dtype, M_s[r, j])
                # the off-diagonal blocks of the block-diagonal Ab
                for r, j in T.Parallel(R, R):
                    if r // C != j // C:
                        Ab_s[r, j] = T.Cast(cfg.mat_dtype, 0)
                        if split_k:
                            Abb_s[r, j] = T.Cast(cfg.in_dtype, 0)

                if NSUB == 2:
                    block_inverse(L_s, Ad_s, X_s, Ab_s, beta_s)
                elif cfg.inv_blocks:
                    inverse_halves(L_s, tot_s, Ab_s, beta_s)
                else:
                    # A = (I + L)^-1 by forward substitution, A[i, :] = e_i - sum_{m < i} L[i, m] A[m, :]:
                    # the thread of (chunk, column j) keeps column j of A in registers.
                    for c, j in T.Parallel(CPB, C):
                        acol = T.alloc_local((C,), accum)
                        substitute_column(L_s, c * C, 0, C, j, acol)
                        for i in T.unroll(C):
                            Ab_s[c * C + i, c * C + j] = T.Cast(cfg.mat_dtype, acol[i] * beta_s[c * C + j])
                            if split_k:
                                Abb_s[c * C + i, c * C + j] = T.Cast(cfg.in_dtype, acol[i] * beta_s[c * C + j])

                if u0k2:
                    # Ab's diagonal blocks, K2's operand of U0 = Ab v
                    for r, j in T.Parallel(R, C):
                        c = r // C
                        if unguarded or (slot_len[c] > 0 and bc * CPB + c < NC):
                            if cfg.ab_halves:
                                # hi's C rows, then lo's (K2Config.v_ss)
                                ab_hi = T.Cast(cfg.in_dtype, Ab_s[r, c * C + j])
                                Ab[hv, 2 * (SL * CPB + c) * C + r % C, j] = ab_hi
                                Ab[hv, (2 * (SL * CPB + c) + 1) * C + r % C, j] = T.Cast(
                                    cfg.in_dtype, T.Cast(accum, Ab_s[r, c * C + j]) - T.Cast(accum, ab_hi))
                            else:
                                Ab[hv, (SL * CPB + c) * C + r % C, j] = Ab_s[r, c * C + j]
                else:
                    # v in fp16 (|v| must stay below 65504, as K2's state): each thread converts the
                    # bytes it copied (with next_early the next chunk's copies stay in flight)
                    T.ptx_wait_group(1 if ne else 0)
                    vr = T.alloc_local((NPASS * 8,), cfg.ws_dtype)
                    vh = T.alloc_local((NPASS * 8,), cfg.ws_dtype)
                    for it in T.unroll(NPASS):
                        for i in T.vectorized(8):
                            vr[it * 8 + i] = v_s[it * RPP + tx // LPR, tx % LPR * 8 + i]
                    for j in T.unroll(NPASS * 8):
                        vh[j] = T.Cast(cfg.ws_dtype, T.reinterpret(vr[j], cfg.in_dtype))
                    for it in T.unroll(NPASS):
                        for i in T.vectorized(8):
                            v_s[it * RPP + tx // LPR, tx % LPR * 8 + i] = vh[it * 8 + i]
                # Wk = Ab kd and U0 = Ab v; with u0_in_k2, -Wk (K2 accumulates U = v^T Ab^T - S Wk^T)
                if short:
                    # U = Ab v (- P U_<j) over v, then o = Mqk U (+ Q U_<j) with Mqk over Ab: K2's
                    # roundings (fp16 operands, fp32 accumulation). The one-chunk form has no
                    # earlier rows; the pairwise form first forms Wk = Ab kd over kd (fp16), then
                    # -P = -(Wk krs^T) and Q = qd krs^T (zero in the first chunk: skipped)
                    if multi:
                        T.gemm(Ab_s, kdh_s[0:R, :] if stack else kdh_s, WU, clear_accum=True)
                        for r, e in T.Parallel(R, K):
                            kdh_s[r, e] = T.Cast(cfg.ws_dtype, WU[r, e])
                        # short_lean_rows: in the first chunk too (U's rows are zero there, so the
                        # sums are exact), so that every chunk passes as many barriers: verify
                        # orders one chunk's accesses against another's by their counts
                        if jc > 0 or lean:
                            if stack:
                                T.gemm(kdh_s, krs_s, Pf, transpose_B=True, clear_accum=True)   # [P; Q]
                            else:
                                T.gemm(kdh_s, krs_s, Pf, transpose_B=True, clear_accum=True)
                                T.gemm(qdh_s, krs_s, Qf, transpose_B=True, clear_accum=True)
                            if stack:
                                # -P over Q, one store a thread: with an if over the halves, TileLang
                                # 0.1.15 hoists both halves' vectorized cast stores out of the branch
                                for r2, j in T.Parallel(2 * R, NRB):
                                    P_s[r2, j] = T.Cast(cfg.ws_dtype, T.if_then_else(r2 < R, -Pf[r2, j], Pf[r2, j]))
                            else:
                                for r, j in T.Parallel(R, NRB):
                                    P_s[r, j] = T.Cast(cfg.ws_dtype, -Pf[r, j])
                                    Q_s[r, j] = T.Cast(cfg.ws_dtype, Qf[r, j])
                    T.gemm(Ab_s, v_s, WU, clear_accum=True)
                    if multi:
                        if jc > 0 or lean:
                            T.gemm(P_s[0:R, :] if stack else P_s, Ua_s, WU)
                    for r, e in T.Parallel(R, V):
                        v_s[r, e] = T.Cast(cfg.ws_dtype, WU[r, e])
                    for r, j in T.Parallel(R, C):
                        Ab_s[r, j] = T.Cast(cfg.mat_dtype, M_s[r, j])
                    T.gemm(Ab_s, v_s, WU, clear_accum=True)
                    if multi:
                        if jc > 0 or lean:
                            T.gemm(P_s[R:2 * R, :] if stack else Q_s, Ua_s, WU)
                    # varlen: a sequence longer than the chunks breaks the caller's max_seqlen; its
                    # rows and state become NaN rather than a wrong answer
                    spill = spill_m if multi else (
                        T.alloc_var("int32", init=eos_all - t0_all - C) if short_varlen else None)

                    for r, e in T.Parallel(R, V):
                        if r < len_all and t0_all + r >= 0 and t0_all + r < Tn and b_all >= 0 and b_all < B:
                            o[b_all, t0_all + r, hv, e] = T.Cast(cfg.in_dtype, nan_if(spill, WU[r, e]))
                    if multi:
                        # U_j joins U's rows, and the earlier chunks' kr decay over chunk j (with
                        # short_lean_rows at the next chunk's start, and after the last)
                        if lean:
                            for r, e in T.Parallel(R, V):
                                if jc * C + r < NRB:
                                    Ua_s[jc * C + r, e] = v_s[r, e]
                        else:
                            for r, e in T.Parallel(R, V):
                                Ua_s[jc * C + r, e] = v_s[r, e]
                            for r, e in T.Parallel(NR, K):
                                if r < jc * C:
                                    krs_s[r, e] = T.Cast(cfg.ws_dtype, T.Cast(accum, krs_s[r, e]) * gcl_s[e])
                    else:
                        # S^T = U0^T kr (kr where kd was)
                        short_tail(o, ht, Sf, v_s, kdh_s, C, t0_all, eos_all if short_varlen else None, spill,
                                   bc, b_all, hv)
                elif "ab" not in skip:
                    if split_k:
                        ab_product(Abb_s, k_s, wk_s, WU, Wk, slot_len, bc, hv)
                    else:
                        ab_product(Ab_s, kdh_s, kdh_s, WU, Wk, slot_len, SL, hv, u0k2)
                    if not u0k2:
                        ab_product(Ab_s, v_s, v_s, WU, U0, slot_len, bc, hv)
            if wsm:
                # the last chunk's predicated-off copies land before the program ends
                T.ptx_wait_group(0)
            if multi:
                if ne:
                    # the zero fill past the last chunk lands before the program ends
                    T.ptx_wait_group(0)
                if lkr:
                    # the last chunk's kr rows from registers into kdh_s (free after its P, Q
                    # product), beside its U in v_s
                    rg, cg = column_cell(tx, cfg.col_quads)
                    for i in T.unroll(KLR):
                        for e in T.vectorized(KLC):
                            kdh_s[rg * KLR + i, cg * KLC + e] = krl[i, e]
                if lean and short_ht:
                    # the final state's kr rows: the chunks before the last decay over it (the
                    # barrier orders the rows' zero fill before these reads where an empty
                    # sequence runs no chunk: verify's barriers.race found it)
                    T.sync_threads()
                    decay_krs(krs_s, gcl_s, NR - CHUNK, (n_ch - 1) * C, tx)
                if lkr:
                    short_tail(o, ht, Sf, Ua_s, krs_s, NR, seq_start, seq_end, spill_m, bc, b_all, hv, v_s, kdh_s)
                else:
                    short_tail(o, ht, Sf, Ua_s, krs_s, NR, seq_start, seq_end, spill_m, bc, b_all, hv)

    # One signature; a fixed batch drops cu_seqlens, so that it stays out of the IR that `verify`
    # and `host_codegen` read.
    @T.prim_func
    def k1_prepare(
        q: T.Tensor((B, Tn, H, K), cfg.in_dtype),
        k: T.Tensor((B, Tn, H, K), cfg.in_dtype),
        v: T.Tensor((B, Tn, HV, V), cfg.in_dtype),
        g: T.Tensor((B, Tn, HV, K), cfg.in_dtype),
        beta: T.Tensor((B, Tn, HV), cfg.in_dtype),
        A_log: T.Tensor((HV,), "float32"),
        dt_bias: T.Tensor((HV, K), "float32"),
        cu_seqlens: T.Tensor((N1,), "int64"),
        lower_bound: T.float32,
        scale: T.float32,
        Wk: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
        qd: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
        kr: T.Tensor((HV, NC * C, K), cfg.ws_dtype),
        U0: T.Tensor((HV, NC * C, V), cfg.ws_dtype),
        Ab: T.Tensor((HV, 2 * NC * C, C), cfg.in_dtype) if cfg.ab_halves else T.Tensor((HV, NC * C, C), cfg.mat_dtype),
        Mqk: T.Tensor((HV, NC * C, C), cfg.mat_dtype),
        gC: T.Tensor((HV, NC, K), "float32"),
        o: T.Tensor((B, Tn, HV, V), cfg.in_dtype),
        ht: T.Tensor((NH, HV, V, K), "float32"),
    ):
        _body(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, lower_bound, scale, Wk, qd, kr, U0, Ab, Mqk, gC, o, ht)

    absent = ([] if cfg.varlen else ["cu_seqlens"]) + (["v", "U0"] if u0k2 else ["Ab"])
    if short:
        absent = ([] if cfg.varlen else ["cu_seqlens"]) + ["Wk", "qd", "kr", "U0", "Ab", "Mqk", "gC"]
    else:
        absent.append("o")
    if not short_ht:
        absent.append("ht")
    return _tir.drop_params(k1_prepare, absent)
