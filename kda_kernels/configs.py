"""Config dataclasses of the kernel builds, kept free of TileLang so that the registry,
the release gate and `import kda_tile` never import it (TileLang's import alone costs ~0.7 s;
the first kda_prefill call is budgeted at 300 ms). The kernel factories (k1_prepare.build_k1,
k2_recurrence.build_k2, decode.build_decode) import these; a config's source is part of its builds' gate key.
"""
from dataclasses import dataclass
from typing import Optional

CHUNK = 16
# Sequences a varlen call may pack: K1 finds a chunk slot's sequence by a binary search of
# SEARCH_STEPS steps (ceil(log2(MAX_SEQUENCES)) + 1), and K2 puts the sequence index in grid x
# (2^31 - 1), not in y or z (65535).
MAX_SEQUENCES = 2**20
SEARCH_STEPS = 21

# The sequence split (issue 9): each sequence is cut into segments of L chunks, planned from the
# shapes alone (no device sync). Pass C runs N * HV * 2 programs a segment: L aims at
# SPLIT_PROGRAMS of them (two an SM on 132 SMs) for sequences of the average length, keeps at
# least SPLIT_MIN_CHUNKS chunks a segment (the scan costs ~4 us a segment), and keeps
# G = ceil(ceil(T / 16) / L), which covers the longest sequence possible, at most SPLIT_MAX_G.
# The API splits when the average sequence gets SPLIT_MIN_G segments or more.
# bench/NOTES.md (session 10) has the measurements.
SPLIT_PROGRAMS = 256
SPLIT_MIN_CHUNKS = 32
SPLIT_MIN_G = 8
SPLIT_MAX_G = 1024
# The split's chunk size: the tokens a chunk of its K1, pass A and pass C. At 32 (sessions 19-20)
# pass A is -28% and the split -5 to -8% at H8 1x65536 and 1x262144 (JIT); through the host
# entry all 10 split GPU tests pass (T up to 1M, forced splits) and H8 1x65536 takes 0.826 ms
# (bench/NOTES.md, session 20). The plan keeps the 16-token plan's segments in tokens at either
# size, and use_split its decisions.
SPLIT_CHUNK = 32
# Consumer warpgroups a program of passes A and C (K2Config.consumers). 2 reads each chunk's
# workspace once for 128 state rows instead of once for every 64: pass C -10 to -19% at the
# plan's G, pass A unchanged; the split -2% at H8 1x65536, -3% at H16 1x65536 and -5% at H8
# 1x262144 (sessions 20-21, JIT; bench/NOTES.md).
SPLIT_CONSUMERS = 2
# Pass A's identity-row programs without v, Ab and U0's product (K2Config.lean_id): never slower
# in six JIT pairs, all split GPU tests pass with it (session 21)
SPLIT_LEAN_ID = True
# Passes A and C read v^T from their ring slots as wgmma's shared operand, Ab in two bf16 halves
# that K1 writes (K2Config.v_ss, K1Config.ab_halves): v's loads and conversions leave the chain
# (session 48; measured for the split in session 49, bench/NOTES.md).
SPLIT_VSS = True


def split_plan(N: int, T: int, HV: int, chunk: int = CHUNK) -> tuple[int, int]:
    """(L, G) for N packed sequences of T tokens in all and HV value heads, L in chunks of
    `chunk` tokens."""
    per_seq = (T // N + chunk - 1) // chunk
    target = max(1, SPLIT_PROGRAMS // (2 * N * HV))
    L = max(SPLIT_MIN_CHUNKS * CHUNK // chunk, (per_seq + target - 1) // target,
            ((T + chunk - 1) // chunk + SPLIT_MAX_G - 1) // SPLIT_MAX_G)
    return L, ((T + chunk - 1) // chunk + L - 1) // L


def use_split(N: int, T: int, HV: int) -> bool:
    """Whether the average sequence gets SPLIT_MIN_G segments or more (of the 16-token plan)."""
    L, _ = split_plan(N, T, HV)
    return (T // N + 15) // 16 >= SPLIT_MIN_G * L


# The split's scan with its sums in SCAN_PARTS parts (ScanConfig.parts; 16 warps a program, one
# program an SM by registers) where its programs (16 a sequence and head: 8 state rows each) fit
# one wave on the SMs; else one part (four programs an SM). JIT on an H100 (round 40a), the scan at
# G 16 / 8: H8 1x65536 0.065 -> 0.041 / 0.034 -> 0.022 ms, H8 1x262144 0.064 -> 0.041; H16 1x65536
# (256 programs) 0.040 -> 0.043 / 0.074 -> 0.079 (bench/NOTES.md, session 40).
SCAN_PARTS = 4
SCAN_PARTS_MAX_PROGRAMS = 132


def scan_parts(N: int, T: int, HV: int) -> int:
    """ScanConfig.parts of the split's scan for N packed sequences and HV value heads."""
    programs = N * HV * (ScanConfig.value_dim // ScanConfig.block_rows)
    return SCAN_PARTS if programs <= SCAN_PARTS_MAX_PROGRAMS else 1


# 32-token chunks (session 18): the chain takes half the steps, K1 costs ~19% more per token
# (~30% before session 19's unguarded stores). They pay where each SM holds at most one of the
# 16-token chains (two a sequence and head: 64 value rows each) and sequences are long: H32
# 1x32768 K1 + K2 1.87 -> 1.52 ms; at two chains an SM (H96 1x8192) 0.88 -> 0.95 with one consumer
# a program (bench/NOTES.md, sessions 18 and 19): there two consumers a program take them
# (use_two_consumers, below).
CHUNK32_MAX_CHAINS = 132
CHUNK32_MIN_TOKENS = 512


def use_chunk32(N: int, T: int, HV: int) -> bool:
    """Whether N packed sequences of T tokens in all and HV value heads take 32-token chunks."""
    return 2 * N * HV <= CHUNK32_MAX_CHAINS and T // N >= CHUNK32_MIN_TOKENS or use_two_consumers(N, T, HV)


# 32-token chunks with two consumer warpgroups a program (K2Config.consumers 2: one program a
# sequence and head, 128 value rows) where the one-consumer chains outnumber the SMs and these
# programs leave the SMs DRAM to spare. JIT, K2 + K1 at H96 1x8192 against the released 16-token
# pair (fp32 state in and out): H200 0.830 -> 0.804 ms (round 29c), H100 0.956 -> 0.874 (round 31b).
# Through kda_prefill on the H100 (round 31c-d), against 16-token chunks: HV 72 0.91-0.95, 96
# 0.91-0.93, 104 0.95, 112 1.00, 120 1.04, 128 1.03 (the two-consumer K2 runs at 85% of DRAM at
# H96); H48 2x4096 0.96-0.98, H16/HV96 0.96-0.97, H96 1x512-1x4096 0.94-0.99. So up to the
# largest count measured faster (bench/NOTES.md, session 31).
TWO_CONSUMER_MAX_PROGRAMS = 104
# api._plan's K2 form code (in its spp place) for these calls
TWO_CONSUMERS = -2


def use_two_consumers(N: int, T: int, HV: int) -> bool:
    """Whether N packed sequences of T tokens in all and HV value heads take 32-token chunks with
    two consumer warpgroups a K2 program."""
    return (CHUNK32_MAX_CHAINS < 2 * N * HV and N * HV <= TWO_CONSUMER_MAX_PROGRAMS
            and T // N >= CHUNK32_MIN_TOKENS)


# The one-consumer 32-token K2 with v^T read from its ring slot as wgmma's shared operand and Ab
# in two bf16 halves from its K1 (K2Config.v_ss, K1Config.ab_halves: v's loads and conversions off
# the chain, o's error unchanged) where its chains leave DRAM idle. JIT on an H100, fixed batches,
# fp32 state in and out (round 49b): H32 1x32768 (64 programs) K2 0.850 -> 0.683 ms, K1 0.626 ->
# 0.654, the pair -9.4%; H64 1x8192 (128 programs, near the H100's bytes) K2 +2.7%, the pair
# +2.6%. Between those (round 50b, same form): H40 1x16384 (80 programs) K2 0.476 -> 0.393, K1
# 0.394 -> 0.408, the pair -7.9%; H48 1x8192 (96) K2 0.239 -> 0.220, K1 0.240 -> 0.247, the pair
# -2.5%. So up to the programs measured faster. Not where the slab pipeline takes the call
# (use_pipeline): there K1 on the SMs the chains leave holds the call, and v_ss's K1 is the slower
# (H32 1x32768 through kda_prefill: 1.325 ms with v_ss against 1.303 without, two H100s; round
# 49c). bench/NOTES.md, sessions 49 and 50.
VSS_ONE_MAX_PROGRAMS = 96
# api._plan's K2 form code (in its spp place) for these calls
VSS_ONE = -5


def use_vss_one(N: int, T: int, HV: int) -> bool:
    """Whether a 32-token call of N packed sequences of T tokens in all and HV value heads that
    takes one consumer a K2 program takes it with v_ss (and its K1 writing Ab's halves)."""
    return 2 * N * HV <= VSS_ONE_MAX_PROGRAMS and not use_pipeline(N, T, HV)


# K2 over SPP sequences a program (K2Config.seqs_per_program; issue 9's many short sequences).
# kda_prefill, spp4 against spp1 without state (rounds 26a/26b; bench/NOTES.md, session 26): H32
# 8192x16 0.75, 2048x64 0.95, 256x512 0.96, H8 4096x32 0.84, H1 4096x32 0.89, H2 2112x64 0.97; slower
# at H32 132x512 (1.03-1.04: 2112 programs of 512-token sequences), H96 16x1024 and H64 8x1024
# (1.05), and at one sequence (round 24c, +4 to +12%). So: sequences of at most 128 tokens on
# average and 1056 programs after the grouping (four waves of two chains on 132 SMs), or of at most
# 512 and 4096 programs.
# Eight sequences a program against four through kda_prefill without state (round 26e): H32
# 8192x16 0.749 -> 0.701 of one a program, 256x512 0.951 -> 0.915, ragged 4096 0.887 -> 0.862, H8
# 4096x32 0.853 -> 0.844, H1 4096x32 (1024 spp8 programs) 0.892 -> 0.879, H2 2112x64 0.966 -> 0.951,
# 2048x64 equal; so eight wherever the grouping is taken and eight leave SPP8_MIN_PROGRAMS (the
# fewest measured), four below that.
SPP = 4
SPPS = (4, 8)
SPP_MAX_MEAN_TOKENS = 512
SPP_SHORT_MEAN_TOKENS = 128
SPP_MIN_PROGRAMS = (1056, 4096)   # (short sequences, longer ones)
SPP8_MIN_PROGRAMS = 1024
# verify's resource limit for every query of the grouped K2 builds (K2Config.verify_rlimit): one
# race query of spp8's loader ring takes 39-67 M Z3 units; spp4's largest takes 16.7 M alone and
# exhausts the default 20 M in both strategies in some worker orders (session 27, verify 2.14.0).
SPP_RLIMIT = 100_000_000
# ... and of the fixed short_out builds (K1Config.short_out), whose bounds queries reach ~23 M
SHORT_FIXED_RLIMIT = 200_000_000
# ... and of the two-consumer 32-token K2 builds: in sessions 33-34 three fixed ones each had one
# query exhaust the default 20 M in the first strategy (decided in the second), the unstable
# margin session 27 saw for spp4 (verify/solver.py)
TWO_CONSUMER_RLIMIT = 100_000_000

# The short form (K1Config.short_out, registry stage "k1_short") serves a call whose sequences all
# have at most SHORT_TOKENS tokens and that passes no initial state: one kernel and no workspace,
# in place of K1 and K2 at every such shape (bench/NOTES.md, session 33). kda_prefill knows the
# lengths without a sync from a fixed batch's T, or from a varlen call's max_seqlen argument.
SHORT_TOKENS = CHUNK
# ... and the pairwise form (K1Config.short_chunks = PAIRWISE_CHUNKS) a call whose sequences all
# have at most PAIRWISE_TOKENS (64) tokens: issue 9's 2048 x 64 row in one kernel (session 34).
PAIRWISE_CHUNKS = 4
PAIRWISE_TOKENS = CHUNK * PAIRWISE_CHUNKS


def _programs(N: int, HV: int, spp: int) -> int:
    """K2's programs for N sequences and HV value heads, spp sequences a program (two 64-row blocks a head)."""
    return (N + spp - 1) // spp * HV * 2


def use_spp(N: int, T: int, HV: int) -> int:
    """Sequences a K2 program walks for N packed sequences of T tokens in all and HV value heads
    (16-token chunks, unsplit): 8, 4 or 1."""
    mean = T // N
    need = SPP_MIN_PROGRAMS[0] if mean <= SPP_SHORT_MEAN_TOKENS else SPP_MIN_PROGRAMS[1]
    if mean > SPP_MAX_MEAN_TOKENS or _programs(N, HV, SPP) < need:
        return 1
    return 8 if _programs(N, HV, 8) >= SPP8_MIN_PROGRAMS else SPP


# K2 longest first (K2Config.longest_first, kda_kernels/k2_order.py; session 28): a varlen call of
# 16-token chunks, one sequence a program, runs (K1, the order, K2 through the order), so the
# programs of the longest sequences launch first. kda_prefill against the same call without it
# (round 28c, H100, bench/lf_probe.py; o and the final state bitwise equal): H96 ragged6 0.943 ->
# 0.855 ms, H64 ragged6 0.662 -> 0.579, H32 ragged5 1.661 -> 1.502, H32 200 ragged 8.78 -> 7.05,
# H8 600 ragged 3.49 -> 2.80; uniform rows 0.98-0.99 (H64 8x1024, H96 16x1024, H32 132x512). The
# order kernel takes 3.4 us (ncu). So: wherever K2 has more programs than one wave (two an SM on
# 132 SMs) and k2_order ranks the sequences (up to LF_MAX_RANKED; the identity above is unmeasured).
# kda_tile.api's spp_for answers SPP_LONGEST_FIRST for it.
LONGEST_FIRST = True
LF_MIN_PROGRAMS = 264
LF_MAX_RANKED = 1024       # sequences k2_order ranks (OrderConfig.max_ranked)
LF_MAX_SEQS = 65535        # grid y of the longest-first K2
SPP_LONGEST_FIRST = 0


def use_longest_first(N: int, T: int, HV: int) -> bool:
    """Whether an unsplit 16-token varlen call of N packed sequences of T tokens in all and HV value
    heads, one sequence a K2 program, runs longest first."""
    return LONGEST_FIRST and 2 <= N <= LF_MAX_RANKED and 2 * N * HV > LF_MIN_PROGRAMS


# The slab pipeline (kda_tile.slabs.run_pipelined; session 27): a one-sequence call whose K2 leaves
# SMs idle (2 HV chains, 64 of 132 SMs at H32) runs as slabs, K1 of slab j + 1 beside K2 of slab j
# on two streams. It pays once the 32-token K2 keeps its SM to itself (min_blocks 1; with two
# programs' registers an SM, K1's programs shared the chains' SMs and slowed them: round 28c, H100,
# 1.464 ms whole against 1.750). Round 29c (H200, bench/pipeline_probe.py, bitwise equal to the
# whole call): H32 1x32768 1.404 -> 1.180 ms (4 slabs of 8192 tokens), H32 1x131072 5.523 -> 4.331
# (8 of 16384). Shorter slabs lose to the host's two calls and events a slab (16 of 2048 tokens:
# 1.5-1.8x the whole call), and 96 chains or more gain nothing (H48 1x16384 1.00-1.03; H64 and H96
# 1x8192 lose). So: 64 chains or fewer, slabs of PIPE_MIN_SLAB tokens or more, at most PIPE_SLABS.
PIPE_MAX_CHAINS = 64
PIPE_MIN_SLAB = 8192
PIPE_MIN_TOKENS = 4 * PIPE_MIN_SLAB
PIPE_SLABS = 8


def use_pipeline(N: int, T: int, HV: int) -> bool:
    """Whether an unsplit call of N packed sequences of T tokens and HV value heads runs as the
    slab pipeline."""
    return N == 1 and 2 * HV <= PIPE_MAX_CHAINS and T >= PIPE_MIN_TOKENS


def split_plan_exprs(chunk: int = CHUNK) -> tuple:
    """split_plan(..., chunk) as the host entry's derived variables ((name, Python expression), ...)."""
    N = "(N1 - 1)"
    c1 = chunk - 1
    per_seq = f"((T // {N} + {c1}) // {chunk})"
    target = f"max(1, {SPLIT_PROGRAMS} // (2 * {N} * HV))"
    L = (f"max({SPLIT_MIN_CHUNKS * CHUNK // chunk}, max(({per_seq} + {target} - 1) // {target}, "
         f"((T + {c1}) // {chunk} + {SPLIT_MAX_G - 1}) // {SPLIT_MAX_G}))")
    return (("L", L), ("G", f"((T + {c1}) // {chunk} + L - 1) // L"))


def slot_vars(varlen: bool, chunk: int) -> dict[str, str]:
    """The workspace's chunk slots NC: ceil(T / C) a sequence in a fixed batch; T // C + N in a
    varlen one (sequence n's first slot is bos_n // C + n)."""
    if varlen:
        return {"NC": f"T // {chunk} + (N1 - 1)"}
    return {"NC": f"B * ((T + {chunk - 1}) // {chunk})"}


class StateIO:
    """What a config with `initial_state` (None, "float32" or "bfloat16") and `final_state` (bool)
    derives from them (K2Config, ScanConfig, fused.FusedConfig)."""

    @property
    def final_state_dtype(self) -> Optional[str]:
        """The final state's dtype: the initial state's, float32 without one."""
        if not self.final_state:
            return None
        return self.initial_state or "float32"

    @property
    def state_tag(self) -> str:
        """The state part of a build name: h0none/h0f32/h0bf16, then ht/htnone."""
        h0 = {None: "h0none", "float32": "h0f32", "bfloat16": "h0bf16"}[self.initial_state]
        return f"{h0}_{'ht' if self.final_state else 'htnone'}"


@dataclass(frozen=True)
class K1Config:
    varlen: bool = False
    fast_math: bool = False
    head_dim: int = 128
    # One chunk a program, 64 threads (one column pair each): before the Mqk split, 0.523 ms at H96
    # 1x8192 at 12 programs an SM against 0.539 at 10, 0.569 for 2 chunks of 128 threads at 5 and
    # 0.559-0.609 for the other layouts measured (bench/NOTES.md, session 9).
    chunks_per_cta: int = 1
    threads: int = 64
    # programs per SM the register budget must allow (0: no bound); with mqk_split "qk" the shared
    # memory (20.7 KB a program, 16.6 KB without) allows 10
    min_blocks: int = 12
    # flush-to-zero MUFU forms in the accurate build too (ex2.approx.ftz, rcp.approx.ftz): the same
    # values in K1's ranges (|G| <= 115.4 under lower_bound >= -5; bit-identical workspace on the
    # H200) and 22% fewer instructions: 0.645 -> 0.560 ms at H96 1x8192 (bench/NOTES.md, session 8)
    ftz: bool = True
    in_dtype: str = "bfloat16"
    # Operand dtypes of K2's products. qd, kr, Wk, Mqk are bounded by 1 in magnitude (decays <= 1,
    # unit-norm k, |A| <= 1), so fp16's extra mantissa bits are free; U0 = A diag(beta) v scales
    # with v (|v| must stay below fp16's 65504, as K2's state does).
    ws_dtype: str = "float16"  # Wk, qd, kr, U0
    mat_dtype: str = "float16"  # Mqk, and Ab in shared memory
    # Worst shared-memory bank-conflict degree `verify` accepts for this kernel.
    bank_conflict_budget: int = 8
    # Mqk = qd ki^T from operands split into bf16 hi + lo parts (ki = k 2^-G needs bf16's range):
    # "" one bf16 product; "k" adds qh kil^T; "qk" adds ql kih^T too. The bf16 rounding of qd and ki
    # is most of o's error (2.9e-3 -> 1.7e-3 with "qk" in a float64 emulation of the kernels'
    # roundings, 2.35e-3 with "k"; bench/NOTES.md, session 13). With a split, Wk = Ab kd takes bf16
    # operands (kd from the L product's tile; no effect on the error) so kd's fp16 copy goes.
    mqk_split: str = ""
    # Mqk's diagonal (qd_r . ki_r = qn_r . kn_r: the gate cancels) from an fp32 dot of the raw q, k
    # rows in the norms pass instead of the bf16 product: most of what the split buys at little
    # cost. H200 (session 14, JIT, same process): o's error 2.9e-3 -> 2.1e-3, K1 +2.4-2.7% (H96
    # 1x8192 0.497 -> 0.510 ms); it brings the worst case (T=17 H=1, 4.4e-3) under 4e-3.
    mqk_diag: bool = True
    # Varlen, one chunk a program: a program whose slot holds no chunk (up to one a sequence: half
    # the slots at 16-token sequences) returns before any work. Every thread runs the slot search
    # (read-only cu_seqlens, so the return is block-uniform). Released for varlen (registry);
    # session 11's form, the body under an `if`, cost 9% elsewhere.
    skip_holes: bool = False
    # varlen: the slot search runs bit_length(N - 1) steps, not SEARCH_STEPS. Released for varlen
    # (registry): one sequence 0.529 -> 0.513 ms at H96 1x8192 (bench/NOTES.md, session 15).
    dyn_search: bool = False
    # K2 forms U0 = Ab v itself, from v and the Ab that K1 writes in place of U0 (16 columns for
    # 128) and -Wk for Wk; K1 then reads no v. Pairs with K2Config.u0_in_k2 (K1 0.506 -> 0.436
    # ms at H96 1x8192; bench/NOTES.md, sessions 16-17).
    u0_in_k2: bool = False
    # With u0_in_k2: Ab in two bf16 halves, a chunk's C rows of hi = bf16(Ab) then C of lo =
    # bf16(Ab - hi), which hold the fp16 Ab exactly; K2Config.v_ss's operand (session 48).
    ab_halves: bool = False
    # Tokens a chunk: 16, or 32 (one chunk a program, 128 threads: two threads a column pair, one
    # for each 16-row half, 2^(+-G) taken from the chunk's middle so that it stays inside bf16's
    # range; bench/NOTES.md, session 18). K2Config.chunk must match.
    chunk: int = CHUNK
    # The row norms' 1/sqrt as rsqrt.approx plus one Newton step (_math.NR_SOURCE) instead of
    # 1 / sqrtf: ~22 -> 5 instructions a norm, ~5% of a 32-token warp's (session 21, static SASS;
    # not yet run on a GPU). Only for the accurate builds (fast_math takes rsqrt.approx alone).
    rsqrt_nr: bool = False
    # 32-token chunks: the gate's tail mask (rows past the chunk's tokens add nothing to G) in a
    # branch taken only by a half that holds such rows, not a select per element (~64 instructions a
    # thread of the column pass; session 22).
    tail_unswitch: bool = False
    # 32-token chunks: the inverse's off-diagonal products X = L21 A11 and A21 = -A22 X with one row
    # a thread read as 16-byte vectors and two adjacent columns a thread (~40 fewer shared loads a
    # thread; session 22).
    inv_rows: bool = False
    # The 128-thread pairwise form's inverse from 8-row blocks (session 36, JIT only): the serial
    # chain that one warp runs while the program's other three wait at the barrier, 28 dependent
    # products a column instead of 120.
    inv_blocks: bool = False
    # The pairwise form's next chunk in flight (session 37): chunk j + 1's q, k, g copies and beta
    # load issued once chunk j's [L; Mqk] product has read q_s and ki_s, so that they land behind
    # chunk j's inverse and products instead of at chunk j + 1's start (round 37a: ~10% of the
    # warps' samples waited there on an H100). No extra shared memory.
    next_early: bool = False
    # The 32-token workspace K1 of a fixed batch over `ws_chunks` consecutive chunk slots a program
    # (session 41, JIT only): chunk j + 1's q, k, g copies and beta issued behind chunk j's
    # [L; Mqk] product, as next_early does in the pairwise form, so that a program keeps loads in
    # flight through its inverse, products and stores. The last program walks only the slots
    # below NC, so each slot is stored once (barriers.written_once). Not released: on the
    # H100 +4% at 4 programs an SM and +12% at 5 (H96 1x8192; rounds 41d-41e); the H200, where K1
    # is not at its bytes, is unmeasured (bench/device_round.sh round41e).
    ws_chunks: int = 1
    # The 128-thread pairwise form's column pass over four adjacent channels and four rows a thread
    # (session 38): 8-byte shared loads and stores (half as many as with channel pairs), the four
    # row quarters of a channel in one warp, their gate totals exchanged by shuffles, not tot_s.
    col_quads: bool = False
    # GVA's q/k head (two integer divisions) computed by thread 0 and read from shared memory,
    # not by every thread (~65 instructions a warp; session 22).
    head_once: bool = False
    # The gate's per-head parameters (A_log, dt_bias) loaded first thing, and beta's behind q, k,
    # g's copies, so that neither DRAM round trip waits behind them (session 22; released in 23).
    early_loads: bool = False
    # The copies' rows from registers every thread holds (the slot search's in skip_holes builds,
    # b and t0 of the chunk in fixed builds of one chunk a program) and GVA's division only where
    # HV != H: no shared memory and no barrier before q, k, g's copies (sessions 22-23; it
    # replaces head_once's shared head).
    lean_prologue: bool = False
    # The slot search's first step at the sequence a batch of equal lengths would give (one round
    # trip of two loads where it holds; the binary search from the side it leaves where not).
    # Session 23, prepared, not run: dependent loads of cu_seqlens before the copies, 11 at 2048
    # sequences and 13 at 8192, are most of a varlen K1 program's prologue.
    slot_guess: bool = False
    # Lanes a row in the row norms of q and k (0: the copies' K / 8, sixteen): four lanes of four
    # 16-byte vectors each take two shuffle levels, not four, and one rsqrt a row, not four
    # (the norms were ~390 of a 32-token warp's ~2570 instructions; session 45, static SASS).
    norm_lanes: int = 0
    # Measurement only, never released: "+"-joined parts of the kernel to leave out (bench/k1_round.py):
    # colstore (the qd, kr, gC stores of the column pass), lm (the L and Mqk products and the Mqk
    # store), v (the v load), inverse, ab (the Wk and U0 products and stores), oddhole (a
    # skip_holes build leaves every odd slot before its search: the holes of 16-token sequences),
    # htstore (short_ht's final-state stores), htmm (the products that form it).
    probe: str = ""
    # The whole forward of sequences of at most one chunk, with no initial state: a program a
    # (sequence, value head) forms o = Mqk (Ab v) itself and writes o, no workspace (session 32;
    # JIT only, bench/short_round.py). Program n takes sequence (varlen) or row (fixed) n and
    # writes only its first 16 tokens: the caller's sequences must be that short. One chunk a
    # program, 16 tokens, v read by K1 (u0_in_k2 off), lean_prologue.
    short_out: bool = False
    # short_out also writes the fp32 final state S^T = U0^T kr ([N, HV, V, K]; zeros for an empty
    # sequence): the serving prefill of fresh prompts
    short_ht: bool = False
    # short_out over sequences of up to short_chunks chunks (> 1: the pairwise form, session 33,
    # released in 34 with 4 chunks): chunk j's U_j = U0_j - (Wk_j krs^T) U_<j and o_j = Mqk_j U_j + (qd_j krs^T) U_<j,
    # where krs holds the earlier chunks' kr rows decayed to chunk j's start (reference.kda_pairwise);
    # krs and the U rows stay in shared memory, 8 KB a chunk of each, so no state and no workspace
    short_chunks: int = 1
    # the pairwise form's lean layout (released in session 35; bench/NOTES.md): it runs the first
    # chunk's P and Q products too (over zero U rows: exact), so that every chunk passes the same
    # barriers, and decays krs at the next chunk's start, behind its copies (with the final state
    # once more after the last chunk), ~20 barriers a chunk against 84; without the final state
    # it also drops the last chunk's kr and U rows (57 KB of shared memory against 65: 4 programs
    # an SM against 3)
    short_lean_rows: bool = False
    # The lean layout with the final state (session 39): the last chunk's kr stays in the column
    # pass's registers (8 a thread) and its U in v_s until the tail, so krs and U keep three chunks'
    # rows as without the state (57 KB: 4 programs an SM against 3)
    last_kr_regs: bool = False
    # verify's resource limit for every query of this build (0: verify's default); the fixed
    # short_out builds' bounds queries reach ~23 M units
    verify_rlimit: int = 0

    @property
    def name(self) -> str:
        return ("k1_prepare_" + ("varlen" if self.varlen else "fixed") + ("_fast" if self.fast_math else "")
                + ("_short" if self.short_out else "") + ("_ht" if self.short_out and self.short_ht else "")
                + (f"_n{self.short_chunks}" if self.short_out and self.short_chunks > 1 else "")
                + ("_lean" if self.short_out and self.short_chunks > 1 and self.short_lean_rows else "")
                + (f"_t{self.threads}" if self.short_out and self.threads != 64 else "")
                + ("_ds" if self.dyn_search and self.varlen else "")
                + ("_skipholes" if self.skip_holes else "")
                + (f"_mqk{self.mqk_split}" if self.mqk_split else "")
                + ("_mqkdiag" if self.mqk_diag else "")
                + ("_u0k2" if self.u0_in_k2 else "")
                + ("_abh" if self.ab_halves else "")
                + (f"_ch{self.chunk}" if self.chunk != CHUNK else "")
                + ("_rnr" if self.rsqrt_nr and not self.fast_math else "")
                + ("_tu" if self.tail_unswitch and self.chunk == 2 * CHUNK else "")
                + ("_ir" if self.inv_rows and self.chunk == 2 * CHUNK else "")
                + (f"_nl{self.norm_lanes}" if self.norm_lanes else "")
                + ("_ib" if self.inv_blocks else "")
                + ("_ne" if self.next_early else "")
                + (f"_w{self.ws_chunks}" if self.ws_chunks > 1 else "")
                + ("_cq" if self.col_quads else "")
                + ("_lkr" if self.last_kr_regs else "")
                + ("_ho" if self.head_once else "")
                + ("_el" if self.early_loads else "")
                + ("_lp" if self.lean_prologue else "")
                + ("_sg" if self.slot_guess else "")
                + (f"_probe_{self.probe.replace('+', '_')}" if self.probe else ""))

    def pass_configs(self) -> dict:
        return {"tl.enable_fast_math": self.fast_math}

    def written_once(self) -> tuple:
        """Outputs `verify` proves written at most once a byte in the whole grid (barriers.written_once):
        the workspace, and the short forms' o and final state."""
        if self.short_out:
            return ("o", "ht") if self.short_ht else ("o",)
        return ("Wk", "qd", "kr", "Ab", "Mqk", "gC") + (() if self.u0_in_k2 else ("U0",))

    def derived_vars(self) -> dict[str, str]:
        """Shape variables that no input tensor fixes, as expressions of those that do (short_out:
        none, it writes no workspace)."""
        return {} if self.short_out else slot_vars(self.varlen, self.chunk)

    def scalar_preconditions(self) -> list[str]:
        """Ranges of the scalar parameters. lower_bound >= -5 keeps 2^(+-G) inside bf16 over 16
        tokens (docs/math.md section 2.1): a 16-token chunk, or either half of a 32-token one."""
        return ["lower_bound >= -5.0", "lower_bound < 0.0", "scale > 0.0", "scale < 1e30"]

    def preconditions(self) -> list[str]:
        # GVA: H query/key heads, HV value heads (HV = H without it), each group of HV / H
        # value heads shares one q, k head.
        pre = ["B >= 1", "T >= 1", "H >= 1", "HV >= H", "HV <= 256", "HV % H == 0", "B * T * HV <= 2**23"]
        pre += [f"{v} == {e}" for v, e in self.derived_vars().items()]
        if self.short_out and not self.varlen:
            pre += [f"T <= {self.chunk * self.short_chunks}"]   # a program writes its row's first chunks
        if self.varlen:
            pre += ["B == 1", "N1 >= 2", "N1 <= 2**20 + 1"]
        return pre


@dataclass(frozen=True)
class K2Config(StateIO):
    """K2, the chain (kda_kernels/k2_recurrence.py): reads Wk = A diag(beta) kd and U0 = A diag(beta) v
    from K1's workspace and keeps the state in registers."""
    varlen: bool = False
    initial_state: Optional[str] = None  # None, "float32" or "bfloat16"
    final_state: bool = False            # its dtype follows initial_state (float32 without one)
    head_dim: int = 128
    value_dim: int = 128
    # One consumer warpgroup of 64 value rows and 3 ring slots, 2 programs an SM: 0.437 ms at H96
    # 1x8192 against 0.483-0.502 for two consumers (one program per head) and 0.446-0.485 for 2 or
    # 4 slots (bench/NOTES.md, session 8)
    consumers: int = 1       # consumer warpgroups, 64 value rows of the state each
    stages: int = 3          # ring slots between the loading warpgroup and the consumers
    min_blocks: int = 2      # programs per SM the register budget must allow
    consumer_regs: int = 0   # setmaxnreg budgets; 0: derived from the launch's registers
    producer_regs: int = 0
    in_dtype: str = "bfloat16"
    ws_dtype: str = "float16"  # Wk, qd, kr, U0, Mqk (see K1Config)
    bank_conflict_budget: int = 8
    # The sequence split (issue 9; docs/math.md section 4): "full" runs each sequence's whole chain;
    # "map" (pass A) runs each of G segments of a sequence from zero with V value rows and from the
    # identity with K more rows and U0 = 0, writing the segment's affine map S_end = S_start M + B
    # as maps[n, g] = [B; M] and no output; "seg" (pass C) runs each segment from the start state
    # that kda_kernels/k2_scan.py composed from the maps, writing the output only.
    mode: str = "full"
    # U0 = Ab v formed here, from v and K1's fp16 Ab (K1Config.u0_in_k2), as one more k-step in
    # the accumulator of Sh (-Wk)^T; v then fixes T for pass A too. Released: K2 +4% at H96
    # 1x8192 (+11% where an SM holds one chain), K1 -14% (bench/NOTES.md, session 17; by the
    # loading warpgroup instead: +34 to +52%, sessions 16-17).
    u0_in_k2: bool = False
    # How a chunk of o is stored, without TileLang's guards (verify proves the accesses): "whole"
    # (released: a whole chunk unpredicated, a branch to a predicated partial chunk; session 17:
    # -3.7% at H96 1x8192, +3.8% where an SM holds one chain), "row" (a predicate a row, no
    # branch), or "guarded" (TileLang's guards kept too: the release before session 17).
    store: str = "whole"
    # The consumers' chunk loop a ring period (S chunks) at a time, each copy's slot a constant
    # (~40 fewer instructions a chunk: the slot, parity and descriptor bases; not yet measured).
    unroll_ring: bool = False
    # Sequences a program walks (issue 9's many short sequences; varlen, mode "full"): one program
    # per SPP consecutive sequences of a head block, the ring running across them (slot and parity
    # from one chunk counter a role), so the ring's fill and the program's launch are paid once
    # per SPP sequences, not per sequence (released: 4 and 8, configs.use_spp). verify proves 4
    # and 8 with verify_rlimit (configs.SPP_RLIMIT), not yet 16 (three race queries
    # UNKNOWN; bench/NOTES.md, sessions 25 and 26).
    seqs_per_program: int = 1
    # Varlen, one sequence a program: programs go to sequences through `order` [N] (a permutation
    # of the sequences, longest first, that the caller computes on the device), the rank in y, the
    # slower digit of the launch order (N <= 65535), so the longest sequences' programs launch
    # first and a ragged batch's tail is short ones. A program whose entry is outside [0, N) leaves
    # at once. Proved (session 28, verify 2.15.0 models the early return); released for ragged
    # batches (configs.use_longest_first, measured there).
    longest_first: bool = False
    # Z3 units a verify query of this build may take where the default (verify.solver.RLIMIT) is
    # too little; a proof under any limit is a proof. 8 sequences a program: one race query of the
    # loader's ring slots takes 38.8 M (session 26); 4 a program: up to the default 20 M (session 27).
    verify_rlimit: int = 0
    # Pass A with u0_in_k2: its identity-row programs (the K rows that carry M, where U0 = 0) load
    # no v and no Ab and leave out U0's product, which they only multiplied by zero. Pass A's DRAM
    # bytes -13%, its time -0.4 to -3%: it is bound by its chains (bench/NOTES.md, session 21).
    lean_id: bool = False
    # Tokens a chunk (K1Config.chunk): 32 halves the chain's steps
    chunk: int = CHUNK
    # v^T straight from its ring slot as wgmma's shared A operand (bf16), against Ab in two bf16
    # halves (Ab = hi + lo, a chunk's C rows of hi then C of lo: 16 bits of Ab's mantissa where
    # fp16 kept 11; probe "no_lo" leaves lo's bytes and product out, for measurement),
    # so the consumers neither load nor convert v (rows past T arrive as TMA's zeros; a varlen
    # tail chunk, whose slot holds the next sequence's v, takes v through registers, masked).
    v_ss: bool = False
    # Measurement only, never released: "no_store" skips the output stores. (Two ways to take the
    # stores off the chain were slower and are gone: the output through shared memory, 0.437 ->
    # 0.453 ms at H96 1x8192, and each chunk's output stored during the next chunk's first
    # products, 0.484; bench/NOTES.md, session 9.)
    probe: str = ""

    @property
    def block_v(self) -> int:
        return 64 * self.consumers

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + 1)

    @property
    def launch_regs(self) -> int:
        """Registers a thread at launch: 65536 / (threads * min_blocks), a multiple of 8."""
        return 65536 // (self.threads * max(self.min_blocks, 1)) // 8 * 8

    @property
    def regs(self) -> tuple[int, int]:
        """(consumer, producer) registers a thread after setmaxnreg: the warpgroups share the
        launch's registers (launch_regs each)."""
        total = self.launch_regs * (self.consumers + 1)
        prod = self.producer_regs or 40
        cons = self.consumer_regs or min(240, (total - prod) // self.consumers // 8 * 8)
        return cons, prod

    @property
    def name(self) -> str:
        if self.mode != "full":
            return (f"k2_{self.mode}_" + ("varlen" if self.varlen else "fixed")
                    + (f"_c{self.consumers}" if self.consumers != 1 else "")
                    + ("_u0k2" if self.u0_in_k2 else "") + self._form_tag
                    + (f"_probe_{self.probe}" if self.probe else ""))
        return ("k2_recurrence_" + ("varlen" if self.varlen else "fixed") + f"_{self.state_tag}"
                + (f"_c{self.consumers}" if self.consumers != 1 else "")
                + ("_u0k2" if self.u0_in_k2 else "") + self._form_tag
                + (f"_probe_{self.probe}" if self.probe else ""))

    @property
    def _form_tag(self) -> str:
        return ((f"_st{self.store}" if self.store != "whole" else "") + ("_unroll" if self.unroll_ring else "")
                + (f"_spp{self.seqs_per_program}" if self.seqs_per_program != 1 else "")
                + ("_lf" if self.longest_first else "")
                + ("_leanid" if self.lean_id else "")
                + ("_vss" if self.v_ss else "")
                + (f"_ch{self.chunk}" if self.chunk != CHUNK else ""))

    def pass_configs(self) -> dict:
        # TileLang's guards on global accesses it cannot bound (o's token index against T, per
        # element and step) are left out: `verify` proves those accesses in bounds for any
        # contents of cu_seqlens (bounds.global), and the output stores lose ~30 instructions
        # a step (bench/NOTES.md, session 17).
        assert self.store in ("whole", "row", "guarded"), self.store
        return {} if self.store == "guarded" else {"tl.disable_safe_memory_legalize": True}

    def written_once(self) -> tuple:
        """Outputs `verify` proves written at most once a byte (barriers.written_once): o and the final
        state, pass A's maps."""
        if self.mode == "map":
            return ("maps",)
        return ("o", "ht") if self.final_state and self.mode == "full" else ("o",)

    def derived_vars(self) -> dict[str, str]:
        if self.mode == "map" and not self.u0_in_k2:
            return {}  # no tensor of pass A fixes T; the chain's entry derives NC from K1's
        return slot_vars(self.varlen, self.chunk)

    def preconditions(self) -> list[str]:
        if self.mode == "map" and not self.u0_in_k2:
            # the preconditions below with T eliminated (NC as the entry derives it from T)
            pre = ["HV >= 1", "HV <= 256"]
            if self.varlen:
                pre += ["N1 >= 2", "N1 <= 2**20 + 1", "NC >= N1 - 1", f"(NC - N1 + 1) * {self.chunk} * HV <= 2**23"]
            else:
                pre += ["B >= 1", "NC >= B", "NC % B == 0", f"(NC // B - 1) * {self.chunk} * B * HV < 2**23"]
            return pre + ["G >= 1", "G <= 1024", "L >= 1", "L <= 2**20"]
        pre = ["B >= 1", "T >= 1", "HV >= 1", "HV <= 256", "B * T * HV <= 2**23"]
        pre += [f"{v} == {e}" for v, e in self.derived_vars().items()]
        if self.varlen:
            pre += ["B == 1", "N1 >= 2", "N1 <= 2**20 + 1"]
        if self.longest_first:
            pre += [f"N1 <= {LF_MAX_SEQS + 1}"]
        if self.mode != "full":
            pre += ["G >= 1", "G <= 1024", "L >= 1", "L <= 2**20"]
        return pre

    def distinct(self) -> tuple:
        """Index buffers whose non-negative entries `verify` may assume pairwise distinct:
        longest_first's order (kda_kernels/k2_order.py writes distinct entries by construction)."""
        return ("order",) if self.longest_first else ()


def split_pass(mode: str, consumers: int = None, chunk: int = None, lean: bool = None) -> "K2Config":
    """The split's pass A (mode "map") or pass C ("seg"): varlen, U0 formed in the pass, chunks of
    SPLIT_CHUNK tokens and SPLIT_CONSUMERS consumer warpgroups unless given (pass A's identity rows
    lean as SPLIT_LEAN_ID says unless given); two consumers a program need the launch's registers
    of one program an SM."""
    consumers = SPLIT_CONSUMERS if consumers is None else consumers
    lean = SPLIT_LEAN_ID if lean is None else lean
    return K2Config(varlen=True, mode=mode, u0_in_k2=True, chunk=SPLIT_CHUNK if chunk is None else chunk,
                    consumers=consumers, min_blocks=1 if consumers == 2 else 2, lean_id=lean and mode == "map",
                    v_ss=SPLIT_VSS)


@dataclass(frozen=True)
class ScanConfig(StateIO):
    """The split's scan (kda_kernels/k2_scan.py): composes pass A's per-segment maps in fp32 into
    each segment's start state, and the sequence's final state."""
    varlen: bool = False
    initial_state: Optional[str] = None  # None, "float32" or "bfloat16"
    final_state: bool = False            # its dtype follows initial_state (float32 without one)
    head_dim: int = 128
    value_dim: int = 128
    block_rows: int = 8     # state rows a program carries through the G segments
    bank_conflict_budget: int = 8
    # The next segment's column of M and rows of B loaded into registers while this segment's
    # products run, so that the chain from one segment to the next waits on no global load
    # (released: 144 loads a thread at the head of every segment, ~3.8 us a segment; session 20).
    prefetch: bool = False
    # The sum over d of S_g[j, d] M_g[d, e] cut into `parts` runs of K / parts terms, one a
    # warpgroup (threads = parts x K), added to B_g in shared memory: a chain of K / parts
    # dependent FMAs a row instead of K, on parts times the warps (session 40).
    parts: int = 1
    # parts > 1: each thread's terms of M_{g+1} and its rows of B_{g+1} copied (cp.async, 4 bytes
    # each) into a second shared-memory slot while segment g runs. Measured slower than the plain
    # four parts (0.052-0.054 ms against 0.042 at H8 G 16, H100, round 40b), so not released.
    m_async: bool = False

    @property
    def threads(self) -> int:
        """One state column a thread in each part."""
        return self.head_dim * self.parts

    @property
    def name(self) -> str:
        return ("k2_scan_" + ("varlen" if self.varlen else "fixed") + ("_pf" if self.prefetch else "")
                + (f"_br{self.block_rows}" if self.block_rows != 8 else "")
                + (f"_p{self.parts}" if self.parts != 1 else "") + ("_ma" if self.m_async else "")
                + f"_{self.state_tag}")

    def pass_configs(self) -> dict:
        # m_async: the three barriers k2_scan.py writes are all it needs (each thread reads only the
        # M terms it copied; verify proves the rest race-free). TileLang's own insertion adds one
        # a segment after the copies' wait, which it cannot see are thread-private.
        return {"tl.disable_thread_storage_sync": True} if self.m_async else {}

    def written_once(self) -> tuple:
        """Outputs `verify` proves written at most once a byte (barriers.written_once)."""
        return ("starts", "ht") if self.final_state else ("starts",)

    def derived_vars(self) -> dict[str, str]:
        return {}

    def preconditions(self) -> list[str]:
        pre = ["HV >= 1", "HV <= 256", "G >= 1", "G <= 1024"]
        if self.varlen:
            pre += ["N1 >= 2", "N1 <= 2**20 + 1", "(N1 - 1) * G * HV <= 2**23"]
        else:
            pre += ["B >= 1", "B * G * HV <= 2**23"]
        return pre


@dataclass(frozen=True)
class OrderConfig:
    """K2's launch order for longest_first (kda_kernels/k2_order.py): order[r] is the sequence of
    rank r by length, longest first, for up to max_ranked sequences; the identity above."""
    varlen: bool = True
    threads: int = 512
    max_ranked: int = LF_MAX_RANKED
    bank_conflict_budget: int = 1

    @property
    def name(self) -> str:
        return f"k2_order_r{self.max_ranked}"

    def pass_configs(self) -> dict:
        return {}

    def written_once(self) -> tuple:
        """Outputs `verify` proves written at most once a byte (barriers.written_once)."""
        return ("order",)

    def derived_vars(self) -> dict[str, str]:
        return {}

    def preconditions(self) -> list[str]:
        return ["N1 >= 2", f"N1 <= {LF_MAX_SEQS + 1}"]


@dataclass(frozen=True)
class DecodeConfig:
    """kda_decode: S = 1..8 tokens of N sequences against a state pool (kda_kernels/decode.py).
    S is a shape variable, so one build serves decoding and speculative decoding."""
    state_dtype: str = "float32"    # the pool's dtype: float32 or bfloat16
    fast_math: bool = False
    head_dim: int = 128
    value_dim: int = 128
    block_v: int = 32
    threads: int = 128
    in_dtype: str = "bfloat16"
    bank_conflict_budget: int = 4
    max_tokens: int = 8
    token_axis: bool = True         # token inputs [N, S, ...]; False: [N, ...], one token
    min_blocks: int = 8             # programs per SM the register budget must allow (__launch_bounds__)

    @property
    def name(self) -> str:
        sd = {"float32": "f32", "bfloat16": "bf16"}[self.state_dtype]
        return (f"kda_decode_{sd}_bv{self.block_v}" + ("" if self.token_axis else "_1t")
                + ("_fast" if self.fast_math else ""))

    def pass_configs(self) -> dict:
        return {"tl.enable_fast_math": self.fast_math}

    def written_once(self) -> tuple:
        """Outputs `verify` proves written at most once a byte (barriers.written_once): o, and the pool's
        rows, updated in place."""
        return ("o", "pool")

    def derived_vars(self) -> dict[str, str]:
        return {}

    def scalar_preconditions(self) -> list[str]:
        """The range kda_prefill takes, so that one lower_bound serves a model's prefill and decode."""
        return ["lower_bound >= -5.0", "lower_bound < 0.0", "scale > 0.0", "scale < 1e30"]

    def preconditions(self) -> list[str]:
        # N is the grid's z extent (at most 65535).
        tokens = ["S >= 1", f"S <= {self.max_tokens}"] if self.token_axis else []
        return ["N >= 1", "N <= 65535"] + tokens + ["H >= 1", "HV >= H", "HV <= 256", "HV % H == 0", "P >= 1",
                                                     "P <= 2**20"]

    def distinct(self) -> tuple:
        """Index buffers whose non-negative entries `verify` may assume pairwise distinct (a live
        sequence owns its pool row). The host checks it only with validate="full"."""
        return ("state_indices",)
