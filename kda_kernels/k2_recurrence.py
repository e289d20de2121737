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

The sequence split (K2Config.mode; docs/math.md section 4). Per chunk St -> St P + Q with
P = diag(gC) - Wk^T kr and Q = U0^T kr, the same P for every row, so a segment of chunks maps
S_start to S_start M + B. A sequence is cut into segments of L chunks (L a scalar parameter, G
segments in the grid's z); pass A ("map") runs each segment with V rows started at zero (they
end at B) and K rows started at the identity with U0 taken as zero (they end at M):

    Ut   = u0s U0^T - Sh Wk^T               (u0s = 1 for value rows, 0 for identity rows)
    St   = St diag(gC) + Ut kr

and writes maps[n, g] = [B; M], no output (a segment past the sequence's end writes [0; I]).
kda_kernels/k2_scan.py composes the maps in fp32 into each segment's start state; pass C ("seg")
runs the full step above over each segment from it.
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


def wy_map_step(BV, K, C, op):
    """One chunk of pass A for a warpgroup's BV rows: no output, U0 scaled by u0s (0 for the
    identity rows that carry M)."""
    f32 = "float32"

    @T.macro
    def step(s, u0_col, u0s, St, Sh, WO, Uh, Wk_r, kr_r, U0_r, gC_r):
        T.copy(St, Sh)
        T.wgmma_gemm(Sh, Wk_r[s, :, :], WO, transpose_B=True, clear_accum=True)
        T.wait_wgmma(0)
        for j, d in T.Parallel(BV, K):
            St[j, d] = St[j, d] * gC_r[s, d]
        for j, r in T.Parallel(BV, C):
            Uh[j, r] = T.Cast(op, u0s * T.Cast(f32, U0_r[s, r, u0_col + j]) - WO[j, r])
        T.wgmma_gemm(Uh, kr_r[s, :, :], St)
        T.wait_wgmma(0)
    return step


@T.macro
def _ab_products(A, Ab_r, s, C, WO, from_slot, lo):
    """WO += A hi^T (+ A lo^T) for Ab's bf16 halves in slot s (K2Config.v_ss); A is v^T read from
    its slot (transposed) or Vt from registers."""
    T.wgmma_gemm(A, Ab_r[s, 0:C, :], WO, transpose_A=from_slot, transpose_B=True)
    if lo:
        T.wgmma_gemm(A, Ab_r[s, C:2 * C, :], WO, transpose_A=from_slot, transpose_B=True)


def wy_v_step(BV, K, C, op, outputs, with_v=True, v_ss=False, ab_lo=True, mask_tail=False):
    """One chunk of the chain (outputs) or of pass A with K2Config.u0_in_k2: U0 = Ab v formed in
    the accumulator of Sh (-Wk)^T (K1 writes -Wk and Ab in fp16) from v's ring slot, whose rows at
    and past `rem` read as 0 (the next sequence's tokens, whatever they hold, stay out; pass A's
    identity rows take rem = 0, or with_v=False, K2Config.lean_id: no v and no U0 product):

        Vt   = fp16(v^T)                        (as K1 rounded v for U0 before)
        Ut   = Sh (-Wk)^T + Vt Ab^T

    Vt's loads come after Sh (-Wk)^T is issued, so that they run beside it: before it, wgmma's
    fence waits for them (+24% at H96 1x8192; bench/NOTES.md, session 17). With v_ss (K2Config)
    v^T is the shared A operand in bf16 and Ab two bf16 halves, hi's C rows then lo's in its slot:

        Ut   = Sh (-Wk)^T + v^T hi^T + v^T lo^T"""

    @T.macro
    def step(s, u0_col, rem, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, v_r, Ab_r, Mqk_r, gC_r):
        T.copy(St, Sh)
        T.wgmma_gemm(Sh, Wk_r[s, :, :], WO, transpose_B=True, clear_accum=True)
        if v_ss:
            # (a varlen tail's slot holds the next sequence's v in its rows past this one: those
            # go through registers, masked)
            if mask_tail and rem < C:
                for j, r in T.Parallel(BV, C):
                    Vt[j, r] = T.if_then_else(r < rem, v_r[s, r, u0_col + j], T.Cast(Vt.dtype, 0))
                _ab_products(Vt, Ab_r, s, C, WO, False, ab_lo)
            else:
                _ab_products(v_r[s, :, u0_col:u0_col + BV], Ab_r, s, C, WO, True, ab_lo)
        elif with_v:
            for j, r in T.Parallel(BV, C):
                Vt[j, r] = T.if_then_else(r < rem, T.Cast(op, v_r[s, r, u0_col + j]), T.Cast(op, 0))
            T.wgmma_gemm(Vt, Ab_r[s, :, :], WO, transpose_B=True)
        if outputs:
            T.wgmma_gemm(Sh, qd_r[s, :, :], Oa, transpose_B=True, clear_accum=True)
            T.wait_wgmma(1)
        else:
            T.wait_wgmma(0)
        for j, d in T.Parallel(BV, K):
            St[j, d] = St[j, d] * gC_r[s, d]
        for j, r in T.Parallel(BV, C):
            Uh[j, r] = T.Cast(op, WO[j, r])
        T.wgmma_gemm(Uh, kr_r[s, :, :], St)
        if outputs:
            T.wgmma_gemm(Uh, Mqk_r[s, :, :], Oa, transpose_B=True)
        T.wait_wgmma(0)
    return step


def build_k2(cfg: K2Config):
    K, V, C = cfg.head_dim, cfg.value_dim, cfg.chunk
    NW = cfg.consumers
    BV = 64
    BP = BV * NW
    S = cfg.stages
    mode = cfg.mode
    assert V % BP == 0 and K % BP == 0 and NW in (1, 2) and mode in ("full", "map", "seg")
    assert mode == "full" or (cfg.initial_state is None and not cfg.final_state)
    f32, op, bf = "float32", cfg.ws_dtype, cfg.in_dtype
    creg, preg = cfg.regs
    launch = cfg.launch_regs
    if NW * creg + preg > (NW + 1) * launch:
        raise ValueError(f"{cfg.name}: {NW} x {creg} + {preg} registers a thread asked for; "
                         f"the launch provides {NW + 1} x {launch}")

    SPP = cfg.seqs_per_program
    assert SPP == 1 or (cfg.varlen and mode == "full" and not cfg.unroll_ring and cfg.u0_in_k2), \
        f"{cfg.name}: several sequences a program take a varlen chain with u0_in_k2"
    LF = cfg.longest_first
    assert cfg.probe != "no_load" or (cfg.u0_in_k2 and mode == "full" and SPP == 1), \
        f"{cfg.name}: probe no_load is for the full chain with u0_in_k2, one sequence a program"
    assert not LF or (cfg.varlen and mode == "full" and SPP == 1), f"{cfg.name}: longest_first is varlen, full, spp 1"

    B = T.dynamic("B")
    Tn = T.dynamic("T")
    HV = T.dynamic("HV")
    NC = T.dynamic("NC")
    N1 = T.dynamic("N1")
    G = T.dynamic("G") if mode != "full" else 1
    NS = N1 - 1 if cfg.varlen else B
    h0_dtype = cfg.initial_state or f32
    ht_dtype = cfg.final_state_dtype or f32
    # the state rows a (sequence or segment, head) has: pass A adds K identity rows
    ROWS = V + K if mode == "map" else V
    outputs = mode != "map"
    u0k2 = cfg.u0_in_k2
    lean = cfg.lean_id
    assert not lean or (mode == "map" and u0k2), f"{cfg.name}: lean_id is pass A's with u0_in_k2"
    vss = cfg.v_ss
    assert not vss or u0k2, f"{cfg.name}: v_ss forms U0 in K2 (u0_in_k2)"
    assert cfg.probe != "no_lo" or vss, f"{cfg.name}: probe no_lo is v_ss's"
    if u0k2:
        step = wy_v_step(BV, K, C, op, outputs, v_ss=vss, ab_lo=cfg.probe != "no_lo", mask_tail=cfg.varlen)
        id_step = wy_v_step(BV, K, C, op, outputs, with_v=False) if lean else None
    else:
        step = wy_chain_step(BV, K, C, op) if outputs else wy_map_step(BV, K, C, op)
    # Pass A has no tensor that fixes T: its token indices are clamped to the last token that NC
    # allows, which is T or past it (valid cu_seqlens give the same segments as pass C's; any
    # contents stay inside the buffers through the clamps on nch).
    Tc = Tn if outputs or u0k2 else ((NC - NS) * C + C - 1 if cfg.varlen else NC // B * C)

    @T.macro
    def chunk(c, s, par, w, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full, empty, o, b, hv,
              bos, seqlen, v0, u0s):
        """Chunk c of the consumer's chain from ring slot s (its full barrier's parity par)."""
        T.barrier_wait(full[s], par)
        if lean:
            # (v0 < V is the same for the whole program)
            if v0 < V:
                step(s, w * BV, seqlen - c * C, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r)
            else:
                id_step(s, w * BV, 0, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r)
        elif u0k2:
            # v's rows inside the sequence (none for pass A's identity rows)
            rem = T.if_then_else(v0 < V, seqlen - c * C, 0)
            step(s, w * BV, rem, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r)
        elif outputs:
            step(s, w * BV, St, Sh, WO, Oa, Uh, Wk_r, qd_r, kr_r, U0_r, Mqk_r, gC_r)
        else:
            step(s, w * BV, u0s, St, Sh, WO, Uh, Wk_r, kr_r, U0_r, gC_r)
        T.barrier_arrive(empty[s])
        if outputs and cfg.probe != "no_store":
            if cfg.store == "whole" and c * C + C <= seqlen:
                # a whole chunk's rows without a predicate each (K2Config.pass_configs)
                for j, r in T.Parallel(BV, C):
                    o[b, bos + c * C + r, hv, v0 + j] = T.Cast(bf, Oa[j, r])
            else:
                for j, r in T.Parallel(BV, C):
                    if c * C + r < seqlen:
                        o[b, bos + c * C + r, hv, v0 + j] = T.Cast(bf, Oa[j, r])

    @T.macro
    def consumer(w, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full, empty,
                 h0, o, ht, b, n, gs, hv, vb, bos, seqlen, nch):
        T.set_max_nreg(creg, 1)
        v0 = vb * BP + w * BV
        if mode == "seg":
            T.copy(h0[n, gs, hv, v0:v0 + BV, :], St)
        elif mode == "map":
            # value rows from zero, identity rows (v0 >= V) from I
            for j, d in T.Parallel(BV, K):
                St[j, d] = T.if_then_else(v0 + j - V == d, 1.0, 0.0)
        elif cfg.initial_state is not None:
            T.copy(h0[n, hv, v0:v0 + BV, :], St)
        else:
            T.clear(St)
        u0s = T.if_then_else(v0 < V, 1.0, 0.0)
        if cfg.unroll_ring:
            # the ring's period unrolled: each copy's slot is a constant (its descriptors too)
            for c3 in T.serial(T.ceildiv(nch, S)):
                for u in T.unroll(S):
                    if c3 * S + u < nch:
                        chunk(c3 * S + u, u, c3 % 2, w, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r,
                              Mqk_r, gC_r, full, empty, o, b, hv, bos, seqlen, v0, u0s)
        else:
            for c in T.serial(nch):
                chunk(c, c % S, (c // S) % 2, w, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r,
                      gC_r, full, empty, o, b, hv, bos, seqlen, v0, u0s)
        if mode == "map":
            T.copy(St, ht[n, gs, hv, v0:v0 + BV, :])
        elif cfg.final_state:
            T.copy(St, ht[n, hv, v0:v0 + BV, :])

    @T.macro
    def ring_copies(c, s, Wk, qd, kr, U0, Ab, v, Mqk, gC, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full,
                    b, hv, ub, vrows, bos, slot0):
        """Chunk c's copies into ring slot s, on full[s]."""
        row0 = (slot0 + c) * C
        T.tma_copy(Wk[hv, row0:row0 + C, :], Wk_r[s, :, :], barrier=full[s])
        if outputs:
            T.tma_copy(qd[hv, row0:row0 + C, :], qd_r[s, :, :], barrier=full[s])
        T.tma_copy(kr[hv, row0:row0 + C, :], kr_r[s, :, :], barrier=full[s])
        if u0k2:
            if vrows:
                # v's rows past T arrive as zeros (TMA); those past the sequence, masked in the step
                t0 = bos + c * C
                T.tma_copy(v[b, t0:t0 + C, hv, ub * BP:(ub + 1) * BP], U0_r[s, :, :], barrier=full[s])
                if vss:
                    # chunk c's hi rows, then its lo rows (probe no_lo: hi only)
                    ab_rows = C if cfg.probe == "no_lo" else 2 * C
                    T.tma_copy(Ab[hv, 2 * row0:2 * row0 + ab_rows, :], Ab_r[s, 0:ab_rows, :], barrier=full[s])
                else:
                    T.tma_copy(Ab[hv, row0:row0 + C, :], Ab_r[s, :, :], barrier=full[s])
        else:
            T.tma_copy(U0[hv, row0:row0 + C, ub * BP:(ub + 1) * BP], U0_r[s, :, :], barrier=full[s])
        if outputs:
            T.tma_copy(Mqk[hv, row0:row0 + C, :], Mqk_r[s, :, :], barrier=full[s])
        T.tma_copy(gC[hv, slot0 + c, :], gC_r[s, :], barrier=full[s])

    @T.macro
    def loader(tx, Wk, qd, kr, U0, Ab, v, Mqk, gC, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full, empty,
               b, hv, vb, bos, slot0, nch):
        T.set_max_nreg(preg, 0)
        ub = vb % (V // BP)
        # lean_id: only the value-row programs of pass A read v and Ab
        vrows = vb * BP < V if lean else True
        if tx - NW * WARPGROUP < 32:
            for c in T.serial(nch):
                s = c % S
                T.barrier_wait(empty[s], (c // S + 1) % 2)
                args = (Wk, qd, kr, U0, Ab, v, Mqk, gC, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full,
                        b, hv, ub, vrows, bos, slot0)
                if cfg.probe == "no_load":
                    # probe no_load (measurement only: the chain and its stores without the ring's
                    # DRAM traffic): the first S chunks fill the ring, later chunks reuse its data
                    if c < S:
                        ring_copies(c, s, *args)
                else:
                    ring_copies(c, s, *args)
                T.barrier_arrive(full[s])

    @T.macro
    def seq_bounds(cu_seqlens, n):
        """(bos, seqlen, first slot, chunks) of sequence n, clamped as in the one-sequence path."""
        bos = _math.token_index(cu_seqlens[n], Tc)
        seqlen = T.max(_math.token_index(cu_seqlens[n + 1], Tc), bos) - bos
        slot0 = T.max(bos // C + n, 0)
        return bos, seqlen, slot0, T.max(T.min(T.ceildiv(seqlen, C), NC - slot0), 0)

    @T.macro
    def consumer_seqs(w, count, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full, empty,
                      cu_seqlens, h0, o, ht, p, hv, vb):
        """A consumer over the program's SPP sequences; count[0] counts its chunks across them (the
        ring's slot count % S and parity (count // S) % 2, in step with the loader's count)."""
        T.set_max_nreg(creg, 1)
        v0 = vb * BP + w * BV
        u0s = T.if_then_else(v0 < V, 1.0, 0.0)
        for q in T.serial(SPP):
            n = p * SPP + q
            if n < NS:
                bos, seqlen, _, nch = seq_bounds(cu_seqlens, n)
                if cfg.initial_state is not None:
                    T.copy(h0[n, hv, v0:v0 + BV, :], St)
                else:
                    T.clear(St)
                for c in T.serial(nch):
                    chunk(c, count[0] % S, (count[0] // S) % 2, w, St, Sh, WO, Oa, Uh, Vt, Wk_r, qd_r, kr_r, U0_r, Ab_r,
                          Mqk_r, gC_r, full, empty, o, 0, hv, bos, seqlen, v0, u0s)
                    count[0] = count[0] + 1
                if cfg.final_state:
                    T.copy(St, ht[n, hv, v0:v0 + BV, :])

    @T.macro
    def loader_seqs(tx, count, Wk, qd, kr, Ab, v, Mqk, gC, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r, full, empty,
                    cu_seqlens, p, hv, vb):
        T.set_max_nreg(preg, 0)
        ub = vb % (V // BP)
        if tx - NW * WARPGROUP < 32:
            for q in T.serial(SPP):
                n = p * SPP + q
                if n < NS:
                    bos, _, slot0, nch = seq_bounds(cu_seqlens, n)
                    for c in T.serial(nch):
                        s = count[0] % S
                        T.barrier_wait(empty[s], (count[0] // S + 1) % 2)
                        ring_copies(c, s, Wk, qd, kr, None, Ab, v, Mqk, gC, Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r,
                                    gC_r, full, 0, hv, ub, True, bos, slot0)
                        T.barrier_arrive(full[s])
                        count[0] = count[0] + 1

    @T.macro
    def _body(Wk, qd, kr, U0, Ab, v, Mqk, gC, cu_seqlens, h0, o, ht, L=None, order=None):
        # the split: G segments of L chunks a sequence (L a scalar parameter that the host derives
        # with G from the shapes, G L >= a sequence's chunks; kda_kernels.configs.split_plan)
        # The sequence is grid x (up to 2^31 - 1; y and z stop at 65535), by = hv * (ROWS / BP) + vb,
        # and the split's segment is z (its own grid index, so that `verify` bounds gs * L).
        # longest_first: the sequence's rank in `order` is y, the slower digit of the launch order,
        # so that the programs of the longest sequences launch first (N <= 65535)
        grid = ((HV * (ROWS // BP), NS) if LF
                else (T.ceildiv(NS, SPP) if SPP > 1 else NS, HV * (ROWS // BP)) if mode == "full"
                else (NS, HV * (ROWS // BP), G))
        with T.Kernel(*grid, threads=cfg.threads) as bxyz:
            if LF:
                hb = bxyz[0]
                ent = order[bxyz[1]]
                if ent < 0 or ent >= NS:
                    T.thread_return()     # block-uniform: not a sequence
                n = T.max(T.min(ent, NS - 1), 0)
                hv = hb // (ROWS // BP)
                vb = hb % (ROWS // BP)
            else:
                n = bxyz[0]
                hv = bxyz[1] // (ROWS // BP)
                vb = bxyz[1] % (ROWS // BP)
            gs = 0 if mode == "full" else bxyz[2]
            Wk_r = T.alloc_shared((S, C, K), op)
            qd_r = T.alloc_shared((S, C, K), op) if outputs else None
            kr_r = T.alloc_shared((S, C, K), op)
            # U0's slot, or v's with u0_in_k2 (then Ab's slot too)
            U0_r = T.alloc_shared((S, C, BP), bf if u0k2 else op)
            Ab_r = (T.alloc_shared((S, 2 * C, C), bf) if vss else T.alloc_shared((S, C, C), op)) if u0k2 else None
            Mqk_r = T.alloc_shared((S, C, C), op) if outputs else None
            gC_r = T.alloc_shared((S, K), f32)
            full = T.alloc_barrier(arrive_count=[32] * S)
            empty = T.alloc_barrier(arrive_count=[NW * WARPGROUP] * S)

            frags = [(T.alloc_fragment((BV, K), f32), T.alloc_fragment((BV, K), op), T.alloc_fragment((BV, C), f32),
                      T.alloc_fragment((BV, C), f32) if outputs else None, T.alloc_fragment((BV, C), op),
                      T.alloc_fragment((BV, C), bf if vss else op) if u0k2 else None)
                     for _ in range(NW)]

            if cfg.min_blocks:
                T.annotate_min_blocks_per_sm(cfg.min_blocks)

            if SPP > 1:
                ring = (Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r)
                count = T.alloc_local((1,), "int32")
                count[0] = 0
                tx = T.get_thread_binding()
                if tx < WARPGROUP:
                    consumer_seqs(0, count, *frags[0], *ring, full, empty, cu_seqlens, h0, o, ht, n, hv, vb)
                elif NW == 2 and tx < 2 * WARPGROUP:
                    consumer_seqs(1, count, *frags[-1], *ring, full, empty, cu_seqlens, h0, o, ht, n, hv, vb)
                else:
                    loader_seqs(tx, count, Wk, qd, kr, Ab, v, Mqk, gC, *ring, full, empty, cu_seqlens, n, hv, vb)
            else:
                bos = T.alloc_var("int32", init=0)
                seqlen = T.alloc_var("int32", init=0)
                slot0 = T.alloc_var("int32", init=0)
                if cfg.varlen:
                    # Clamped as in K1, so that any cu_seqlens contents stay inside the buffers;
                    # the sequence's first chunk slot is bos // C + n (see K1).
                    bos = _math.token_index(cu_seqlens[n], Tc)
                    seqlen = T.max(_math.token_index(cu_seqlens[n + 1], Tc), bos) - bos
                    slot0 = bos // C + n
                else:
                    seqlen = Tc
                    slot0 = n * T.ceildiv(Tc, C)
                slot0 = T.max(slot0, 0)
                nch = T.max(T.min(T.ceildiv(seqlen, C), NC - slot0), 0)
                b = 0 if cfg.varlen else n
                ring = (Wk_r, qd_r, kr_r, U0_r, Ab_r, Mqk_r, gC_r)
                tx = T.get_thread_binding()
                if mode == "full":
                    args = (*ring, full, empty, h0, o, ht, b, n, gs, hv, vb, bos, seqlen, nch)
                    first = (bos, slot0)
                else:
                    # segment gs: chunks [gs L, gs L + L) of the sequence, cut at its end (the segments
                    # past it run no chunk: pass A writes their map as the identity)
                    c0 = T.alloc_var("int32", init=0)
                    c0 = T.min(gs * L, nch)
                    nch = T.min(L, nch - c0)
                    args = (*ring, full, empty, h0, o, ht, b, n, gs, hv, vb, bos + c0 * C, seqlen - c0 * C, nch)
                    first = (bos + c0 * C, slot0 + c0)
                if tx < WARPGROUP:
                    consumer(0, *frags[0], *args)
                elif NW == 2 and tx < 2 * WARPGROUP:
                    consumer(1, *frags[-1], *args)
                else:
                    # (b only where used: a macro argument renames the grid variable in the IR)
                    loader(tx, Wk, qd, kr, U0, Ab, v, Mqk, gC, *ring, full, empty, b if u0k2 else None, hv, vb,
                           *first, nch)

    # A fresh T.Tensor per parameter: parameters annotated with one shared T.Tensor object become
    # one buffer (TileLang 0.1.x; `verify` checks it: model.params).
    ws = dict(
        Wk=T.Tensor((HV, NC * C, K), op),
        qd=T.Tensor((HV, NC * C, K), op),
        kr=T.Tensor((HV, NC * C, K), op),
        U0=T.Tensor((HV, NC * C, V), op),
        Ab=T.Tensor((HV, 2 * NC * C, C), bf) if vss else T.Tensor((HV, NC * C, C), op),
        v=T.Tensor((B, Tn, HV, V), bf),
        Mqk=T.Tensor((HV, NC * C, C), op),
        gC=T.Tensor((HV, NC, K), f32),
    )
    o_t = T.Tensor((B, Tn, HV, V), bf)
    if mode == "full":
        h0_t = T.Tensor((NS, HV, V, K), h0_dtype)
        ht_t = T.Tensor((NS, HV, V, K), ht_dtype)
    else:
        # seg: the start state of every segment (from k2_scan); map: every segment's [B; M]
        h0_t = T.Tensor((NS, G, HV, V, K), f32)
        ht_t = T.Tensor((NS, G, HV, V + K, K), f32)
    cu_t = T.Tensor((N1,), "int64")
    order_t = T.Tensor((N1 - 1,), "int32")

    # One signature with every optional tensor; the absent ones are dropped (not null), so that
    # they stay out of the IR that `verify` and `host_codegen` read.
    if mode == "full":
        @T.prim_func
        def k2_recurrence(Wk: ws["Wk"], qd: ws["qd"], kr: ws["kr"], U0: ws["U0"], Ab: ws["Ab"],
                          v: ws["v"], Mqk: ws["Mqk"], gC: ws["gC"], cu_seqlens: cu_t, h0: h0_t, o: o_t, ht: ht_t,
                          order: order_t):
            _body(Wk, qd, kr, U0, Ab, v, Mqk, gC, cu_seqlens, h0, o, ht, order=order)

        absent = [name for name, present in (("cu_seqlens", cfg.varlen), ("h0", cfg.initial_state is not None),
                                             ("ht", cfg.final_state), ("U0", not u0k2), ("Ab", u0k2),
                                             ("v", u0k2), ("order", LF)) if not present]
        return _tir.drop_params(k2_recurrence, absent)

    # the split's passes: pass C reads every segment's start state (from k2_scan), pass A writes
    # every segment's [B; M]
    @T.prim_func
    def k2_split(Wk: ws["Wk"], qd: ws["qd"], kr: ws["kr"], U0: ws["U0"], Ab: ws["Ab"], v: ws["v"],
                 Mqk: ws["Mqk"], gC: ws["gC"], cu_seqlens: cu_t, starts: h0_t, o: o_t, maps: ht_t, L: T.int32):
        _body(Wk, qd, kr, U0, Ab, v, Mqk, gC, cu_seqlens, starts, o, maps, L)

    absent = [name for name, present in (("cu_seqlens", cfg.varlen), ("starts", mode == "seg"), ("o", outputs),
                                         ("maps", mode == "map"), ("qd", outputs), ("Mqk", outputs),
                                         ("U0", not u0k2), ("Ab", u0k2), ("v", u0k2))
              if not present]
    return _tir.drop_params(k2_split, absent)
