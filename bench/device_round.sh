#!/usr/bin/env bash
# Device rounds on the H200, from the repo root (logs and result files go to $OUT):
#   source .devbundle/activate.sh && bash bench/device_round.sh tests   # build, prewarm, GPU tests
#   source .devbundle/activate.sh && bash bench/device_round.sh bench   # peers, host overhead
#   source .devbundle/activate.sh && bash bench/device_round.sh smoke   # a few cases and three shapes
#   source .devbundle/activate.sh && bash bench/device_round.sh host    # launch floor, host overhead, host GPU tests
#   source .devbundle/activate.sh && bash bench/device_round.sh matrix  # the GPU correctness matrix alone
#   source .devbundle/activate.sh && bash bench/device_round.sh fused   # chain micro-benchmark, fused kernel checks and times
#   source .devbundle/activate.sh && bash bench/device_round.sh fusedpeers  # peers' call modes, fused ncu counters
#   source .devbundle/activate.sh && bash bench/device_round.sh attrib  # fused producer stage attribution, ncu stalls
#   source .devbundle/activate.sh && bash bench/device_round.sh integration  # custom op, compile, graphs, fla backend
#   source .devbundle/activate.sh && bash bench/device_round.sh startup # import + first call, warm and cold
#   source .devbundle/activate.sh && bash bench/device_round.sh manyseq # packed batches of many short sequences
#   source .devbundle/activate.sh && bash bench/device_round.sh short   # startup (3 warm runs) then integration
#   source .devbundle/activate.sh && bash bench/device_round.sh scaling # issue 9's scaling table with peers (split, then long)
#   source .devbundle/activate.sh && bash bench/device_round.sh decode  # kda_decode: build, GPU tests, bench/decode.py (< 8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh decode_round  # the kernel alone through TileLang's JIT
#   source .devbundle/activate.sh && bash bench/device_round.sh varlen  # build, hang probes, varlen GPU tests, manyseq
#   source .devbundle/activate.sh && bash bench/device_round.sh gva     # GPU matrix with GVA rows, fla GVA, GVA + headline bench
#   source .devbundle/activate.sh && bash bench/device_round.sh decode_api  # decode through the API, bench, ncu (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh final6  # decode build, GPU tests, bench (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh small_n  # one-token decode variants at N <= 64 (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh k1      # K1 variants through TileLang's JIT, ncu (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round7a # build, stage times, full GPU matrix (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round7b # bench_peers.py, every shape and peer (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round7c # the two long bench shapes, issue 9's split table (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round7d # K1 (staged g) and K2 (block widths) sweeps, no build (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round7e # build, GPU matrix, stage times (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh k2      # K2 variants through TileLang's JIT, ncu (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round8  # build, stage times, full GPU matrix (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round9  # K1, K2 through the JIT, then round8's steps (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh split   # issue 9's split through TileLang's JIT (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round10 # build, stage times, GPU matrix with the split (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round10b # the split through kda_prefill, then its stages (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round11a # K1 hole skipping, K2 loading warp, JIT (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round13a # K1 beside K2 (overlap_round), release check (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round13b # K1 Mqk split variants, release, matrix w/o split (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round13c # the matrix's split tests (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round16d # K2 u0k2 (JIT) against the release, then the u0k2 release: build, stage times, GPU matrix (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round29a # session 29: K1 beside K2 variants (ring depth, SM alone) (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round30a # prepared in session 29: K2 counters, the pipeline's unmeasured shapes (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round31a # prepared in session 30: the pipeline's leaner host loop: build, pipeline GPU tests, timeline, H24/H32 1x32768 (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round31b # prepared in session 30: K1 counters (round30c) on this card, the c2 32-token pair at H96 1x8192 (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round31c # session 31: the two-consumer 32-token K2: build, GPU tests at its shapes, bench/two_consumers.py (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round31d # session 31: the two-consumer rule's bound (H104-H128), the new GPU tests, the H96 1x8192 peer row (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round31e # session 31: every GPU test through the default path (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round41a # session 41: on an H200 K1's copy floor, the ws_chunks K1s, rows 9-10; on an H100 the ws_chunks K1s and round41b (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round42b # session 42: on an H200 only, the copy floor and ws_chunks 4 at H96 1x8192 (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round42a # session 42: on an H200 the copy floor, k1ws, rows 9-10 (~9 min); on an H100 the eight-part scan (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round41e # session 41: on an H200 the copy floor, then the ws_chunks K1s (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round41d # session 41: the ws_chunks K1s; on an H200 the copy floor and rows 9-10, else the scan at 16 rows (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round41b # session 41: the four-part scan's split GPU tests through the host entry, split_api (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round41c # session 41: the four-part scan at 16 rows a program against 8 (JIT; ~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round40b # session 40: the scan in parts released: build, split GPU tests, split_api; H200: rows 9-10 (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round40a # session 40: the scan in parts (JIT, float64, timed), K1 against its copy floor (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39h # session 39: on an H200 only, issue 13's rows 9-10 with kda_tile and cuDNN (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39g # session 39: ht_staged (the state's stores through shared memory; JIT, float64, timed; ~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39f # session 39: the final state's stores and products probed out (JIT; ~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39e # session 39: the split's K1 beside its pass A (coresident.py passA; ~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39d # session 39: on an H200 only, issue 13's rows 9-10 with peers (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39c # session 39: lkr over quads again (JIT), then on an H200 issue 13's rows 9-10 with peers (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39b # session 39: the lkr release: build, short GPU tests, 2048 x 64 with the state and cuDNN, JIT nolkr / cq (~7 min; ROUND39B_PEERS=1 on an H200: issue 13's rows 8-10)
#   source .devbundle/activate.sh && bash bench/device_round.sh round48d # session 48: the split's passes A and C with v_ss at H8 1x65536 (~3 min, any card)
#   source .devbundle/activate.sh && bash bench/device_round.sh round51a # session 51: on an H200 round 48c and K1's copy floor; v_ss at 96 chains through the host entry (~3-6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round51c # session 51, last ~300 s: on an H200 round 48c and the copy floor, else the 96-chain v_ss test (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round51b # session 51, after 51a: on an H200 split_api; the forced-32 matrix (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round50a # session 50: on an H200 round 48c; session 49's release through the host entry (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round50b # session 50: v_ss at 80-96 one-consumer chains, its ncu, the rule's GPU matrix (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round48c # session 48: round 48b's H200 question alone (H96 1x8192, fixed; ~1.5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round48b # session 48: v_ss with Ab's halves in one box, probe no_lo; on an H200 round 46a after it (~2 min; ~7 on an H200)
#   source .devbundle/activate.sh && bash bench/device_round.sh round48a # session 48: K2 v_ss (v^T a shared bf16 operand, Ab in bf16 halves) against the released K2, whole and no_load, ncu (~4 min, any card)
#   source .devbundle/activate.sh && bash bench/device_round.sh round46a # session 46: on an H200 round45a, round44b, K1's copy floor (~5 min); on an H100 the diet without the stores (~1 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round46b # session 46: the 32-token K1s with nl=4 and ib released: build, stage times, GPU matrix (forced 32, rule) (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round46c # session 46: issue 13's first seven rows with the peers (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round45a # session 45: K1 instruction diet (nl=4, ib), stage probes, ncu by CUDA line (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round39a # session 39: last_kr_regs (the pairwise form's lean rows with the final state), JIT against float64, timed, ncu (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round35  # session 35, one call: both short forms' GPU tests, the pairwise form (released, allrows, two kernels), the one-chunk form (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round35m # session 35, short budget: both forms JIT against float64 and timed, no build (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round34  # session 34, one call: both forms' GPU tests, then their headline rows (JIT) (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round34m # session 34: the build and as many short GPU tests as 150 s allow (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round34s # session 34: the fixed short GPU tests of both forms, no build (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round34a # session 34: the short form (1 chunk) and the pairwise form (4), JIT against the two-kernel path (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round34b # session 34: both forms through the host entry: their GPU tests, the T <= 64 matrix rows (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round34c # session 34: a copy with K1's grid, pattern and bytes against K1 (is the H200's K1 at its pattern's floor?) (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round33a # sessions 32-33: the short form, JIT against the two-kernel path, then released: its GPU tests (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round33b # session 33: the pairwise form (up to 4 chunks, JIT) against the two-kernel path (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round33c # session 33: issue 9's many-sequence rows with the peers, no state and final state (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round32c # session 32: K1 with an L2 prefetch one or two waves ahead, and without its column stores (JIT, ncu; ~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round32d # session 32: fla's integration at H96 1x8192 and the compile test (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round32a # prepared in session 31: K1 counters if on an H200, the two-consumer rule on that card (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round32b # prepared in session 31: the GPU matrix (~9 min), then ROUND32B_REST=1 for the other GPU tests (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round30d # session 30: the pipeline at H24 1x32768 again, twice, H32 1x32768 beside it (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round30c # session 30: source counters of the released 16- and 32-token K1 at H96 1x8192 (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round30b # prepared in session 29: the whole peer table (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round29c # session 29: 32-token K2 at min_blocks 1: build, forced-32 and pipeline GPU tests, stage times, pipeline (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round29b # session 29: the split at 32 tokens against 16, JIT (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26a # session 26: K2 over four sequences a program released for many short sequences: build, its GPU tests, spp_api (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26b # session 26: the GPU matrix as the rule picks, stage times (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26e # session 26: spp8 release: build, GPU matrix (rule), spp_api 1/4/8 (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26g # session 26: round26f's K1 holes and decode host rows only (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26f # session 26: decode and prefill host times beside their floor (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26d # session 26: ncu counters of the spp4 K2 through kda_prefill (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round26c # session 26: the FlashQLA cut's fused probes, issue 9's many-sequence rows with cuDNN, out= host time beside its floor (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round25a # slot_guess release: build, GPU matrix (rule), stage times (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round25b # slot_guess release: the split's GPU tests and split_api (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round19b # decode with token loads ahead of the pool row: build, GPU tests, bench, ncu at N = 1 (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round19c # 32-token K1 without store guards: K1 + K2 (16, 32 one and two consumers) at 8 shapes, fast_math K1 check, ncu (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round19d # release of the unguarded and fast_math 32-token K1: round18d's steps (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round19e # the split's passes at 32 tokens against 16, JIT (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round19f # the split at 32 tokens released: build, split GPU tests, split_api --quick (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round20b # bench_peers, every shape from BENCH_SKIP on, per-shape seconds; report from the rows (< 10 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round20c # cuDNN's call variants, the long rows against cuDNN, ncu of the 32-token split (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round20d # the split's passes with two consumers: A/B of the passes (JIT), build, split GPU tests, split_api (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round23c # prepared in session 22: kda_prefill(out=o) host time interleaved with its floor (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round28d # session 28: GPU matrix as the rule picks (longest first on), bench_peers' H96 ragged and 8x1024 rows (< 10 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round28c # session 28: build, pipeline and longest-first GPU tests, pipeline at H32 1x32768, lf_probe (< 10 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round28a # session 28: K2 longest first against the released K2, ragged and uniform rows (JIT, ~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round27b # session 27, prepared: the slab pipeline's GPU tests and times (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round27a # session 27: K1 beside resident chains where chains leave SMs idle (H32 1x32768, 1x131072, H64 1x8192; ~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round23b # prepared in session 22: K1 beside resident chains, high-priority K2 first (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round23d # session 23: release of K1 early loads / lean prologue: ffi probe, build, matrix rule and 32, stage times (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round23e # session 23: split release check, issue 9's long rows with cuDNN (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round24c # prepared in session 24: K2 over several sequences a program (spp4, spp16) against the released K2, JIT (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round24b # prepared in session 24: time slabs, GPU tests then cost and memory under limits (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round24a # prepared in session 23: K1 slot_guess against the released K1, JIT (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round23g # session 23: ncu counters of the released K1 at 16 and 32 tokens (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round23a # prepared in session 22: K1 early_loads and lean_prologue (16 and 32 tokens) against the released K1s (JIT, ~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round22e # session 22: split release check (build, all split GPU tests, split_api) (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round22d # session 22: 16-token K1 head once (JIT), release of head once / tail branch: build, matrix rule and 32, stage times, split tests (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round22c # session 22: 32-token K1 cuts tu/ir/ho (JIT), split_api, host time beside the launch floor (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round22b # session 22: release of rsqrt_nr in the 32-token K1: build, matrix forced to 32, split tests, stage times (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round22a # prepared in session 21: the 32-token K1 with Newton-refined rsqrt norms against the released one (JIT, ~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21a # prepared in session 20: two-consumer passes and the prefetching scan against float64 and timed (JIT, ~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21c # session 21: the scan at 2, 4, 8 rows a program, with and without prefetch, two-consumer passes (JIT, ~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21d # session 21: issue 9's rows (kda_tile, cuDNN; state none / final / inout), ncu of the split (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21e # session 21: the 32-token K1 at 6 programs an SM against 5 (JIT, ncu; ~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21f # session 21: pass A's identity rows lean against full (JIT), then the split release check (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21g # session 21: ncu of the split with pass A lean (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21h # session 21: host time at T = 64 after the Python path's shortening, launch floor (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round21b # prepared in session 20: the split release check with every split GPU test (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round19a # session 19: K1 at 32 tokens, source-level stalls; fast_math K1 at 32 tokens (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round18d # release of 32-token chunks: build, stage times at 16 and 32, GPU matrix default and forced 32 (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round18c # 32-token chunks: K2 with two consumers (one program a head), K1's block inverse (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round18b # 32-token chunks: K2 and K1 through the JIT, ncu counters (~6 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round18a # K2 forms: released, row, unroll, row+unroll, guarded (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round17d # K2 stores unguarded (verify-proved): JIT vs guarded, release through the host entry (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round17c # u0k2 forms (loads beside, prefetched), release through the host entry (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round17b # u0k2 release: K2 forms, build, GPU matrix, stage times, split tests (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round17a # u0k2 K2: register split and product probes (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round16c # K2 u0k2 (3 and 4 slots) against the released K2 through the JIT (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round16b # K2 u0k2 against the released K2 through the JIT (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round16a # U0 = Ab v formed in K2 (u0k2): K1 and K2 through the JIT, ncu (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15h # release (K1 dyn_search): build, GPU matrix, split tests, stage times (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15g # K1: slot search of bit_length(N - 1) steps, 13 programs an SM (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15f # K1 head-major order (its knob was not kept: bench/NOTES.md, session 15)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15e # K1 (released) counters and source-level stalls (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15d # K2 step forms (needs commit a8a4af4's K2 knobs) (~3 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15c # K2 source-level stalls, released and no_store (~2 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15b # merged output products: micro + K2 (K2 part: commit a8a4af4) (~1 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round15a # fused pairs producer: source-level stalls, pairs timing (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round14d # split 1M + forced tests, fused pairs timing (~5 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round14c # fused pairs + wide inverse, ncu, split tests (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round14b # matrix with mqk_diag; fused producer "pairs" (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round13d # K1 Mqk diagonal, release, whole matrix (~9 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh holes    # K1 hole programs returning first vs released, JIT (~4 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round12a # build, host GPU tests, stage and host times (~8 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round12b # decode GPU tests, bench, fp32 block widths (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round12c # decode bv16 via the API, ncu at N = 1, integration (~7 min)
#   source .devbundle/activate.sh && bash bench/device_round.sh round12d # build, stage times, GPU matrix (~6 min)
#   PEERS_ONLY="H96 1x8192,H64 1x8192" bash bench/device_round.sh peers  # bench_peers.py on some shapes
#   (round6a..round6d: session 6's first two rounds, each in two calls on one warm machine; session 8's
#   round8a-c ran the WY experiments through bench/k2w_round.py, since folded into k2_round.py)
set -uo pipefail
mode=${1:-tests}
OUT=${OUT:-/tmp/kda-out}; mkdir -p "$OUT"

# The release through the generated host entry: build, stage times, the whole GPU matrix (limit $1 s)
release_check() {
  timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
  timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -9
  timeout "$1" python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
    > "$OUT/pytest_gpu.log" 2>&1
  grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -12
}
# The same, the split tests apart: build, the GPU matrix without them (its JSON kept as
# gpu_matrix_main.json), stage times (limit $1 s), the split tests (limit $SPLIT_LIMIT, default $2 s)
release_check_split() {
  timeout 80 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
  timeout ${MATRIX_LIMIT:-170} python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
    tests/test_reference.py -k "not split" > "$OUT/pytest_gpu.log" 2>&1
  grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -6
  mv "$OUT/gpu_matrix.json" "$OUT/gpu_matrix_main.json" 2>/dev/null
  timeout "$1" python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -9
  timeout ${SPLIT_LIMIT:-$2} python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
    tests/test_split.py -k "split" > "$OUT/pytest_split.log" 2>&1
  tail -c 300 "$OUT/pytest_split.log"
}
# GPU tests of tests/test_gpu_correctness.py -k "$3" within $1 s: log pytest_$2.log, JSON kept as
# gpu_matrix_$2.json, a verdict line labelled ${4:-$2} and the first failures
gpu_tests() {
  timeout "$1" python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k "$3" \
    > "$OUT/pytest_$2.log" 2>&1
  echo "${4:-$2}: $(grep -E "passed|failed" "$OUT/pytest_$2.log" | tail -1)"
  grep -E "^FAILED|Error" "$OUT/pytest_$2.log" | head -5
  mv "$OUT/gpu_matrix.json" "$OUT/gpu_matrix_$2.json" 2>/dev/null
}
# The split through the generated host entry: build, the GPU matrix's split tests (limit $1 s; the
# JSON kept as gpu_matrix_split.json), then kda_prefill split against unsplit (split_api --quick)
split_check() {
  timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
  gpu_tests "$1" split split "split tests"
  timeout 90 python bench/split_api.py --quick > "$OUT/split_api.log" 2>&1
  grep -v -E '^\{|INFO' "$OUT/split_api.log" | tail -6
}
# The key counters a kernel from ncu's --csv --page details output $1 (else the tail of its stderr $2)
ncu_keys() {
  grep -E '"(Duration|DRAM Throughput|Compute \(SM\) Throughput|Theoretical Occupancy|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|Warp Cycles Per Issued Instruction|No Eligible)"' \
    "$1" | awk -F'","' '{print $5, "|", $(NF-2), "|", $NF}' | cut -c1-120 | head -40 || tail -c 600 "$2"
}
# The one-consumer v_ss release through the host entry (sessions 49-50): build, the rule's GPU
# tests of v_ss, the pipeline, two consumers and the slabs (limit $1 s; JSON kept as
# gpu_matrix_vss_one.json), then split_api --quick
vss_one_check() {
  timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
  gpu_tests "$1" vss_one "one_consumer_vss or pipeline or two_consumers or slabs" "v_ss one, pipeline, slabs"
  timeout 90 python bench/split_api.py --quick > "$OUT/split_api.log" 2>&1
  grep -v -E '^\{|INFO' "$OUT/split_api.log" | tail -6
}
# The GPU matrix without the split tests, each mode within $1 s: "rule" as the API picks, "32" with
# every unsplit call forced to 32-token chunks; logs pytest_gpu_<mode>.log, JSON gpu_matrix_<mode>.json
matrix_runs() {
  local limit=$1 c; shift
  for c in "$@"; do
    env $([ "$c" = 32 ] && echo KDA_TILE_CHUNK=32) timeout "$limit" python -m pytest -m gpu -q -p no:cacheprovider \
      tests/test_gpu_correctness.py tests/test_reference.py -k "not split" > "$OUT/pytest_gpu_$c.log" 2>&1
    echo "matrix ($c): $(grep -E "passed|failed" "$OUT/pytest_gpu_$c.log" | tail -1)"
    grep -E "^FAILED|Error" "$OUT/pytest_gpu_$c.log" | head -5
    mv "$OUT/gpu_matrix.json" "$OUT/gpu_matrix_$c.json" 2>/dev/null
  done
}
# The short GPU tests (test_gpu_correctness.py -k "$2", limit $1 s, further pytest options after
# those): their verdict, then each short form's rows from the JSON (rewritten after every case, so
# a cut run still reports)
short_tests() {
  local limit=$1 sel=$2; shift 2
  timeout "$limit" python -m pytest -q -m gpu tests/test_gpu_correctness.py -k "$sel" -p no:cacheprovider "$@" \
    > "$OUT/pytest_short.log" 2>&1
  echo "short: $(grep -E "passed|failed" "$OUT/pytest_short.log" | tail -1)"; grep -E "^FAILED|Error" "$OUT/pytest_short.log" | head -8
  python - <<'PY'
import json, os
rows = json.load(open(os.path.join(os.environ["OUT"], "gpu_matrix.json")))["cases"]
for k in (1, 4):
    r = [x for x in rows if x.get("short") == k]
    if r:
        print(f"short={k}: {len(r)} rows, worst o {max(x['err_o'] for x in r):.2e}, "
              f"state {max((x['err_ht'] or 0) for x in r):.2e}, nan {sum(bool(x['unwritten_or_nan']) for x in r)}")
PY
}
# bench/short_round.py over $1 chunks (limit $2 s, log $3, the table's last $4 lines) with the
# two-kernel path as the baseline; SHORT_SHAPES, when set, picks the timing rows
# ncu of bench/short_round.py --ncu (the released pairwise form, then SHORT_VARIANTS) with the sampled
# stalls a SASS instruction, exported on the device as $OUT/NAME_sass.csv (bench/ncu_stalls.py reads
# it) and NAME_details.csv; the report itself is not kept
pw_stalls() {
  timeout 150 ncu --clock-control none --profile-from-start off -k regex:k1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight --section Occupancy \
    --section InstructionStats --import-source no -o "$OUT/$1" python bench/short_round.py --ncu > "$OUT/$1.log" 2>&1
  tail -1 "$OUT/$1.log"
  ncu --import "$OUT/$1.ncu-rep" --page source --csv --print-source sass > "$OUT/$1_sass.csv" 2> /dev/null
  ncu --import "$OUT/$1.ncu-rep" --page details --csv > "$OUT/$1_details.csv" 2> /dev/null
  rm -f "$OUT/$1.ncu-rep"
}
short_rows() {
  KDA_TILE_SHORT=0 timeout "$2" python -u bench/short_round.py --chunks "$1" > "$OUT/$3" 2>&1
  grep -E "Error|error" "$OUT/$3" | head -3; tail -"$4" "$OUT/$3"
}
# bench/bench_peers.py under a limit of $1 s (further arguments go to it; BENCH_SKIP, BENCH_LIBS from the
# caller's environment), then a line a row: kda_tile, fla and cuDNN ms (0 where a library did not run)
peer_rows() {
  local limit=$1; shift
  BENCH_NO_HOST=1 timeout "$limit" python bench/bench_peers.py "$@" --out "$OUT" > "$OUT/bench_peers.log" 2>&1
  grep -E "Error|error" "$OUT/bench_peers.log" | head -3
  python -c "import json; [print(r['shape'], round(r['kda_tile_ms'], 3), round(r.get('fla_triton_ms') or 0, 3), round(r.get('cudnn_fe_ms') or 0, 3)) for r in map(json.loads, open('$OUT/peers-rows.jsonl'))]"
}
# K1 against a copy of its pattern (bench/copy_floor.py): copy_floor LIMIT TAIL SHAPE...
copy_floor() {
  local limit=$1 tail=$2; shift 2
  timeout "$limit" python -u bench/copy_floor.py "$@" > "$OUT/copy_floor.log" 2>&1
  grep -E "Error|error" "$OUT/copy_floor.log" | head -3; tail -"$tail" "$OUT/copy_floor.log"
}
on_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; }
# kda_decode through the generated host entry: build, the decode GPU tests, bench/decode.py
decode_check() {
  timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tee "$OUT/build.log" | tail -3
  timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_decode_gpu.py > "$OUT/decode_gpu_tests.log" 2>&1
  tail -3 "$OUT/decode_gpu_tests.log"
  timeout 170 python bench/decode.py --out "$OUT" > "$OUT/decode_bench.log" 2>&1
  grep -v '^{' "$OUT/decode_bench.log" | tail -14
}
export TL_LOG_LEVEL=WARNING
if [ "$mode" = tests ] || [ "$mode" = smoke ]; then
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv | tee "$OUT/gpu.txt"
  python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  python -m kda_tile build --jobs 12 2>&1 | grep -E "^built|FAILED" | tee "$OUT/build.log"
  JOBS=14 python bench/prewarm.py 2>&1 | grep -E "prewarm" | tee "$OUT/prewarm.log"
fi
case "$mode" in
  round41a)
    # session 41: on an H200, K1 against its copy floor (round34c's two headline shapes, and the
    # copy of K1's pattern four chunks a program), the 32-token K1 over 2 and 4 chunk slots a program
    # with the next chunk's copies early (K1Config.ws_chunks, JIT against float64), issue 13's rows
    # 9-10 (H8 1x65536, GVA) with kda_tile and cuDNN; on an H100 round41b, then the ws_chunks K1s
    # (~9 min either way)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      copy_floor 150 4 96:8192 8:65536
    fi
    if on_h200; then
      bash bench/device_round.sh k1ws
      BENCH_LIBS=kda_tile,cudnn_fe BENCH_SKIP=8 peer_rows 150
    else
      bash bench/device_round.sh round41b
      bash bench/device_round.sh k1ws
    fi ;;
  k1ws)
    # session 41: K1Config.ws_chunks (fixed 32-token K1, N chunk slots a program) against the
    # released 32-token K1, JIT, float64 check first, workspaces compared bit for bit (~3 min);
    # K1WS_SHAPES (k1_round's K1_SHAPES) and K1WS_QUICK=1 (the released K1 and ws_chunks 4 at 4 an
    # SM only) narrow it
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED_CH32)")
    M4=${R32/1,128,5/1,128,4}
    if [ -n "${K1WS_QUICK:-}" ]; then set -- "$R32" "$M4,w=4"; else set -- "$R32" "$R32,w=4" "$M4,w=4" "$R32,w=2"; fi
    K1_SHAPES=${K1WS_SHAPES:-"H96 1x8192;H8 1x65536"} timeout 240 python -u bench/k1_round.py "$@" > "$OUT/k1_ws.log" 2>&1
    grep -E "Error|error|FAILED" "$OUT/k1_ws.log" | head -3; tail -7 "$OUT/k1_ws.log" ;;
  round51a)
    # session 51, one start whichever card comes: on an H200 round 48c (v_ss for the two-consumer
    # pair, ~1.5 min) and K1 against a copy of its pattern there (copy_floor: is the H200's K1 at
    # its pattern's bytes? ~1.5 min); then build and test_one_consumer_vss (its 96-chain case,
    # VSS_ONE_MAX_PROGRAMS 96 since session 50; ~3 min). round51b next on the same warm machine.
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then bash "$0" round48c; copy_floor 120 4 96:8192 8:65536; fi
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    gpu_tests 100 vss_one one_consumer_vss "v_ss one" ;;
  round51c)
    # session 51's last ~300 device-seconds, one start: on an H200 round 48c and K1's copy floor;
    # on an H100 the build and test_one_consumer_vss (its 96-chain case)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      K2_FIXED=1 K2_SHAPES="H96 1x8192" timeout 130 python bench/k2_round.py 2,3,1,u0k2,ch32 2,3,1,u0k2,ch32,vss,abh \
        > "$OUT/k2_vss_c.log" 2>&1
      grep -E "Error|error" "$OUT/k2_vss_c.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss_c.log" | tail -5
      copy_floor 90 4 96:8192
    else
      timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
      gpu_tests 120 vss_one one_consumer_vss "v_ss one"
    fi ;;
  round51b)
    # session 51, after round 51a on the same machine (the build is there): on an H200 issue 9's
    # H8 1x65536 through kda_prefill (last measured there in session 23); the GPU matrix with every
    # unsplit call forced to 32-token chunks as far as the time goes (~5 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then timeout 90 python bench/split_api.py --quick > "$OUT/split_api.log" 2>&1
      grep -v -E '^\{|INFO' "$OUT/split_api.log" | tail -6; fi
    matrix_runs 150 32 ;;
  round50a)
    # session 50, one start whichever card comes: on an H200 round 48c first (v_ss for the
    # two-consumer pair, ~1.5 min); then session 49's release through the host entry: build, the
    # rule's GPU tests (one consumer with v_ss, the pipeline, two consumers, the slabs incl.
    # test_slabs_memory with the allocator model), split_api --quick (~7 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then bash "$0" round48c; fi
    vss_one_check 170 ;;
  round50b)
    # session 50, after round 50a on the same machine: v_ss at 80 and 96 one-consumer chains (the
    # bound's unmeasured 65-132; JIT, fixed); ncu of the one-consumer K2 with and without v_ss at
    # H32 1x32768; then the GPU matrix as the rule picks (~8 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K2_FIXED=1 K2_SHAPES="H40 1x16384;H48 1x8192" timeout 150 python bench/k2_round.py 1,3,1,u0k2,ch32 \
      1,3,1,u0k2,ch32,vss,abh > "$OUT/k2_vss_bound.log" 2>&1
    grep -E "Error|error" "$OUT/k2_vss_bound.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss_bound.log" | tail -5
    K2_FIXED=1 K2_NCU_SHAPE="H32 1x32768" timeout 120 ncu --clock-control none --profile-from-start off \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --csv --page details python bench/k2_round.py ncu 1,3,1,u0k2,ch32 \
      1,3,1,u0k2,ch32,vss,abh > "$OUT/ncu_vss_one.csv" 2> "$OUT/ncu_vss_one.err"
    ncu_keys "$OUT/ncu_vss_one.csv" "$OUT/ncu_vss_one.err"
    matrix_runs 250 rule ;;
  round49c)
    # session 49: the one-consumer 32-token K2 with v_ss released (configs.use_vss_one, the
    # pipeline's slabs too): build; its GPU tests, the pipeline's, two consumers' and the slabs'
    # as the rule picks; split_api --quick (H32 1x32768 through kda_prefill: the pipeline with
    # v_ss); then the GPU matrix with every unsplit call forced to 32 tokens (v_ss at <= 64
    # chains), as far as the time goes (~8 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    vss_one_check 150
    matrix_runs 200 32 ;;
  round49b)
    # session 49: the split's passes with v_ss released (K1 writing Ab's bf16 halves): build, every
    # split GPU test through the host entry, split_api --quick; then the one-consumer 32-token K2
    # with v_ss (~9 min; round 48c is the H200's next call)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    split_check 320
    # the unsplit one-consumer 32-token K2 (one chain an SM, chain-bound on either card) with v_ss
    # and its K1 writing the halves, against the released pair (JIT, fixed batches)
    K2_FIXED=1 K2_SHAPES="H32 1x32768;H64 1x8192" timeout 140 python bench/k2_round.py 1,3,1,u0k2,ch32 \
      1,3,1,u0k2,ch32,vss,abh > "$OUT/k2_vss_one.log" 2>&1
    grep -E "Error|error" "$OUT/k2_vss_one.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss_one.log" | tail -5 ;;
  round49a)
    # session 49, one start whichever card comes: on an H200 round 48c (is v_ss + K1's halves the
    # faster pair where K2 is held by its chain?) then round 46a (K1's diet and copy floor there);
    # on an H100 round 48d (the split's passes with v_ss; pass A is chain-bound on either card)
    if on_h200; then bash "$0" round48c; bash "$0" round46a; else bash "$0" round48d; fi ;;
  round48d)
    # session 48: the split's passes with v_ss (K1 writing Ab's halves, passes A and C reading v^T
    # from their slots), H8 1x65536 at the released plan (32-token chunks, two consumers, G 16)
    # and G 8, each checked against float64 first; pass A is chain-bound on either card (~3 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    for vss in 0 1; do
      SPLIT_VSS=$vss SPLIT_CHUNK=32 SPLIT_NW=2 SPLIT_SHAPES="H8 1x65536" timeout 200 python bench/split_round.py 16 8 \
        > "$OUT/split_vss$vss.log" 2>&1
      grep -E "Error|error" "$OUT/split_vss$vss.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/split_vss$vss.log" | tail -4
    done ;;
  round48c)
    # session 48, short (~1.5 min with the start): round 48b's H200 question alone, fixed H96 1x8192:
    # is the pair with v_ss + K1's halves faster than the released pair where K2 is held by its chain?
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    on_h200 || { echo "an H100: round 48b ran on two (results/2026-12-07-session48/)"; exit 0; }
    K2_FIXED=1 K2_SHAPES="H96 1x8192" timeout 200 python bench/k2_round.py 2,3,1,u0k2,ch32 2,3,1,u0k2,ch32,vss,abh \
      2,3,1,u0k2,ch32,no_load 2,3,1,u0k2,ch32,vss,no_load > "$OUT/k2_vss_c.log" 2>&1
    grep -E "Error|error" "$OUT/k2_vss_c.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss_c.log" | tail -9 ;;
  round48b)
    # session 48, after round 48a (H100: v_ss +14% whole, -11.5% no_load; DRAM 87% -> 80%): Ab's
    # halves now one TMA box (a chunk's hi rows, then lo's), and probe no_lo (hi only: the
    # released bytes) to tell bytes from form; on an H200, then round 46a (~2 min; +5 on an H200)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    # (abh: K1 writes the halves itself, K1Config.ab_halves; "its K1" is then the pair's K1)
    K2_FIXED=1 K2_SHAPES="H96 1x8192;H64 8x1024" timeout 300 python bench/k2_round.py 2,3,1,u0k2,ch32 \
      2,3,1,u0k2,ch32,vss 2,3,1,u0k2,ch32,vss,no_lo 2,3,1,u0k2,ch32,vss,abh 2,3,1,u0k2,ch32,no_load \
      2,3,1,u0k2,ch32,vss,no_load > "$OUT/k2_vss_b.log" 2>&1
    grep -E "Error|error" "$OUT/k2_vss_b.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss_b.log" | tail -13
    # varlen (cu_seqlens; a tail chunk takes v through registers, masked): released and v_ss
    K2_SHAPES="H96 1x8192;H96 ragged6" timeout 200 python bench/k2_round.py 2,3,1,u0k2,ch32 2,3,1,u0k2,ch32,vss,abh \
      > "$OUT/k2_vss_varlen.log" 2>&1
    grep -E "Error|error" "$OUT/k2_vss_varlen.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss_varlen.log" | tail -5
    if on_h200; then bash "$0" round46a; fi ;;
  round48a)
    # session 48: K2's v^T as a shared bf16 operand with Ab in two bf16 halves (K2Config.v_ss,
    # fixed batches; no v loads or conversions in the consumers) against the released K2, whole and
    # no_load, JIT, checked against float64 first; then ncu of both by SASS line (~4 min, any card)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K2_FIXED=1 K2_SHAPES="H96 1x8192;H64 8x1024;H96 16x1024" timeout 300 python bench/k2_round.py \
      2,3,1,u0k2,ch32 2,3,1,u0k2,ch32,vss 2,3,1,u0k2,ch32,no_load 2,3,1,u0k2,ch32,vss,no_load > "$OUT/k2_vss.log" 2>&1
    grep -E "Error|error" "$OUT/k2_vss.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_vss.log" | tail -9
    for v in 2,3,1,u0k2,ch32 2,3,1,u0k2,ch32,vss; do
      n=k2_${v//,/_}
      K2_FIXED=1 timeout 120 ncu --clock-control none --profile-from-start off -k regex:k2 \
        --section WarpStateStats --section SourceCounters --section SpeedOfLight --section Occupancy \
        --section InstructionStats --section SchedulerStats --import-source no -o "$OUT/$n" \
        python bench/k2_round.py ncu "$v" > "$OUT/$n.log" 2>&1; tail -1 "$OUT/$n.log"
      ncu --import "$OUT/$n.ncu-rep" --page source --csv --print-source sass 2> /dev/null | gzip > "$OUT/${n}_sass.csv.gz"
      ncu --import "$OUT/$n.ncu-rep" --page details --csv 2> /dev/null | gzip > "$OUT/${n}_details.csv.gz"
      rm -f "$OUT/$n.ncu-rep"
    done ;;
  round47c)
    # session 47: is K2 held by its chain or by its ring's bytes at H96 1x8192? The released
    # 32-token K2 (two consumers, and one) against probe no_load (the ring's DRAM traffic left
    # out: the first three chunks fill it, later ones reuse its data); JIT, any card (the H100's
    # and H200's SM clocks are the same, so no_load is the chain's floor on both) (~3 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K2_SHAPES="H96 1x8192" timeout 300 python bench/k2_round.py 2,3,1,u0k2,ch32 2,3,1,u0k2,ch32,no_load \
      1,3,1,u0k2,ch32 1,3,1,u0k2,ch32,no_load > "$OUT/k2_noload.log" 2>&1
    grep -E "Error|error" "$OUT/k2_noload.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_noload.log" | tail -8 ;;
  round47b)
    # session 47: the one rule-matrix failure of round47a (pw_ragged2048_H32: the float64
    # reference ran out of the H100's memory), with references over 1 GiB now kept in fp32; the
    # short forms' NaN contract and the slab memory rows beside it (~2 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 240 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "pw_ragged2048_H32 or ragged4096 or max_seqlen_broken or slabs_memory" > "$OUT/pytest_gpu_47b.log" 2>&1
    echo "round47b: $(grep -E "passed|failed" "$OUT/pytest_gpu_47b.log" | tail -1)"
    grep -E "^FAILED|Error" "$OUT/pytest_gpu_47b.log" | head -5 ;;
  round47a)
    # session 47, after round46b's forced-32 matrix (H100: 126 passed; its 29 failures were the
    # short-form tests and the slab plan under KDA_TILE_CHUNK=32, both mended): the matrix as the
    # rule picks, in full, with the nl=4 + ib K1s released; then the forced-32 rows that failed
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    matrix_runs 330 rule
    KDA_TILE_CHUNK=32 timeout 90 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "short or slabs_memory" > "$OUT/pytest_gpu_32_short.log" 2>&1
    echo "forced 32, short and slabs: $(grep -E "passed|failed|skipped" "$OUT/pytest_gpu_32_short.log" | tail -1)" ;;
  round46b)
    # session 46: norm_lanes 4 and inv_blocks released on the four 32-token K1s (if round 45a held):
    # build, stage times, the GPU matrix with every unsplit call forced to 32-token chunks (the
    # new K1s run in all of it), then as the rule picks where time is left
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -9
    matrix_runs 200 32
    [ "${ROUND46B_RULE:-1}" = 1 ] && matrix_runs 120 rule ;;
  round46a)
    # session 46. On an H200, most telling first (a call cut short still returns what ran): K1's
    # instruction diet and the norms and column stores left out (JIT against float64, fixed
    # batch), K1 against a copy of its pattern (copy_floor), the stage probes (round44b), ncu of
    # the fixed K1s by line and pipe (round45a's second half), occupancy (~5 min); round46b next
    # on the same warm machine if the diet gained. On an H100 (whose round45a / 44b are in
    # results/2026-12-07-session46/): the diet's cuts with the column stores out, where that
    # card's K1 is off its bytes (~1 min)
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.PRE_DIET_CH32)")  # the diet is measured against the form before it
    if on_h200; then
      nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
      K1_SHAPES="H96 1x8192;H8 1x65536" timeout 150 python -u bench/k1_round.py "$R32" "$R32,nl=4" "$R32,ib" \
        "$R32,ib,nl=4" "$R32,ib,nl=4,ir" "$R32,p=norms" "$R32,p=colstore" "$R32,p=colstore+norms" \
        > "$OUT/k1_diet.log" 2>&1
      grep -E "Error|error|FAILED" "$OUT/k1_diet.log" | head -3; tail -10 "$OUT/k1_diet.log"
      copy_floor 120 4 96:8192 8:65536
      bash "$0" round44b
      K1_NCU_ONLY=1 bash "$0" round45a
      # occupancy's slope (4 programs an SM against 5) and the next chunk in flight (ws_chunks 4)
      M4=${R32/1,128,5/1,128,4}
      K1_SHAPES="H96 1x8192;H8 1x65536" timeout 120 python -u bench/k1_round.py "$R32" "$M4" "$M4,w=4" \
        > "$OUT/k1_occ.log" 2>&1
      grep -E "Error|error|FAILED" "$OUT/k1_occ.log" | head -3; tail -4 "$OUT/k1_occ.log"
    elif [ -z "${ROUND46A_H100:-}" ]; then
      echo "an H100: its round 46a ran at 07:30 (results/2026-12-07-session46/round46a_h100/); ROUND46A_H100=1 runs it again"
    else
      # the H100 without K1's column stores (not at its bytes there): do the diet's cuts pay?
      K1_SHAPES="H96 1x8192;H8 1x65536" timeout 200 python -u bench/k1_round.py "$R32" "$R32,p=colstore" \
        "$R32,p=colstore+norms" "$R32,ib,nl=4,p=colstore" "$R32,ib,p=colstore" > "$OUT/k1_diet_colstore.log" 2>&1
      grep -E "Error|error" "$OUT/k1_diet_colstore.log" | head -3; tail -7 "$OUT/k1_diet_colstore.log"
    fi ;;
  round46c)
    # session 46, after round46b on the same warm machine: issue 13's first seven rows, every peer
    # in its fastest call mode and checked against kda_tile first (BENCH_SKIP=N resumes at row N)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    peer_rows 480 ;;
  round45a)
    # session 45: the instruction diet of the released 32-token K1 (JIT against float64, fixed
    # batch H96 1x8192 and H8 1x65536): the row norms over 4 lanes a row (nl=4), the diagonal
    # blocks' inverses from 8-row blocks (ib), both; the norms and stages left out (probes);
    # then ncu source counters of the fixed released K1 by CUDA line (CSVs kept gzipped for
    # bench/ncu_lines.py) (~5 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.PRE_DIET_CH32)")
    set -- "$R32" "$R32,nl=4" "$R32,ib" "$R32,ib,nl=4"
    for p in norms colstore+inverse; do
      set -- "$@" "$R32,p=$p"
    done
    if [ -z "${K1_NCU_ONLY:-}" ]; then
      K1_SHAPES="H96 1x8192;H8 1x65536" timeout 270 python -u bench/k1_round.py "$@" > "$OUT/k1_diet.log" 2>&1
      grep -E "Error|error|FAILED" "$OUT/k1_diet.log" | head -3; tail -9 "$OUT/k1_diet.log"
    fi
    F32=${R32/,holes/}; F32=${F32/,ds/}; F32=${F32/,sg/}
    K1_NCU_FIXED=1 timeout 150 ncu --clock-control none --profile-from-start off --import-source yes -k regex:k1 --section SpeedOfLight \
      --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats \
      --section SourceCounters --section ComputeWorkloadAnalysis \
      -o "$OUT/k1f_src" python bench/k1_round.py ncu "$F32" "$F32,ib,nl=4" > "$OUT/k1f_ncu.log" 2>&1
    tail -1 "$OUT/k1f_ncu.log"
    ncu --import "$OUT/k1f_src.ncu-rep" --csv --page details > "$OUT/k1f_details.csv" 2> "$OUT/k1f_src.err"
    ncu --import "$OUT/k1f_src.ncu-rep" --page source --csv --print-source cuda > "$OUT/k1f_cuda.csv" 2>> "$OUT/k1f_src.err"
    ncu --import "$OUT/k1f_src.ncu-rep" --csv --page raw > "$OUT/k1f_raw.csv" 2>> "$OUT/k1f_src.err"
    ncu --import "$OUT/k1f_src.ncu-rep" --page source --csv --print-source sass > "$OUT/k1f_sass.csv" 2>> "$OUT/k1f_src.err"
    rm -f "$OUT/k1f_src.ncu-rep"; gzip -f "$OUT"/k1f_*.csv
    grep -E "Duration|Executed Ipc Active|Warp Cycles Per Issued|Registers Per" <(zcat "$OUT/k1f_details.csv.gz") | cut -d, -f13-15 | head -8
    python bench/ncu_pipes.py "$OUT/k1f_raw.csv.gz" ;;
  round44b)
    # session 44, after round 44a: what K1's work is made of once bytes are to spare: the released
    # 32-token K1 without its qd, kr, gC stores (p=colstore), then each stage left out as well (the
    # diagonal blocks' forward substitution, the off-diagonal block's products, the [L; Mqk]
    # product, the Wk product), then all four, at H96 1x8192 and H8 1x65536 (JIT, ~2 min; the
    # probes fail the check by construction, timed only)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED_CH32)")
    set -- "$R32"
    for p in colstore colstore+inverse colstore+inv21 colstore+lm colstore+ab colstore+inverse+inv21+lm+ab; do
      set -- "$@" "$R32,p=$p"
    done
    K1_SHAPES="H96 1x8192;H8 1x65536" timeout 300 python -u bench/k1_round.py "$@" > "$OUT/k1_parts.log" 2>&1
    grep -E "Error|error|FAILED" "$OUT/k1_parts.log" | head -3; tail -9 "$OUT/k1_parts.log" ;;
  round44a)
    # session 44: is K1 held by its loads' latency where the card has bandwidth to spare (the
    # H200's case)? On any card, JIT against float64: the released 32-token K1 and ws_chunks 4 at
    # 4 an SM, each whole and without its qd, kr, gC stores (p=colstore: 70% of K1's bytes), at
    # H96 1x8192 and H8 1x65536 (~3 min); on an H200 K1's copy floor first and ws_chunks 2 too
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED_CH32)")
    M4=${R32/1,128,5/1,128,4}
    set -- "$R32" "$R32,p=colstore" "$M4,w=4" "$M4,w=4,p=colstore"
    if on_h200; then
      copy_floor 120 4 96:8192 8:65536
      set -- "$@" "$R32,w=2"
    fi
    K1_SHAPES="H96 1x8192;H8 1x65536" timeout 300 python -u bench/k1_round.py "$@" > "$OUT/k1_colstore.log" 2>&1
    grep -E "Error|error|FAILED" "$OUT/k1_colstore.log" | head -3; tail -8 "$OUT/k1_colstore.log" ;;
  round42b)
    # session 42, the last device seconds: on an H200 only, K1's copy floor and the ws_chunks K1 at
    # 4 programs an SM beside the released 32-token K1 at H96 1x8192 (~2 min); nothing on an H100
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      copy_floor 120 4 96:8192
      K1WS_SHAPES="H96 1x8192" K1WS_QUICK=1 bash bench/device_round.sh k1ws
    fi ;;
  round42a)
    # session 42: on an H200 K1's copy floor, the ws_chunks K1s (k1ws) and issue 13's rows 9-10 with
    # cuDNN (~9 min); on an H100 the ws_chunks K1s (their last program now walks only slots below
    # NC) and the eight-part scan against four parts (round41c) (~6 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      copy_floor 120 4 96:8192 8:65536
      bash bench/device_round.sh k1ws
      BENCH_LIBS=kda_tile,cudnn_fe BENCH_SKIP=8 peer_rows 150
    else
      bash bench/device_round.sh k1ws
      ROUND41C_PARTS=4,8 ROUND41C_BR=8 bash bench/device_round.sh round41c
    fi ;;
  round41e)
    # session 41, the last device minutes: on an H200 K1's copy floor first, then the ws_chunks K1s
    # at 4 and 5 programs an SM (k1ws); on an H100 nothing unless ROUND41E_ANY=1 (~3 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      copy_floor 120 4 96:8192 8:65536
      bash bench/device_round.sh k1ws
    elif [ -n "${ROUND41E_ANY:-}" ]; then
      bash bench/device_round.sh k1ws
    fi ;;
  round41d)
    # session 41, after round 41a's H100: the fixed ws_chunks K1s (k1ws); on an H200 then K1's copy
    # floor and issue 13's rows 9-10 with cuDNN, on an H100 the scan at 16 rows (round41c) (~8 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    bash bench/device_round.sh k1ws
    if on_h200; then
      copy_floor 120 4 96:8192 8:65536
      BENCH_LIBS=kda_tile,cudnn_fe BENCH_SKIP=8 peer_rows 150
    else
      bash bench/device_round.sh round41c
    fi ;;
  round41b)
    # session 41: the four-part scan (released in session 40) through the host entry: build, every
    # split GPU test, split_api --quick (~6 min)
    split_check 220 ;;
  round41c)
    # session 41: the four-part scan with 16 state rows a program (8 programs a head, half of M's
    # L2 reads a segment) against 8 rows, JIT against float64 (~3 min); ROUND41C_PARTS=4,8
    # ROUND41C_BR=8 times eight parts (shorter FMA chains) instead
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SPLIT_CHUNK=32 SPLIT_SCAN_PARTS=${ROUND41C_PARTS:-4} SPLIT_SCAN_BR=${ROUND41C_BR:-8,16} SPLIT_SHAPES="H8 1x65536,H8 1x262144" \
      timeout 170 python -u bench/split_round.py 16 > "$OUT/split_scan_br.log" 2>&1
    grep -E "Error|error" "$OUT/split_scan_br.log" | head -3; tail -6 "$OUT/split_scan_br.log" ;;
  round40b)
    # session 40: the scan in parts with M through cp.async (ScanConfig.m_async, JIT against float64,
    # timed beside 1 and 4 parts), then the scan in parts released (configs.scan_parts): build, every split GPU test through
    # the host entry, split_api --quick (the rule's scan against one part, same call); with ROUND40B_ROWS=1
    # on an H200 also issue 13's rows 9-10 (H8 1x65536, GVA) with kda_tile and cuDNN (~6 min, ~8 with the rows)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SPLIT_CHUNK=32 SPLIT_SCAN_PARTS=1,4,4ma SPLIT_SHAPES="H8 1x65536,H8 1x262144" \
      timeout 150 python -u bench/split_round.py 16 > "$OUT/split_scan.log" 2>&1
    grep -E "Error|error" "$OUT/split_scan.log" | head -3; tail -8 "$OUT/split_scan.log"
    split_check 320
    if on_h200 && [ -n "$ROUND40B_ROWS" ]; then BENCH_LIBS=kda_tile,cudnn_fe BENCH_SKIP=8 peer_rows 120; fi ;;
  round40a)
    # session 40: the scan with its sums cut into parts (ScanConfig.parts 1, 4, 2; JIT, against
    # float64 first, then timed with passes A and C at H8 and H16 1x65536, H8 1x262144), then K1
    # against a copy of its pattern (round34c's copy_floor; NOTES session 40 has the predictions) (~8 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SPLIT_CHUNK=32 SPLIT_SCAN_PARTS=1,4,2 SPLIT_SHAPES="H8 1x65536,H16 1x65536,H8 1x262144" \
      timeout 330 python -u bench/split_round.py 8 16 > "$OUT/split_scan.log" 2>&1
    grep -E "Error|error" "$OUT/split_scan.log" | head -3; tail -20 "$OUT/split_scan.log"
    copy_floor 150 6 96:8192 8:65536 ;;
  fused)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv | tee "$OUT/gpu.txt"
    timeout 120 python bench/fused_round.py prewarm smoke > "$OUT/smoke.log" 2>&1; grep -E "SMOKE|correctness|FAILED|Error" "$OUT/smoke.log" | tail -30
    if grep -q "correctness: .* 0 bad" "$OUT/smoke.log"; then
      timeout 240 python bench/fused_round.py correctness > "$OUT/fused_correctness.log" 2>&1
      grep -v -E '^\{|INFO' "$OUT/fused_correctness.log" | tail -25
      timeout 150 python bench/fused_round.py timing > "$OUT/fused_timing.log" 2>&1
      grep -v -E '^\{|INFO' "$OUT/fused_timing.log" | tail -14
      [ -n "${WITH_PEERS:-}" ] && timeout 150 python bench/fused_round.py peers > "$OUT/peers_modes.log" 2>&1
      [ -n "${WITH_PEERS:-}" ] && grep -v -E '^\{|INFO' "$OUT/peers_modes.log" | tail -40
      if [ -n "${WITH_NCU:-}" ]; then
        timeout 150 ncu --clock-control none --profile-from-start off --csv --section SpeedOfLight --section Occupancy \
          --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
          python bench/fused_round.py ncu > "$OUT/ncu.csv" 2> "$OUT/ncu.err"; tail -2 "$OUT/ncu.err"; wc -l "$OUT/ncu.csv"
      fi
    fi ;;
  attrib)
    timeout 200 python bench/fused_round.py attrib > "$OUT/attrib.log" 2>&1; grep -v -E 'INFO|compiled' "$OUT/attrib.log" | tail -8
    timeout 150 ncu --clock-control none --profile-from-start off --csv --section WarpStateStats --section SchedulerStats \
      --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
      python bench/fused_round.py ncu > "$OUT/ncu_stalls.csv" 2> "$OUT/ncu.err"; tail -2 "$OUT/ncu.err"; wc -l "$OUT/ncu_stalls.csv" ;;
  integration)
    # torch.compile / CUDA graphs through the custom op, the fla backend on vs off, argument errors
    timeout 400 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py > "$OUT/pytest_integration.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_integration.log" | tail -25 ;;
  short)
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | tee "$OUT/build.log" | grep -E "FAILED|NOT VERIFIED"
    timeout 200 python bench/startup.py --out "$OUT" --runs 3 2>&1 | tee "$OUT/startup.log" | tail -14
    timeout 230 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py > "$OUT/pytest_integration.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_integration.log" | tail -20 ;;
  varlen)
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED|NOT VERIFIED"
    bash bench/hang_round.sh 2>&1 | tee "$OUT/hang_round.log"
    timeout 200 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k "varlen or many" \
      > "$OUT/pytest_varlen.log" 2>&1; grep -E "passed|failed|FAILED|Error" "$OUT/pytest_varlen.log" | tail -12
    timeout 150 python bench/manyseq.py sweep --out "$OUT" --timeout 20 > "$OUT/manyseq.log" 2>&1
    grep -v '^{' "$OUT/manyseq.log" | tail -10 ;;
  round6c)
    # session 6, round 2, part A: host overhead first on a quiet machine (load printed), then the
    # decode kernel variants through TileLang's JIT (bench/decode_round.py sweep)
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED" | tail -3
    uptime; ps -eo pcpu,comm --sort=-pcpu | head -4
    timeout 150 python bench/host_overhead.py --iters 2000 --warmup 200 > "$OUT/host.log" 2>&1
    grep -E "kda_prefill|entry: raw, graph|floor: (torch.empty|TVM-FFI nop, the)" "$OUT/host.log" | grep -v '^{' | tail -14
    timeout 330 python bench/decode_round.py sweep > "$OUT/decode_sweep.log" 2>&1
    grep -v -E '^\{|INFO' "$OUT/decode_sweep.log" | tail -18 ;;
  round6d)
    # part B: the GVA row against the peers and fla's GVA call through the backend (fresh Triton
    # caches compile for minutes: generous limits)
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED" | tail -3
    BENCH_NO_HOST=1 timeout 300 python -u bench/bench_peers.py --out "$OUT" --only "HV64" > "$OUT/bench.log" 2>&1
    grep -E "^\| H" "$OUT/bench.log" | tail -4
    timeout 240 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py -k 77 -rA \
      > "$OUT/pytest_integration_gva.log" 2>&1; grep -E "PASSED|FAILED|passed|failed" "$OUT/pytest_integration_gva.log" | tail -4 ;;
  small_n)
    # one-token decode variants at N = 1, 8, 64 through TileLang's JIT (no build): narrower value
    # blocks for few sequences
    timeout 200 python bench/decode_round.py sweep_small_n > "$OUT/decode_small_n.log" 2>&1
    grep -v -E '^\{|INFO' "$OUT/decode_small_n.log" | tail -11 ;;
  final6)
    # session 6, last round: decode with token 0's inputs staged before the pool row (N = 1
    # latency): build, GPU tests, bench/decode.py; then the K1/K2 host rows (stage_times)
    decode_check ;;
  decode_api)
    # session 6, round 3: the rewritten decode kernel (and its one-token builds) through the API:
    # build, GPU tests, bench/decode.py, then ncu counters of one launch per pool dtype
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 110 python bench/host_overhead.py --iters 1000 --warmup 100 > "$OUT/host.log" 2>&1
    grep -E "^- kda_prefill|inference_mode|floor: torch.empty" "$OUT/host.log" | tail -9
    timeout 120 python -m pytest -m gpu -q -p no:cacheprovider tests/test_decode_gpu.py > "$OUT/decode_gpu_tests.log" 2>&1
    tail -3 "$OUT/decode_gpu_tests.log"
    timeout 180 python bench/decode.py --out "$OUT" > "$OUT/decode_bench.log" 2>&1
    grep -v '^{' "$OUT/decode_bench.log" | tail -14
    timeout 90 ncu --clock-control none -k regex:kda_decode --csv --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section MemoryWorkloadAnalysis python bench/decode_round.py ncu > "$OUT/decode_ncu.csv" 2> "$OUT/decode_ncu.err"
    tail -2 "$OUT/decode_ncu.err"; grep -E "DRAM Throughput|Achieved Occupancy|Registers Per|Duration\"" "$OUT/decode_ncu.csv" | cut -c1-220 | tail -8 ;;
  round6a)
    # session 6, round 1 (branch round6 = main + k1-hoist + decode-host), part A: K1 hoisting's
    # stage times, out= host time, matrix subset, the GVA bench row, fla's GVA call
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -9
    timeout 90 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "gva or many_sequences or fast_math or (test_varlen and 96) or (test_fixed and 96 and 8192)" \
      > "$OUT/pytest_gpu_subset.log" 2>&1; grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu_subset.log" | tail -6
    BENCH_NO_HOST=1 timeout 120 python bench/bench_peers.py --out "$OUT" --only "HV64,H96 1x8192" > "$OUT/bench.log" 2>&1
    grep -E "^\| H" "$OUT/bench.log" | tail -4
    timeout 90 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py -k 77 -rA \
      > "$OUT/pytest_integration_gva.log" 2>&1; grep -E "PASSED|FAILED|passed|failed" "$OUT/pytest_integration_gva.log" | tail -4 ;;
  round6b)
    # part B (same warm machine, kernels built by part A): host overhead rows incl. out=, then decode
    timeout 60 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED|NOT VERIFIED" | tail -3
    timeout 170 python bench/host_overhead.py --iters 1500 --warmup 100 > "$OUT/host.log" 2>&1
    grep -E "kda_prefill|entry: raw, graph|floor: torch.empty" "$OUT/host.log" | grep -v '^{' | tail -14
    timeout 120 python -m pytest -m gpu -q -p no:cacheprovider tests/test_decode_gpu.py > "$OUT/decode_gpu_tests.log" 2>&1
    tail -3 "$OUT/decode_gpu_tests.log"
    timeout 170 python bench/decode.py --out "$OUT" > "$OUT/decode_bench.log" 2>&1
    grep -v '^{' "$OUT/decode_bench.log" | tail -14 ;;
  gva)
    # after K1/K2 gained GVA (every released build's IR changed): the whole GPU matrix with its GVA
    # rows, fla's chunk_kda with GVA through the backend, and the GVA shape plus the headline shape
    # against the peers
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED|NOT VERIFIED"
    timeout 240 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      > "$OUT/pytest_gpu.log" 2>&1; grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -12
    timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py -k "300" \
      > "$OUT/pytest_integration_gva.log" 2>&1; grep -E "passed|failed|FAILED|Error" "$OUT/pytest_integration_gva.log" | tail -5
    BENCH_NO_HOST=1 timeout 200 python bench/bench_peers.py --out "$OUT" --only "HV64,H96 1x8192" > "$OUT/bench.log" 2>&1
    tail -8 "$OUT/bench.log" ;;
  decode)
    # kda_tile.kda_decode (issue 12): build (kernels + entries), the decode GPU tests, then bench/decode.py
    decode_check ;;
  decode_round)
    timeout 120 python bench/decode_round.py smoke > "$OUT/decode_smoke.log" 2>&1; grep -E "correctness|Error" "$OUT/decode_smoke.log" | tail -5
    if grep -q "correctness: .* 0 bad" "$OUT/decode_smoke.log"; then
      timeout 240 python bench/decode_round.py correctness > "$OUT/decode_correctness.log" 2>&1
      grep -E "correctness|Error" "$OUT/decode_correctness.log" | tail -5
      timeout 200 python bench/decode_round.py timing > "$OUT/decode_timing.log" 2>&1
      grep -v -E '^\{|INFO' "$OUT/decode_timing.log" | tail -8
    fi ;;
  scaling)
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED|NOT VERIFIED"
    timeout ${SCALING_LIMIT:-460} python bench/scaling.py --out "$OUT" ${SCALING_ONLY:+--only $SCALING_ONLY} > "$OUT/scaling.log" 2>&1
    grep -v '^{' "$OUT/scaling.log" | tail -14 ;;
  manyseq)
    timeout 400 python bench/manyseq.py sweep --out "$OUT" --timeout ${MANYSEQ_TIMEOUT:-20} > "$OUT/manyseq.log" 2>&1
    grep -v '^{' "$OUT/manyseq.log" | tail -14 ;;
  chain)
    timeout 150 python bench/chain_step.py > "$OUT/chain_step.log" 2>&1; tail -8 "$OUT/chain_step.log" ;;
  fusedpeers)
    timeout 300 python bench/fused_round.py peers > "$OUT/peers_modes.log" 2>&1; grep -v -E '^\{' "$OUT/peers_modes.log" | tail -40
    timeout 200 ncu --clock-control none --profile-from-start off --csv --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
      python bench/fused_round.py ncu > "$OUT/ncu.csv" 2> "$OUT/ncu.err"; tail -3 "$OUT/ncu.err"; wc -l "$OUT/ncu.csv" ;;
  host)
    timeout 90 python bench/launch_floor.py > "$OUT/floor.log" 2>&1; tail -10 "$OUT/floor.log"
    timeout 200 python bench/host_overhead.py --iters 3000 > "$OUT/host.log" 2>&1
    grep -v -E '^\{|nanobind|leaked' "$OUT/host.log" | tail -60
    JOBS=14 timeout 150 python bench/prewarm.py 2>&1 | grep -E "prewarm" | tee "$OUT/prewarm.log"
    timeout 200 python -m pytest -m gpu -q -p no:cacheprovider tests/test_host_codegen_gpu.py > "$OUT/pytest_host_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_host_gpu.log" | tail -25 ;;
  round7a)
    # session 7: the released K1 rewritten (column pass, forward substitution, 64 registers):
    # stage times, then the whole GPU correctness matrix
    release_check 330 ;;
  round7b)
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED" | tail -3
    BENCH_NO_HOST=1 timeout 530 python -u bench/bench_peers.py --out "$OUT" > "$OUT/bench.log" 2>&1
    grep -E "^\| |geomean|peak" "$OUT/bench.log" | tail -16 ;;
  round7c)
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED" | tail -3
    BENCH_NO_HOST=1 timeout 210 python -u bench/bench_peers.py --out "$OUT" --only "H32 1x32768,H8 1x65536" > "$OUT/bench.log" 2>&1
    grep -E "^\| H" "$OUT/bench.log" | tail -4
    timeout 270 python bench/scaling.py --out "$OUT" --only split > "$OUT/scaling.log" 2>&1
    grep -v '^{' "$OUT/scaling.log" | tail -10 ;;
  round7d)
    timeout 150 python bench/k1_round.py > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -9
    timeout 140 python bench/k2_round.py > "$OUT/k2_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k2_round.log" | tail -10 ;;
  round7e)
    # session 7's last round: K1 with g staged in shared memory (6 programs an SM) released
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -8
    timeout 45 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -7 ;;
  matrix)
    JOBS=14 timeout 150 python bench/prewarm.py 2>&1 | grep -E "prewarm" | tee "$OUT/prewarm.log"
    timeout 400 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -25 ;;
  smoke)
    python bench/smoke.py 2>&1 | tee "$OUT/smoke.log" | tail -60 ;;
  startup)
    # build everything in parallel first (the bench's priming process then only loads), then fresh
    # processes: 1 priming + 5 warm runs, 1 cold run (fresh TILELANG_CACHE_DIR and KDA_TILE_CACHE)
    timeout 300 python -m kda_tile build --jobs 14 2>&1 | tee "$OUT/build.log" | grep -E "^built|FAILED|NOT VERIFIED"
    timeout 560 python bench/startup.py --out "$OUT" 2>&1 | tee "$OUT/startup.log" | tail -30 ;;
  tests)
    # The generated entry is the API's path; if its own GPU tests fail, the matrix still runs
    # through TileLang's launchers so that the kernels get checked, and the log says so.
    if ! timeout 200 python -m pytest -m gpu -q -x -p no:cacheprovider tests/test_host_codegen_gpu.py \
         > "$OUT/pytest_host_gpu.log" 2>&1; then
      echo "GENERATED ENTRY FAILED ON GPU: matrix runs with KDA_TILE_BACKEND=tilelang"; export KDA_TILE_BACKEND=tilelang
    fi
    tail -5 "$OUT/pytest_host_gpu.log"
    timeout 330 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -25 ;;
  k1)
    # K1 variants (bench/k1_round.py): each checked end to end against float64 with the released
    # K2, then timed at H96 1x8192, H8 1x65536, H32 2048x64; ncu on the released K1
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 420 python bench/k1_round.py ${K1_VARIANTS:-} > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -18
    timeout 120 ncu --clock-control none --profile-from-start off --csv --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active" \
      python bench/k1_round.py ncu ${K1_NCU:-1,64,12} \
      > "$OUT/k1_ncu.csv" 2> "$OUT/k1_ncu.err"; tail -2 "$OUT/k1_ncu.err"; wc -l < "$OUT/k1_ncu.csv" ;;
  split)
    # the sequence split (K1, pass A, scan, pass C) checked against float64, then timed per G
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout ${SPLIT_LIMIT:-420} python bench/split_round.py ${SPLIT_G:-} > "$OUT/split_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/split_round.log" | tail -30 ;;
  k2)
    # K2 variants (bench/k2_round.py, fed by the released K1), then ncu of K1 and K2 at H96 1x8192
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 300 python bench/k2_round.py ${K2_VARIANTS:-} > "$OUT/k2_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k2_round.log" | tail -12
    timeout 90 ncu --clock-control none --profile-from-start off --csv --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
      python bench/k2_round.py ncu ${K2_NCU:-1,3,2} \
      > "$OUT/k2_ncu.csv" 2> "$OUT/k2_ncu.err"; tail -2 "$OUT/k2_ncu.err"; wc -l < "$OUT/k2_ncu.csv" ;;
  round13a)
    # session 13: K1 beside K2 over windows of chunks (bench/overlap_round.py, JIT), then the release
    # with the varlen K1 returning from hole slots through the host entry (build, stage times, GPU matrix)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 python bench/overlap_round.py > "$OUT/overlap.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/overlap.log" | tail -14
    release_check 240 ;;
  round13b)
    # session 13: Mqk from split bf16 operands (K1Config.mqk_split) against the K1 released before
    # it, JIT; then the release (mqk_split "qk") through the host entry: build, stage times, the GPU
    # matrix without its split tests (round13c runs those)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192;H96 1x8192 cu;H8 1x65536 cu;H32 2048x64 cu" timeout 180 python bench/k1_round.py \
      1,64,12,holes 1,64,12,holes,mqk=k 1,64,10,holes,mqk=qk 1,64,12,holes,mqk=qk > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -8
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -5
    timeout 280 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      -k "not split" > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -8 ;;
  round16d)
    # session 16: the u0k2 loader (three loops) through the JIT against the previous release's K2,
    # then the u0k2 release through the host entry: build, the GPU matrix without the split
    # tests, stage times
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python bench/k2_round.py 1,3,2 1,3,2,u0k2 > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -5 "$OUT/k2_round.log"
    timeout 80 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout ${MATRIX_LIMIT:-170} python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      tests/test_reference.py -k "not split" > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -6
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -9 ;;
  round19b)
    # session 19: decode with every token load issued before the pool row's (which waits on idx)
    # and the decay formed before the norms' barriers; g was read behind them, a third dependent
    # DRAM round trip at N = 1. Build, decode GPU tests, bench/decode.py (host again column), ncu at N = 1
    decode_check
    NCU_N=1 timeout 90 ncu --clock-control none -k 'regex:kda_decode|elementwise' --csv --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats \
      python bench/decode_round.py ncu > "$OUT/decode_ncu_n1.csv" 2> "$OUT/decode_ncu_n1.err"
    tail -1 "$OUT/decode_ncu_n1.err"; grep -E '"Duration"|Warp Cycles Per Issued|Registers Per' "$OUT/decode_ncu_n1.csv" | cut -c1-200 | tail -8 ;;
  round19c)
    # session 19: the 32-token K1 without store guards (its chunk always holds tokens), K1 and K2 at
    # the eight k2_round shapes for 16-token, 32-token one-consumer and two-consumer K2 (the rule's
    # data); the fast_math 32-token K1 against float64; ncu counters of the new K1
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 300 python bench/k2_round.py 1,3,2,u0k2 1,3,2,u0k2,ch32 2,3,1,u0k2,ch32 > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -7 "$OUT/k2_round.log"
    K1_SHAPES="H96 1x8192;H32 256x512 cu" timeout 120 python bench/k1_round.py 1,128,5,holes,diag,ds,u0k2,ch32 \
      1,128,5,holes,diag,ds,u0k2,ch32,fast > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -4 "$OUT/k1_round.log"
    timeout 100 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section SchedulerStats --section InstructionStats --csv --page details \
      python bench/k1_round.py ncu 1,128,5,holes,diag,ds,u0k2,ch32 > "$OUT/k1_ncu.csv" 2> "$OUT/k1_ncu.err"
    grep -E '"(Duration|DRAM Throughput|Theoretical Occupancy|Achieved Occupancy|Registers Per Thread|Executed Instructions|No Eligible)"' \
      "$OUT/k1_ncu.csv" | awk -F'","' '{print $5, "|", $(NF-2), "|", $NF}' | cut -c1-120 | head -12 || tail -c 600 "$OUT/k1_ncu.err"
    # decode's host medians swung 8 <-> 12-15 us between passes in round 19b: the quick table pinned to one core
    mkdir -p "$OUT/pinned"; taskset -c 5 timeout 100 python bench/decode.py --quick --out "$OUT/pinned" > "$OUT/pinned/decode_bench.log" 2>&1
    grep -E "^\| (float32|bfloat16)" "$OUT/pinned/decode_bench.log" | cut -d'|' -f2,3,4,11,12 ;;
  round19e)
    # session 19: the sequence split at 32-token chunks (the 32-token K1, passes A and C at 32)
    # against the released 16-token split, both u0k2, through the JIT: correctness against float64
    # at 32 first, then stage times at the long few-head shapes for G = 4..32 segments
    export SPLIT_SHAPES="H8 1x65536,H32 1x32768,H8 1x262144"
    SPLIT_CHUNK=32 timeout 300 python bench/split_round.py 4 8 16 32 > "$OUT/split32.log" 2>&1
    grep -E "error|Error" "$OUT/split32.log" | head -3; grep -v '^{' "$OUT/split32.log" | tail -14
    SPLIT_CHECK=0 SPLIT_CHUNK=16 timeout 200 python bench/split_round.py 4 8 16 32 > "$OUT/split16.log" 2>&1
    grep -E "error|Error" "$OUT/split16.log" | head -3; grep -v '^{' "$OUT/split16.log" | tail -14 ;;
  round19f)
    # session 19: the split's K1, pass A and pass C at 32-token chunks through the generated host
    # entry: build, the GPU matrix's split tests (fixed, varlen, 1M, forced), then kda_prefill
    # split against unsplit at the four quick shapes
    split_check 260 ;;
  round20b)
    # session 20: the peer table at every shape (issue 13's first seven first), rows kept as they
    # finish; the report is written from the rows, so a run cut by the limit still has one
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    BENCH_NO_HOST=1 timeout ${PEERS_LIMIT:-480} python -u bench/bench_peers.py --out "$OUT" > "$OUT/bench.log" 2>&1
    python -c "import json,sys; [print(r['shape'], r.get('elapsed_s'), r.get('kda_tile_ms'), r.get('fla_triton_ms'), r.get('cudnn_fe_ms'), r.get('kda_tile_chunk'), r.get('kda_tile_split')) for r in map(json.loads, open(sys.argv[1]))]" "$OUT/peers-rows.jsonl"
    python bench/bench_peers.py --out "$OUT/report" --from-rows "$OUT/peers-rows.jsonl" | grep -E "best peer|geomean" ;;
  round20c)
    # session 20: why another harness saw cuDNN faster at the single-sequence rows (cudnn_modes),
    # the three long rows against cuDNN (fla's autotuning costs ~200 s a new shape; its times there
    # are 2-3x cuDNN's in every earlier run), ncu counters of the released 32-token split
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 120 python bench/cudnn_modes.py "H96 1x8192" "H64 1x8192" > "$OUT/cudnn_modes.log" 2>&1
    grep -E '^\{' "$OUT/cudnn_modes.log" | python -c "import json,sys
for r in map(json.loads, sys.stdin): print(r.get('shape'), r.get('variant', 'plans'), r.get('ms', r.get('kda_tile_ms')), r.get('err_o_vs_ours'), r.get('error', r.get('plans_offered', ''))[:150] if isinstance(r.get('error', r.get('plans_offered')), str) else r.get('plans_offered'))"
    BENCH_LIBS=kda_tile,cudnn_fe BENCH_NO_HOST=1 timeout 150 python -u bench/bench_peers.py --out "$OUT" \
      --only "H32 1x32768,H8 1x65536,H16/HV64 1x8192" > "$OUT/bench.log" 2>&1
    python bench/bench_peers.py --out "$OUT/report" --from-rows "$OUT/peers-rows.jsonl" | grep -E "^\| H"
    timeout 100 ncu --clock-control none --profile-from-start off --csv --page details --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python bench/ncu_prefill.py 8 65536 > "$OUT/ncu_split.csv" 2> "$OUT/ncu_split.err"
    wc -l "$OUT/ncu_split.csv"; tail -2 "$OUT/ncu_split.err" ;;
  round20d)
    # session 20: passes A and C with two consumers a program (configs.SPLIT_CONSUMERS = 2, released
    # in the tree): first one and two consumers side by side through TileLang's JIT (times only:
    # the entry's split tests below check the released form against float64), then the release
    # through the generated host entry
    SPLIT_CHUNK=32 SPLIT_NW=1,2 SPLIT_CHECK=0 SPLIT_SHAPES="H8 1x65536,H16 1x65536,H8 1x262144" \
      timeout 150 python bench/split_round.py 8 16 32 > "$OUT/split_round.log" 2>&1
    grep -E "^shape|^H" "$OUT/split_round.log" | tail -20
    split_check 260 ;;
  round22b)
    # session 22: the release of the Newton-refined norms in the accurate 32-token K1 builds
    # (K1Config.rsqrt_nr) through the generated host entry: build, the GPU matrix with every unsplit
    # call forced to 32-token chunks (the 16-token builds are unchanged), the split tests (their K1
    # is the varlen 32-token build), stage and host times
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    matrix_runs 160 32
    timeout 240 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k split \
      > "$OUT/pytest_split.log" 2>&1
    echo "split tests: $(grep -E "passed|failed" "$OUT/pytest_split.log" | tail -1)"
    grep -E "^FAILED|Error" "$OUT/pytest_split.log" | head -5
    mv "$OUT/gpu_matrix.json" "$OUT/gpu_matrix_split.json" 2>/dev/null
    timeout 70 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -16 ;;
  round23c)
    # prepared in session 22, not run: issue 11's out= row beside its floor, interleaved in blocks
    # (bench/host_interleaved.py), and the launch floor
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 40 python bench/launch_floor.py > "$OUT/floor.log" 2>&1; grep -E "Graph|cuLaunch" "$OUT/floor.log" | head -4
    timeout 150 python bench/host_interleaved.py > "$OUT/host_interleaved.log" 2>&1; tail -4 "$OUT/host_interleaved.log" ;;
  round23b)
    # prepared in session 22, not run: K1 beside resident chains (bench/coresident.py): K2 first on
    # a high-priority stream, K1 on a low-priority one, eagerly, at H96 1x8192, 32- and 16-token
    # pairs; the number a grid-level fused forward (chains resident, K1 on what they leave, a
    # ring in L2) rests on
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 python bench/coresident.py 96 8192 > "$OUT/coresident.log" 2>&1
    grep -E "error|Error" "$OUT/coresident.log" | head -3; tail -3 "$OUT/coresident.log" ;;
  round23d)
    # session 23: the release of K1's early loads (every build) and lean prologue (varlen, and the
    # fixed 16-token builds) through the generated host entry: TVM-FFI's tensor crossing first
    # (bench/ffi_probe.py), build, the GPU matrix as the rule picks and forced to 32-token chunks,
    # stage and host times. First, JIT: the fixed builds' rows from registers (lean_prologue now
    # covers them) against early loads with the head once, checked against float64 first
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192;H96 8x1024;H96 1x8192 cu" timeout 200 python bench/k1_round.py \
      1,64,12,holes,diag,ds,u0k2,ho,el 1,64,12,holes,diag,ds,u0k2,el,lp 1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,ho,el \
      1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -5 "$OUT/k1_round.log"
    timeout 60 python bench/ffi_probe.py > "$OUT/ffi_probe.log" 2>&1; grep -v '^{' "$OUT/ffi_probe.log" | tail -9
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 130 rule 32
    timeout 70 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -16 ;;
  round23e)
    # session 23: round23d's matrix as the rule picks again (cut there at 130 s, 81% in, nothing
    # failed), then the split's release check (build, every split GPU test, split_api --quick)
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 200 rule
    split_check 260 ;;
  round23f)
    # session 23: the peer table's first seven shapes against cuDNN (fla autotunes ~200 s a new
    # shape), then issue 9's long rows against cuDNN, one process each (fp32 state in and out)
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    BENCH_LIBS=kda_tile,cudnn_fe BENCH_NO_HOST=1 timeout 220 python -u bench/bench_peers.py --out "$OUT/peers" \
      --only "H96,H64" > "$OUT/peers.log" 2>&1
    python bench/bench_peers.py --out "$OUT/peers/report" --from-rows "$OUT/peers/peers-rows.jsonl" | grep -E "^\| H|geomean|best peer"
    BENCH_LIBS=kda_tile,cudnn_fe timeout 180 python bench/scaling.py --only long --out "$OUT/scaling-long" \
      > "$OUT/scaling-long.log" 2>&1
    echo "long, state inout"; grep -E "^\| H" "$OUT/scaling-long.log" | cut -c1-160 ;;
  round26e)
    # session 26: eight sequences a program released beside four: build, the GPU matrix as the rule
    # picks (spp4 and spp8 forced on ragged batches, the rule at thousands of sequences), spp_api
    # with one, four and eight
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 240 rule
    timeout 300 python bench/spp_api.py > "$OUT/spp_api.log" 2>&1
    grep -E "Error|error" "$OUT/spp_api.log" | head -3; grep -v '^{' "$OUT/spp_api.log" | tail -12
    timeout 60 python bench/host_interleaved.py --decode --blocks 30 > "$OUT/host_interleaved_decode.log" 2>&1
    tail -3 "$OUT/host_interleaved_decode.log"
    timeout 60 python bench/host_interleaved.py --blocks 30 > "$OUT/host_interleaved.log" 2>&1; tail -3 "$OUT/host_interleaved.log" ;;
  round27b)
    # session 27, prepared: the slab pipeline (kda_tile.slabs.run_pipelined, forced on): build, its
    # GPU tests (every state mode, bitwise against the whole call, graph replay, memory under a
    # limit), then its times against the whole call and the serial slabs (bench/pipeline_probe.py)
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 150 python -m pytest -q -m gpu tests/test_gpu_correctness.py -k pipeline > "$OUT/pytest_pipeline.log" 2>&1
    tail -3 "$OUT/pytest_pipeline.log"
    timeout 330 python -u bench/pipeline_probe.py > "$OUT/pipeline_probe.log" 2>&1
    grep -E "Error|error" "$OUT/pipeline_probe.log" | head -3; grep -v '^{' "$OUT/pipeline_probe.log" | tail -75 ;;
  round29a)
    # session 29: is the pipeline's K2 slowed by K1's bytes or by K1's programs on its SMs? K1 beside
    # the chains at H32 1x32768 with K2 variants (the released 32-token pair; a 5-slot ring; the
    # chain's SM to itself, min_blocks 1, at 3 and 6 slots; the keys as renamed after the round)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 240 python bench/coresident.py 32 32768 32m2,32s5,32,32s6m1 > "$OUT/coresident_32x32768.log" 2>&1
    grep -E "Error|error|FAILED" "$OUT/coresident_32x32768.log" | head -3; tail -5 "$OUT/coresident_32x32768.log"
    ;;
  round30a)
    # prepared in session 29 for the next session's first call (~5 min): counters of the released
    # 32-token K2 at min_blocks 1 (the whole call, pipeline off), the pipeline where the rule takes
    # it and round 29c did not measure (48 chains; H32 1x262144); round30b is the peer table
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    KDA_TILE_PIPELINE=0 timeout 110 ncu --clock-control none --profile-from-start off --csv --page details \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis python bench/ncu_prefill.py 32 32768 > "$OUT/ncu_H32_32768.csv" 2> "$OUT/ncu_H32_32768.err"
    tail -1 "$OUT/ncu_H32_32768.err"
    PIPE_SHAPES="H24 1x32768 cu,H32 1x262144 cu" timeout 120 python -u bench/pipeline_probe.py > "$OUT/pipeline_probe.log" 2>&1
    grep -E "Error|error" "$OUT/pipeline_probe.log" | head -3; grep -v '^{' "$OUT/pipeline_probe.log" | grep -v "slab .* K" | tail -10 ;;
  round31a)
    # prepared in session 30: the pipeline's loop with set_stream and its views split once (CPU:
    # 33 -> 20 us a slab of host work at 8 slabs): build, the pipeline's GPU tests (with the
    # caller-stream test), the timeline (host pacing a slab: 172-190 us in round 30d) and the
    # pipeline at H32 and H24 1x32768 against the whole call
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 100 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k pipeline > "$OUT/pytest_pipeline.log" 2>&1
    echo "pipeline: $(grep -E "passed|failed" "$OUT/pytest_pipeline.log" | tail -1)"; grep -E "^FAILED|Error" "$OUT/pytest_pipeline.log" | head -5
    PIPE_SHAPES="H24 1x32768 cu,H32 1x32768 cu" PIPE_LIMITS=0 timeout 150 python -u bench/pipeline_probe.py \
      > "$OUT/pipeline_probe.log" 2>&1
    grep -E "Error|error" "$OUT/pipeline_probe.log" | head -3; grep -v '^{' "$OUT/pipeline_probe.log" | tail -28 ;;
  round31f)
    # session 31, the budget's last minutes: the 16-token K1 with the row norms' Newton-refined
    # rsqrt (K1Config.rsqrt_nr; no spill at 80 registers now, 3552 -> 3296 static instructions)
    # against the released one (JIT, checked against float64 first)
    nvidia-smi --query-gpu=name --format=csv,noheader
    K1_SHAPES="H96 1x8192 cu;H32 2048x64 cu" timeout 150 python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2,el,lp,sg,rnr \
      > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -5 "$OUT/k1_round.log" ;;
  round35)
    # session 35, one call: the build, the short GPU tests through the host entry (both forms; the
    # pairwise builds without the final state now keep three chunks' rows: 4 programs an SM, 19
    # barriers a chunk), then the pairwise form against the two-kernel path and against session
    # 34's layout (allrows, same process), then the one-chunk form (NOTES session 35 predicts)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 150 short
    SHORT_SHAPES="H32 2048x64 cu" short_rows 4 140 pairwise4.log 3
    SHORT_SHAPES="H32 8192x16 cu" short_rows 1 90 short_round.log 3 ;;
  round37e)
    # session 37's last device-seconds: the final state at H32 2048x64 through kda_prefill, its call
    # modes timing the pairwise form (max_seqlen) beside the two kernels (cu_seqlens alone): on an
    # H200 this answers whether the pairwise form still loses with the state there (round 33c) (~2.5 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    mkdir -p "$OUT/final"
    BENCH_STATE=final BENCH_LIBS=kda_tile timeout 140 python -u bench/scaling.py --only split --seqs 2048 \
      --out "$OUT/final" > "$OUT/final/scaling.log" 2>&1; grep "^|" "$OUT/final/scaling.log" | tail -1
    python - <<'PY'
import json, os
for r in map(json.loads, open(os.path.join(os.environ["OUT"], "final", "scaling-rows.jsonl"))):
    for m in r["modes"]["kda_tile"]:
        print(f"{m['mode']:40s} {m['ms']:.3f}")
PY
    ;;
  round39h)
    # session 39's last device-seconds: on an H200 only, issue 13's rows 9-10 with kda_tile and cuDNN
    # (no fla: its first compile at each head count takes minutes); on an H100 the card's name (~4 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
      BENCH_LIBS=kda_tile,cudnn_fe BENCH_SKIP=8 peer_rows 150
    fi ;;
  round39g)
    # session 39: the final state stored through shared memory in 16-byte pieces (K1Config.ht_staged,
    # JIT): against float64 on every case, timed at H32 2048x64 cu beside the release and the
    # no-store probe (SHORT_PREFILL=0) (~3 min). ht_staged was removed after it (+6%): apply
    # bench/prepared/session39-ht-staged.patch and add "hts": dict(ht_staged=True) to short_round's VARIANTS
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=hts,nohtstore SHORT_CHECK=hts SHORT_PREFILL=0 short_rows 4 240 pairwise4.log 3
    grep "^correctness" "$OUT/pairwise4.log" ;;
  round39f)
    # session 39: where the final state's 1.1 ms goes in the pairwise form (2048 x 64): the released
    # state build against probes without its stores (nohtstore) and without its products too (noht),
    # JIT, same process (SHORT_PREFILL=0: configs.py's probe comment makes the manifest stale) (~3 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=nohtstore,noht SHORT_CHECK= SHORT_PREFILL=0 short_rows 4 200 pairwise4.log 3 ;;
  round39e)
    # session 39: the number session 39's "Next" 1 rests on: the split's K1 beside its pass A at H8
    # 1x65536 (bench/coresident.py passA; JIT, independent workspaces, pass A first) (~3 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 240 python bench/coresident.py passA 8 65536 > "$OUT/coresident_passA.log" 2>&1
    grep -E "Error|error" "$OUT/coresident_passA.log" | head -3; tail -3 "$OUT/coresident_passA.log"
    timeout 120 python bench/coresident.py passA 8 262144 > "$OUT/coresident_passA_262k.log" 2>&1
    tail -2 "$OUT/coresident_passA_262k.log" ;;
  round39d)
    # session 39: on an H200 only, issue 13's rows 9-10 (H8 1x65536 and the GVA row: bench_peers,
    # BENCH_SKIP=8; fla compiles at each new head count); on an H100 only the card's name (~7 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if on_h200; then
      timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
      BENCH_SKIP=8 peer_rows 420
    fi ;;
  round39c)
    # session 39: lkr over channel quads (cq) beside the release again at H32 2048x64 cu with the
    # state (JIT, no float64 check: round 39b ran it); on an H200 then issue 13's rows 9-10 (H8
    # 1x65536 and the GVA row: bench_peers, BENCH_SKIP=8) (~8 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=cq,nolkr SHORT_CHECK= SHORT_PREFILL=0 short_rows 4 150 pairwise4.log 3
    if on_h200; then
      timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
      BENCH_SKIP=8 peer_rows 400
    fi ;;
  round39b)
    # session 39, the release of last_kr_regs on the two final-state pairwise builds: the build, the
    # short GPU tests through the host entry, issue 9's 2048 x 64 row with the final state and cuDNN
    # in one process; JIT at H32 2048x64 cu beside the release: session 38's form (nolkr) and lkr over
    # channel quads (cq, also against float64 on every case) (~7 min). On an H200 then issue 13's
    # rows 8-10 (bench_peers, BENCH_SKIP=7; fla compiles at each new head count) in the time left
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 130 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 100 short
    mkdir -p "$OUT/final"
    BENCH_STATE=final BENCH_LIBS=kda_tile,cudnn_fe timeout 150 python -u bench/scaling.py --only split --seqs 2048 \
      --out "$OUT/final" > "$OUT/final/scaling.log" 2>&1; grep "^|" "$OUT/final/scaling.log" | tail -2
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=nolkr,cq SHORT_CHECK=cq short_rows 4 240 pairwise4.log 5
    grep "^correctness" "$OUT/pairwise4.log"
    if on_h200 && [ -n "$ROUND39B_PEERS" ]; then
      BENCH_SKIP=7 peer_rows 300
    fi ;;
  round39a)
    # session 39: the final state's last chunk kr in registers, the pairwise form's lean rows with
    # the state (K1Config.last_kr_regs, JIT): against float64 on every case, timed at H32 2048x64 cu
    # in both modes beside the released form (SHORT_PREFILL=0: the manifest is stale until verify
    # runs); ncu of the released state build and lkr (~6 min)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    SHORT_PREFILL=0 SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=lkr SHORT_CHECK=lkr short_rows 4 300 pairwise4.log 5
    grep "^correctness" "$OUT/pairwise4.log"
    SHORT_NCU_HT=1 SHORT_VARIANTS=lkr pw_stalls lkr_src
    python bench/ncu_stalls.py "$OUT/lkr_src_sass.csv" 2>&1 | head -30
    grep -E "\"Duration\"|Executed Instructions\"|Registers Per|Warp Cycles Per Issued|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput" \
      "$OUT/lkr_src_details.csv" | cut -d, -f13-15 | head -16 ;;
  round38c)
    # session 38, the release of col_quads on the two no-state pairwise builds: the build, the short
    # GPU tests through the host entry, issue 9's 2048 x 64 row with cuDNN in one process (~5 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 130 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 90 short
    mkdir -p "$OUT/none"
    BENCH_STATE=none BENCH_LIBS=kda_tile,cudnn_fe timeout 150 python -u bench/scaling.py --only split --seqs 2048 \
      --out "$OUT/none" > "$OUT/none/scaling.log" 2>&1; grep "^|" "$OUT/none/scaling.log" | tail -2 ;;
  round38b)
    # session 38: the pairwise form's column pass over four channels and four rows a thread
    # (K1Config.col_quads, JIT): against float64 on every case, timed at H32 2048x64 cu in both state
    # modes beside the released form (SHORT_PREFILL=0: the new field makes the manifest stale until
    # verify runs); ncu of the released form and cq (sampled stalls by SASS instruction) (~6 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    SHORT_PREFILL=0 SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=cq SHORT_CHECK=cq short_rows 4 300 pairwise4.log 5
    grep "^correctness" "$OUT/pairwise4.log"
    SHORT_VARIANTS=cq pw_stalls cq_src
    python bench/ncu_stalls.py "$OUT/cq_src_sass.csv" 2>&1 | head -30
    grep -E "\"Duration\"|Executed Instructions\"|Registers Per|Warp Cycles Per Issued" \
      "$OUT/cq_src_details.csv" | cut -d, -f13-15 | head -12 ;;
  round38a)
    # session 38: on an H200, issue 9's H200 rows: the split rows and one sequence with cuDNN in one
    # process, the 16 x 8192 row, the final state at 2048 x 64 (round 37d's H200 branch; ~6 min);
    # on an H100 only the card's name (those rows ran there in rounds 36r, 37a and 37d)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      timeout 130 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
      mkdir -p "$OUT/none" "$OUT/one" "$OUT/final"
      BENCH_STATE=none BENCH_LIBS=kda_tile,cudnn_fe timeout 170 python -u bench/scaling.py --only split \
        --seqs 1,256,2048,8192 --out "$OUT/none" > "$OUT/none/scaling.log" 2>&1; grep "^|" "$OUT/none/scaling.log" | tail -5
      BENCH_STATE=none BENCH_LIBS=kda_tile timeout 100 python -u bench/scaling.py --only split --seqs 16 \
        --out "$OUT/one" > "$OUT/one/scaling.log" 2>&1; grep "^|" "$OUT/one/scaling.log" | tail -1
      BENCH_STATE=final BENCH_LIBS=kda_tile timeout 70 python -u bench/scaling.py --only split --seqs 2048 \
        --out "$OUT/final" > "$OUT/final/scaling.log" 2>&1; grep "^|" "$OUT/final/scaling.log" | tail -1
    fi ;;
  round37d)
    # session 37, the release of next_early and inv_blocks on the four pairwise builds: the build,
    # the short GPU tests through the host entry, issue 9's 2048 x 64 row with cuDNN in one process,
    # and the 16 x 8192 row for the time per token (kda_tile alone); on an H200 also issue 9's other
    # split rows and one sequence with cuDNN (~6 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 130 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 60 short
    mkdir -p "$OUT/none" "$OUT/one"
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then SEQS=1,256,2048,8192; else SEQS=2048; fi
    BENCH_STATE=none BENCH_LIBS=kda_tile,cudnn_fe timeout 150 python -u bench/scaling.py --only split --seqs $SEQS \
      --out "$OUT/none" > "$OUT/none/scaling.log" 2>&1; grep "^|" "$OUT/none/scaling.log" | tail -4
    BENCH_STATE=none BENCH_LIBS=kda_tile timeout 80 python -u bench/scaling.py --only split --seqs 16 \
      --out "$OUT/one" > "$OUT/one/scaling.log" 2>&1; grep "^|" "$OUT/one/scaling.log" | tail -1
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      # the final state at 2048 x 64: its modes time the pairwise form (max_seqlen) beside the two kernels
      mkdir -p "$OUT/final"
      BENCH_STATE=final BENCH_LIBS=kda_tile timeout 70 python -u bench/scaling.py --only split --seqs 2048 \
        --out "$OUT/final" > "$OUT/final/scaling.log" 2>&1; grep "^|" "$OUT/final/scaling.log" | tail -1
    fi ;;
  round37c)
    # session 37, round 37b again after its timing part stopped at the stale manifest's gate and
    # ncu showed beta's load converted where it was issued (the inverse's warp waited on it):
    # beta now stays bf16 until the chunk that reads it. ne and neib against float64 on every
    # case, then timed beside the released form and ib without kda_prefill (SHORT_PREFILL=0); ncu
    # of ne and neib (~5 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    SHORT_PREFILL=0 SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=ib,ne,neib SHORT_CHECK=ne,neib short_rows 4 240 pairwise4.log 3
    grep "^correctness" "$OUT/pairwise4.log"
    SHORT_VARIANTS=ne,neib pw_stalls ne_src ;;
  round37b)
    # session 37: the pairwise form with the next chunk's copies in flight (ne) and with the
    # 8-row-block inverse as well (neib), JIT: both against float64 on every case, then timed at
    # H32 2048x64 cu in both state modes beside the released form and ib; ncu of ne and neib
    # (sampled stalls by SASS instruction); then issue 9's 16 x 8192 row for the time per token
    # (NOTES session 37 has the prediction) (~7 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=ib,ne,neib SHORT_CHECK=ne,neib short_rows 4 240 pairwise4.log 5
    grep "^correctness" "$OUT/pairwise4.log"
    SHORT_VARIANTS=ne,neib pw_stalls ne_src
    grep -E "\"Duration\"|Executed Instructions\"|Achieved Occupancy|Registers Per|Warp Cycles Per Issued" \
      "$OUT/ne_src_details.csv" | cut -d, -f13-15 | head -15
    mkdir -p "$OUT/one"
    BENCH_STATE=none BENCH_LIBS=kda_tile timeout 150 python -u bench/scaling.py --only split --seqs 16 \
      --out "$OUT/one" > "$OUT/one/scaling.log" 2>&1; grep "^|" "$OUT/one/scaling.log" | tail -2 ;;
  round37a)
    # session 37: where the 128-thread pairwise form's warps wait: ncu's sampled stall reasons a SASS
    # instruction (SourceCounters), the released form and ib at H32 2048x64 cu without the state,
    # exported as CSV on the device; then issue 9's time per token, H32 T = 131072 as 1 and 16
    # sequences through kda_prefill (256, 2048 and 8192 ran in round 36r) (~4 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    SHORT_VARIANTS=ib timeout 200 ncu --clock-control none --profile-from-start off -k regex:k1 \
      --section WarpStateStats --section SourceCounters --section SpeedOfLight --import-source no \
      -o "$OUT/pw_src" python bench/short_round.py --ncu > "$OUT/pw_src.log" 2>&1
    tail -1 "$OUT/pw_src.log"
    ncu --import "$OUT/pw_src.ncu-rep" --page source --csv --print-source sass > "$OUT/pw_src_sass.csv" 2> "$OUT/pw_src_sass.err"
    ncu --import "$OUT/pw_src.ncu-rep" --page details --csv --print-details all > "$OUT/pw_src_details.csv" 2> /dev/null
    ncu --import "$OUT/pw_src.ncu-rep" --page raw --csv > "$OUT/pw_src_raw.csv" 2> /dev/null
    wc -c "$OUT"/pw_src*; head -c 300 "$OUT/pw_src_sass.err"
    mkdir -p "$OUT/one"
    BENCH_STATE=none BENCH_LIBS=kda_tile timeout 120 python -u bench/scaling.py --only split --seqs 1,16 \
      --out "$OUT/one" > "$OUT/one/scaling.log" 2>&1; grep "^|" "$OUT/one/scaling.log" | tail -3 ;;
  round36r)
    # session 36, the 128-thread pairwise form released: the build, the short GPU tests through the
    # host entry, issue 9's three rows without a state with cuDNN in one process, then the pairwise
    # form at H32 2048x64 cu beside session 35's 64 threads (t64) and the 8-row-block inverse (ib,
    # checked against float64 on every case) (~9 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 90 short
    mkdir -p "$OUT/none"
    BENCH_STATE=none BENCH_LIBS=kda_tile,cudnn_fe timeout 110 python -u bench/scaling.py --only split \
      --seqs 256,2048,8192 --out "$OUT/none" > "$OUT/none/scaling.log" 2>&1; grep "^|" "$OUT/none/scaling.log" | tail -3
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=t64,ib SHORT_CHECK=ib short_rows 4 200 pairwise4.log 5 ;;
  round36n)
    # the release's short GPU tests alone, no build (entries compile on first use), for the last
    # ~4 device-minutes of session 36
    nvidia-smi --query-gpu=name --format=csv,noheader
    short_tests 170 short ;;
  round36m)
    # round 36r cut to ~4 minutes: the build, the short GPU tests through the host entry (the
    # 128-thread pairwise builds), then issue 9's 2048 x 64 row through kda_prefill alone
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 110 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 45 short
    mkdir -p "$OUT/none"
    BENCH_STATE=none BENCH_LIBS=kda_tile timeout 60 python -u bench/scaling.py --only split --seqs 2048 \
      --out "$OUT/none" > "$OUT/none/scaling.log" 2>&1; grep "^|" "$OUT/none/scaling.log" | tail -1 ;;
  round36q)
    # round 36r cut to the device time left (~7 min): the build, the short GPU tests through the
    # host entry, the pairwise variants at H32 2048x64 cu
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 60 short
    SHORT_SHAPES="H32 2048x64 cu" SHORT_VARIANTS=t64,ib SHORT_CHECK=ib short_rows 4 180 pairwise4.log 5 ;;
  round36p)
    # session 36: issue 9's three split rows without a state, kda_tile and cuDNN in one process
    # (round 33c's first part printed nothing within 200 s on a fresh H200: fla's first calls),
    # then fla alone at the same rows into its own folder
    nvidia-smi --query-gpu=name --format=csv,noheader
    mkdir -p "$OUT/none" "$OUT/fla"
    BENCH_STATE=none BENCH_LIBS=kda_tile,cudnn_fe timeout 200 python -u bench/scaling.py --only split \
      --seqs 256,2048,8192 --out "$OUT/none" > "$OUT/none/scaling.log" 2>&1; grep "^|" "$OUT/none/scaling.log" | tail -5
    BENCH_STATE=none BENCH_LIBS=fla_triton timeout 240 python -u bench/scaling.py --only split --seqs 256,2048,8192 \
      --out "$OUT/fla" > "$OUT/fla/scaling.log" 2>&1; grep "^|" "$OUT/fla/scaling.log" | tail -5 ;;
  round36)
    # session 36: the pairwise form over 128 threads (t128) beside the released 64-thread form:
    # both against float64 on every case, then timed at H32 2048x64 cu (both state modes) against
    # the two kernels, session 34's layout and K1 alone; then ncu of both forms at that row (~8 min).
    # (As run then; since the release short_round's default variants are t64 and ib.)
    nvidia-smi --query-gpu=name --format=csv,noheader
    SHORT_SHAPES="H32 2048x64 cu" short_rows 4 330 pairwise4.log 5
    timeout 150 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight \
      --section Occupancy --section WarpStateStats --section InstructionStats --section LaunchStats \
      -o "$OUT/pw_ncu" python bench/short_round.py --ncu > "$OUT/pw_ncu.log" 2>&1
    tail -1 "$OUT/pw_ncu.log"
    ncu --import "$OUT/pw_ncu.ncu-rep" --csv --page details > "$OUT/pw_ncu_details.csv" 2> /dev/null
    grep -E "\"Duration\"|Issue Slots Busy|Executed Instructions\"|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Block Limit" \
      "$OUT/pw_ncu_details.csv" | cut -d, -f13-15 | head -24; rm -f "$OUT/pw_ncu.ncu-rep" ;;
  round35m)
    # session 35, for a short budget: no build (entries compile on first use), both forms JIT
    # against float64, then timed against the two-kernel path (and the pairwise form against
    # session 34's layout) on issue 9's two rows (~7 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    SHORT_SHAPES="H32 2048x64 cu" short_rows 4 260 pairwise4.log 3
    SHORT_SHAPES="H32 8192x16 cu" short_rows 1 150 short_round.log 3 ;;
  round35s)
    # session 35's second call (run inline then): the short GPU tests through the host entry without
    # a build, stopping at the first failure; round35t ran the ones after that failure
    short_tests 270 short -x ;;
  round35t)
    timeout 125 python -m pytest -q -m gpu tests/test_gpu_correctness.py -k "(short_varlen and pw_) or short_max" \
      -p no:cacheprovider 2>&1 | grep -E "passed|failed|FAILED|Error" | head -8 ;;
  round34)
    # session 34, rounds 34a and 34b cut to one call of ~8 minutes where starts are scarce: the
    # build, the short GPU tests through the host entry (both forms), then the short and pairwise
    # forms JIT against float64 and the two-kernel path on issue 9's two rows only
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 170 short
    SHORT_SHAPES="H32 8192x16 cu" short_rows 1 90 short_round.log 3
    SHORT_SHAPES="H32 2048x64 cu" short_rows 4 90 pairwise4.log 3 ;;
  round34m)
    # session 34's last minutes: the build, then the short GPU tests (both forms) through the host
    # entry, as far as 150 s go
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 150 "short_fixed or short_max or pw_" ;;
  round34s)
    # session 34's last device seconds: no build (entries compile on first use), the fixed-batch
    # short GPU tests of both forms for as long as the call lasts
    nvidia-smi --query-gpu=name --format=csv,noheader
    short_tests 190 short_fixed -x ;;
  round34a)
    # session 34: the released short form (one chunk, <= 16 tokens) and pairwise form (four chunks,
    # <= 64), JIT, each checked against float64, then timed against kda_prefill's two-kernel path
    # (KDA_TILE_SHORT=0) on issue 9's 8192 x 16 and 2048 x 64 rows and more (NOTES sessions 32-33
    # hold the predictions)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_rows 1 200 short_round.log 12
    short_rows 4 200 pairwise4.log 14 ;;
  round34b)
    # session 34: both forms through the host entry (the switch on in the tests' fixture): the
    # short GPU tests (fixed, varlen up to 8192 sequences, broken max_seqlen)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_tests 330 short ;;
  round34c)
    # session 34: bench/copy_floor.py, K1's grid, threads, copies and bytes without its arithmetic,
    # against the released 16- and 32-token K1 and a contiguous copy of the same bytes (NOTES
    # session 34 has the prediction for each card)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    copy_floor 240 5 96:8192 8:65536 32:131072 ;;
  round33a)
    # sessions 32-33: sequences of at most one chunk as one kernel (K1Config.short_out: o = Mqk
    # (Ab v), no workspace, a program a sequence), JIT, checked against float64, then against
    # kda_prefill's two-kernel path (KDA_TILE_SHORT=0) on issue 9's 8192 x 16 row and four more
    # (NOTES session 32 has the prediction); then the released short form through the host entry:
    # its GPU tests and the matrix's T = 16 rows (~6 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_rows 1 240 short_round.log 12
    timeout 180 python -m pytest -q -m gpu tests/test_gpu_correctness.py -k "short or (test_fixed and 16-)" -x \
      -p no:cacheprovider 2>&1 | tail -4 ;;
  round33b)
    # session 33: the pairwise form (K1Config.short_chunks, JIT) over sequences of up to 64 and 32
    # tokens, checked against float64, then against kda_prefill's two-kernel path on issue 9's
    # 2048 x 64 row and five more (~5 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    short_rows 4 240 pairwise4.log 14
    short_rows 2 120 pairwise2.log 4 ;;
  round33c)
    # session 33: issue 9's many-sequence rows (H32, 131072 tokens as 256 x 512, 2048 x 64, 8192 x 16)
    # with the peers in one process (scaling.py), no state, then the final state out (~8 min)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    mkdir -p "$OUT/none" "$OUT/final"
    export KDA_TILE_SHORT=1   # the short form (opt-in until round 33a passes)
    BENCH_STATE=none timeout 200 python -u bench/scaling.py --only split --seqs 256,2048,8192 --out "$OUT/none" \
      > "$OUT/none/scaling.log" 2>&1; tail -9 "$OUT/none/scaling.log" | grep "^|"
    BENCH_STATE=final BENCH_LIBS=kda_tile,cudnn_fe timeout 180 python -u bench/scaling.py --only split --seqs 2048,8192 \
      --out "$OUT/final" > "$OUT/final/scaling.log" 2>&1; tail -8 "$OUT/final/scaling.log" | grep "^|" ;;
  round32c)
    # session 32: K1 with an L2 prefetch of the q, k, g rows of the program one (pf) or two (pf2)
    # waves ahead in launch order (probe, JIT, checked against float64 first), 16- and 32-token,
    # against the released builds; colstore (qd, kr, gC's stores left out, a third of K1's bytes)
    # with and without it: on an H100, where K1 is bytes-bound, the floor under the bytes; then
    # ncu of four of them at H96 1x8192. The probe was removed after the round (a loss, and any
    # edit of a kernel module makes every record stale): apply bench/prepared/session32-k1-l2-prefetch.patch
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    R16=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED)")
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED_CH32)")
    K1_SHAPES="H96 1x8192 cu;H8 1x65536 cu;H32 2048x64 cu" timeout 300 python bench/k1_round.py "$R16" "$R16,p=pf" \
      "$R16,p=pf2" "$R32" "$R32,p=pf" "$R32,p=pf2" "$R16,p=colstore" "$R16,p=colstore+pf" "$R32,p=colstore" \
      "$R32,p=colstore+pf" > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -12 "$OUT/k1_round.log"
    timeout 200 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight \
      --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats \
      -o "$OUT/k1_pf" python bench/k1_round.py ncu "$R16" "$R16,p=pf" "$R32" "$R32,p=pf" > "$OUT/k1_ncu.log" 2>&1
    tail -1 "$OUT/k1_ncu.log"
    ncu --import "$OUT/k1_pf.ncu-rep" --csv --page details > "$OUT/k1_pf_details.csv" 2> /dev/null
    grep -E "\"Duration\"|Issue Slots Busy|Executed Instructions\"|DRAM Throughput|L2 Hit Rate\"|Warp Cycles Per Issued" \
      "$OUT/k1_pf_details.csv" | cut -d, -f13-15 | head -28; rm -f "$OUT/k1_pf.ncu-rep" ;;
  round32d)
    # session 32: fla's integration at H96 1x8192 (now through two consumers) and the compile test,
    # which round 32b's second call had no time left for (fla's compile at H96 takes 90-180 s)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 400 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py -k "8192 or compile or errors" \
      > "$OUT/pytest_integration.log" 2>&1
    echo "integration: $(grep -E "passed|failed" "$OUT/pytest_integration.log" | tail -1)"; grep -E "^FAILED|^ERROR" "$OUT/pytest_integration.log" | head -8 ;;
  round32a)
    # prepared in session 31: on an H200, K1's counters (round 30c: is the K1 issue-bound there?
    # NOTES session 31 predicts issue slots ~60% busy, DRAM 60-68%), then the two-consumer rule on
    # that card (bench/two_consumers.py: does it still cross between 104 and 112 programs?)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      bash bench/device_round.sh round30c
      # session 32: K1 without its matrix work (lm, inverse, ab) and without its column stores, to
      # split the H200's 0.39 ms between work and bytes (on the H100 colstore fell with its bytes)
      R16=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED)")
      K1_SHAPES="H96 1x8192 cu;H8 1x65536 cu" timeout 200 python bench/k1_round.py "$R16" "$R16,p=lm+inverse+ab" \
        "$R16,p=colstore" "$R16,p=colstore+lm+inverse+ab" > "$OUT/k1_probes.log" 2>&1; tail -7 "$OUT/k1_probes.log"
    fi
    timeout 240 python -u bench/two_consumers.py > "$OUT/two_consumers.log" 2>&1
    grep -E "Error|error" "$OUT/two_consumers.log" | head -3; grep -v '^{' "$OUT/two_consumers.log" | tail -25 ;;
  round32b)
    # prepared in session 31: the GPU correctness matrix through the default path with the
    # 16-token K1's Newton-refined norms (released after round 31f's JIT check, not yet run through
    # the host entry) and two consumers; round 31e took 440 s for 179 tests, so in two calls:
    # round32b, then ROUND32B_REST=1 round32b (the host entry's, fla's integration at H96 1x8192 now
    # through two consumers, and the reference's GPU tests; fla compiles 90-180 s a head count)
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    if [ -z "${ROUND32B_REST:-}" ]; then
      timeout 460 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py > "$OUT/pytest_matrix.log" 2>&1
      echo "matrix: $(grep -E "passed|failed" "$OUT/pytest_matrix.log" | tail -1)"; grep -E "^FAILED|^ERROR" "$OUT/pytest_matrix.log" | head -8
      python -c "import json; c=json.load(open('$OUT/gpu_matrix.json'))['cases']; e=[x for x in c if 'err_o' in x]; print(len(e), 'rows; worst o', max(x['err_o'] for x in e), 'worst state', max(x['err_ht'] or 0 for x in e), 'NaN', sum(x['unwritten_or_nan'] for x in e))"
    else
      timeout 440 python -m pytest -m gpu -q -p no:cacheprovider tests/test_host_codegen_gpu.py tests/test_integration_gpu.py \
        tests/test_reference.py tests/test_decode_gpu.py > "$OUT/pytest_rest.log" 2>&1
      echo "rest: $(grep -E "passed|failed" "$OUT/pytest_rest.log" | tail -1)"; grep -E "^FAILED|^ERROR" "$OUT/pytest_rest.log" | head -8
    fi ;;
  round31e)
    # session 31: every GPU test through the default path with the two-consumer rule at its final
    # bound (104 programs): the correctness matrix (split, pipeline, longest first, many sequences,
    # two consumers), the reference's, the host entry's, decode's and the integration tests
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 440 python -m pytest -m gpu -q -p no:cacheprovider tests/ > "$OUT/pytest_gpu_all.log" 2>&1
    echo "all GPU tests: $(grep -E "passed|failed" "$OUT/pytest_gpu_all.log" | tail -1)"
    grep -E "^FAILED|^ERROR" "$OUT/pytest_gpu_all.log" | head -8
    python -c "import json; c=json.load(open('$OUT/gpu_matrix.json'))['cases']; e=[x for x in c if 'err_o' in x]; print(len(e), 'rows; worst o', max(x['err_o'] for x in e), 'worst state', max(x['err_ht'] or 0 for x in e), 'fast_math rows', sum(x['fast_math'] for x in e), 'NaN', sum(x['unwritten_or_nan'] for x in e))" ;;
  round31d)
    # session 31: the two-consumer rule's bound on programs (H104-H120 1x8192; round 31c had H96
    # 0.91 and H128 1.03 of the 16-token call), the GPU tests of the new cases again (round 31c's
    # GVA case failed in the test's own parsing), then the peer table's H96 1x8192 row
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 100 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k two_consumers \
      > "$OUT/pytest_two.log" 2>&1
    echo "two consumers: $(grep -E "passed|failed" "$OUT/pytest_two.log" | tail -1)"; grep -E "^FAILED|Error" "$OUT/pytest_two.log" | head -5
    TWO_ONLY="H96 1x8192 cu,H104,H112,H120,H128" timeout 150 python -u bench/two_consumers.py > "$OUT/two_consumers.log" 2>&1
    grep -E "Error|error" "$OUT/two_consumers.log" | head -3; grep -v '^{' "$OUT/two_consumers.log" | tail -11
    peer_rows 300 --only "H96 1x8192" ;;
  round31c)
    # session 31: the two-consumer 32-token K2 released (configs.use_two_consumers): build, the GPU
    # tests at the rule's shapes (H96 fixed rows of 1024-8192 tokens, the new cases), then
    # bench/two_consumers.py (the rule against one consumer and 16-token chunks, same process)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "two_consumers or (test_fixed and 96) or gva_fixed" > "$OUT/pytest_two.log" 2>&1
    echo "two consumers: $(grep -E "passed|failed" "$OUT/pytest_two.log" | tail -1)"; grep -E "^FAILED|Error" "$OUT/pytest_two.log" | head -5
    timeout 200 python -u bench/two_consumers.py > "$OUT/two_consumers.log" 2>&1
    grep -E "Error|error" "$OUT/two_consumers.log" | head -3; grep -v '^{' "$OUT/two_consumers.log" | tail -19
    KDA_TILE_PIPELINE=0 timeout 100 ncu --clock-control none --profile-from-start off --csv --page details \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis python bench/ncu_prefill.py 96 8192 > "$OUT/ncu_H96_8192.csv" 2> "$OUT/ncu_H96_8192.err"
    tail -1 "$OUT/ncu_H96_8192.err"; python bench/ncu_summary.py "$OUT/ncu_H96_8192.csv" ;;
  round31b)
    # prepared in session 30: K1 counters on the card this round gets (round 30c's H100 run had
    # both K1s at 82% DRAM and within 2%), then the two-consumer 32-token pair against the
    # released 16-token pair at H96 1x8192 (JIT; the H200 gave -3.1% in round 29c)
    bash bench/device_round.sh round30c
    K2_SHAPES="H96 1x8192" timeout 150 python bench/k2_round.py 1,3,2,u0k2 2,3,1,u0k2,ch32 > "$OUT/k2_c2ch32.log" 2>&1
    grep -E "Error|error" "$OUT/k2_c2ch32.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_c2ch32.log" | tail -4 ;;
  round30d)
    # session 30: round 30a's H24 1x32768 rows again (no state: 4 slabs 1.47x the whole call, fp32
    # state in and out 0.92x), twice over in one process, H32 1x32768 beside them as the control
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    PIPE_SHAPES="H24 1x32768 cu,H32 1x32768 cu" PIPE_REPEAT=2 PIPE_LIMITS=0 timeout 150 python -u bench/pipeline_probe.py \
      > "$OUT/pipeline_probe.log" 2>&1
    grep -E "Error|error" "$OUT/pipeline_probe.log" | head -3; grep -v '^{' "$OUT/pipeline_probe.log" | grep -v "slab .* K" | tail -14 ;;
  round30c)
    # session 30: where the released 32-token K1 spends its 13% over the 16-token one at H96 1x8192
    # (source counters of both, JIT, one launch each; the summary runs on the CPU machine)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    R16=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED)")
    R32=$(python -c "import sys; sys.path.insert(0,'bench'); import k1_round as k; print(k.RELEASED_CH32)")
    timeout 240 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section SourceCounters -o "$OUT/k1_src" \
      python bench/k1_round.py ncu "$R16" "$R32" > "$OUT/k1_ncu.log" 2>&1; tail -1 "$OUT/k1_ncu.log"
    ncu --import "$OUT/k1_src.ncu-rep" --csv --page details > "$OUT/k1_details.csv" 2> "$OUT/k1_src.err"
    ncu --import "$OUT/k1_src.ncu-rep" --page source --csv --print-source sass > "$OUT/k1_src.csv" 2>> "$OUT/k1_src.err"
    grep -E "Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|Warp Cycles Per Issued|Executed Instructions\"|DRAM Throughput" "$OUT/k1_details.csv" | cut -d, -f13-15 | head -24
    gzip -f "$OUT/k1_src.csv"; rm -f "$OUT/k1_src.ncu-rep" ;;
  round30b)
    # prepared in session 29: the peer table, with the pipeline and longest first on. fla's first
    # compile at each new head count takes 90-180 s (round 30b on an H100 ran seven rows in 480 s),
    # so the table takes two calls: round30b, then BENCH_SKIP=7 round30b on the same warm machine;
    # bench_peers.py --from-rows joins the two peers-rows.jsonl on the CPU machine
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    peer_rows 470 ;;
  round29c)
    # session 29: the 32-token K2 builds at min_blocks 1 released: build, the GPU tests with every
    # unsplit call forced to 32-token chunks (fixed, varlen, batched, long, GVA; every state mode),
    # stage times; then, JIT, 32-token chunks with two consumers at H96 1x8192 against the released
    # 16-token pair (each fed by its registry K1, fp32 state in and out); with ROUND29C_PIPELINE=1
    # last the pipeline's tests and the pipeline at H32 1x32768 against the whole call
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    KDA_TILE_CHUNK=32 timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "test_fixed or test_varlen or test_batched or test_long or gva" > "$OUT/pytest_gpu_32.log" 2>&1
    echo "forced 32: $(grep -E "passed|failed" "$OUT/pytest_gpu_32.log" | tail -1)"; grep -E "^FAILED|Error" "$OUT/pytest_gpu_32.log" | head -5
    mv "$OUT/gpu_matrix.json" "$OUT/gpu_matrix_32.json" 2>/dev/null
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -9
    K2_SHAPES="H96 1x8192;H64 8x1024;H96 ragged6" timeout 150 python bench/k2_round.py 1,3,2,u0k2 2,3,1,u0k2,ch32 \
      > "$OUT/k2_c2ch32.log" 2>&1
    grep -E "Error|error" "$OUT/k2_c2ch32.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_c2ch32.log" | tail -6
    [ -n "${ROUND29C_PIPELINE:-}" ] || exit 0
    timeout 80 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k pipeline > "$OUT/pytest_pipeline.log" 2>&1
    echo "pipeline: $(grep -E "passed|failed" "$OUT/pytest_pipeline.log" | tail -1)"; grep -E "^FAILED|Error" "$OUT/pytest_pipeline.log" | head -5
    timeout 80 python -u bench/pipeline_probe.py --quick > "$OUT/pipeline_probe.log" 2>&1
    grep -E "Error|error" "$OUT/pipeline_probe.log" | head -3; grep -v '^{' "$OUT/pipeline_probe.log" | tail -12 ;;
  round29b)
    # session 29: the split at 32-token chunks against the released 16 (JIT, the registry's K1s),
    # checked against float64 at 32 first
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    export SPLIT_SHAPES="H8 1x65536,H8 1x262144"
    SPLIT_CHUNK=32 timeout 170 python bench/split_round.py 8 16 > "$OUT/split32.log" 2>&1
    grep -E "error|Error" "$OUT/split32.log" | head -3; grep -v '^{' "$OUT/split32.log" | tail -8
    SPLIT_CHECK=0 SPLIT_CHUNK=16 timeout 120 python bench/split_round.py 8 16 > "$OUT/split16.log" 2>&1
    grep -E "error|Error" "$OUT/split16.log" | head -3; grep -v '^{' "$OUT/split16.log" | tail -8 ;;
  round28d)
    # session 28: longest first released (configs.LONGEST_FIRST): the GPU matrix as the rule picks
    # (split tests apart), then bench_peers' H96 ragged and 8x1024 rows with the peers
    nvidia-smi --query-gpu=name --format=csv,noheader
    timeout 110 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 250 rule
    BENCH_SKIP=1 BENCH_NO_HOST=1 timeout 190 python bench/bench_peers.py --quick --out "$OUT" > "$OUT/bench_peers.log" 2>&1
    grep -E "Error|error" "$OUT/bench_peers.log" | head -3; tail -14 "$OUT/bench_peers.log" ;;
  round28c)
    # session 28, one call for a scarce device: build, the pipeline's and longest first's GPU tests,
    # the pipeline at H32 1x32768 (pipeline_probe --quick), then lf_probe
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 200 python -m pytest -q -m gpu tests/test_gpu_correctness.py -k "pipeline or longest" > "$OUT/pytest_28c.log" 2>&1
    grep -E "passed|failed|FAILED" "$OUT/pytest_28c.log" | tail -4
    timeout 90 python -u bench/pipeline_probe.py --quick > "$OUT/pipeline_probe.log" 2>&1
    grep -E "Error|error" "$OUT/pipeline_probe.log" | head -3; grep -v '^{' "$OUT/pipeline_probe.log" | tail -16
    timeout 150 python -u bench/lf_probe.py > "$OUT/lf_probe.log" 2>&1
    grep -E "Error|error" "$OUT/lf_probe.log" | head -3; grep -v '^{' "$OUT/lf_probe.log" | tail -17 ;;
  round28a)
    # session 28: K2 longest first (K2Config.longest_first, JIT) against the released K2 at 16 and
    # 32 tokens: ragged rows (bench/lpt_sim.py predicts -21% at H96 and H64 ragged6) and uniform
    # ones (predicted unchanged); the order here is torch's argsort, the same permutation k2_order
    # gives (bench/lf_probe.py times the released path)
    K2_SHAPES="H96 1x8192;H64 8x1024;H96 16x1024;H96 ragged6;H64 ragged6;H32 ragged5;H32 256x512" \
      timeout 400 python bench/k2_round.py 1,3,2,u0k2 1,3,2,u0k2,lf 1,3,2,u0k2,ch32 1,3,2,u0k2,ch32,lf > "$OUT/k2_lf.log" 2>&1
    grep -E "Error|error" "$OUT/k2_lf.log" | head -3; grep -v -E '^\{|INFO|^compiled' "$OUT/k2_lf.log" | tail -10 ;;
  round27a)
    # session 27: K1 beside resident chains where the chains leave SMs idle (the released pairs;
    # H32 1x32768 and 1x131072: 64 chains on 132 SMs; H64 1x8192: 128), the number a pipeline of
    # time slabs (K1 of slab j + 1 beside K2 of slab j) rests on
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    for hts in "32 32768 32,c2,16" "32 131072 32" "64 8192 32"; do
      timeout 150 python bench/coresident.py $hts > "$OUT/coresident_$(echo $hts | cut -d' ' -f1-2 | tr ' ' x).log" 2>&1
      grep -E "Error|error" "$OUT/coresident_$(echo $hts | cut -d' ' -f1-2 | tr ' ' x).log" | head -3
      tail -3 "$OUT/coresident_$(echo $hts | cut -d' ' -f1-2 | tr ' ' x).log"
    done ;;
  round26g)
    # session 26, short form of round26f for the budget's end: K1's holes first (JIT, no build),
    # then decode host time with out= and fresh o beside the floor
    K1_SHAPES="H32 8192x16 cu" timeout 130 python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2,el,lp,sg \
      1,64,12,holes,diag,ds,u0k2,el,lp,sg,p=oddhole > "$OUT/k1_holes.log" 2>&1; tail -4 "$OUT/k1_holes.log"
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    for a in "--decode --out" "--decode"; do
      timeout 40 python bench/host_interleaved.py $a --blocks 20 > "$OUT/host_interleaved$(echo $a | tr -d ' -').log" 2>&1
      tail -3 "$OUT/host_interleaved$(echo $a | tr -d ' -').log"
    done ;;
  round26f)
    # session 26: host times beside their floor, interleaved: kda_decode (fresh o and out=) and kda_prefill(out=o)
    timeout 80 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    for a in "--decode" "--decode --out" ""; do
      timeout 60 python bench/host_interleaved.py $a --blocks 30 > "$OUT/host_interleaved$(echo $a | tr -d ' -').log" 2>&1
      tail -3 "$OUT/host_interleaved$(echo $a | tr -d ' -').log"
    done
    # what K1's hole programs cost at 16-token sequences: the released varlen K1 against the same
    # build leaving every odd slot (a hole there) before its slot search (JIT; the probe fails the
    # float64 check by design)
    K1_SHAPES="H32 8192x16 cu;H32 2048x64 cu" timeout 150 python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2,el,lp,sg \
      1,64,12,holes,diag,ds,u0k2,el,lp,sg,p=oddhole > "$OUT/k1_holes.log" 2>&1; tail -5 "$OUT/k1_holes.log" ;;
  round26d)
    # session 26: ncu counters of the released spp4 K2 (and its K1) through kda_prefill at H32 2048x64 and 8192x16
    for L in 64 16; do
      n=$((131072 / L))
      timeout 120 ncu --clock-control none --profile-from-start off --csv --page details --section SpeedOfLight \
        --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
        python bench/ncu_prefill.py 32 "$(python -c "print(','.join(['$L'] * $n))")" > "$OUT/ncu_spp_${n}x$L.csv" 2> "$OUT/ncu_spp_${n}x$L.err"
      python bench/ncu_summary.py "$OUT/ncu_spp_${n}x$L.csv" 2>/dev/null | tail -8
    done ;;
  round26a)
    # session 26: K2Config.seqs_per_program = 4 released on the varlen pairs for many short
    # sequences (configs.use_spp): build, its GPU tests (the rule at >= 1024 sequences, forced on
    # small ragged batches, every state mode), then kda_prefill with spp 1 against 4 (spp_api)
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 200 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py -k "many_sequences or spp" \
      > "$OUT/pytest_spp.log" 2>&1
    echo "spp tests: $(grep -E "passed|failed" "$OUT/pytest_spp.log" | tail -1)"
    grep -E "^FAILED|Error" "$OUT/pytest_spp.log" | head -5
    mv "$OUT/gpu_matrix.json" "$OUT/gpu_matrix_spp.json" 2>/dev/null
    timeout 200 python bench/spp_api.py > "$OUT/spp_api.log" 2>&1
    grep -E "Error|error" "$OUT/spp_api.log" | head -3; grep -v '^{' "$OUT/spp_api.log" | tail -10 ;;
  round26b)
    # session 26: the GPU matrix as the rule picks (the split tests apart), stage times
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 300 rule
    timeout 70 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -16 ;;
  round26c)
    # session 26: the FlashQLA cut's number (fused pairs kernel: whole, chain, producer, and both
    # with the producer cut), issue 9's many-sequence rows with cuDNN (fresh prompts: final state
    # out), issue 11's out= row interleaved with its floor
    timeout 200 python bench/fused_round.py cut > "$OUT/fused_cut.log" 2>&1; grep -v -E 'INFO|compiled' "$OUT/fused_cut.log" | tail -5
    K2_SHAPES="H32 2048x64;H32 8192x16;H32 256x512" timeout 150 python bench/k2_round.py 1,3,2,u0k2,nostate,spp4 \
      1,3,2,u0k2,nostate,spp8 > "$OUT/k2_spp8.log" 2>&1; grep -E "error|Error" "$OUT/k2_spp8.log" | head -3; tail -4 "$OUT/k2_spp8.log"
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    BENCH_LIBS=kda_tile,cudnn_fe BENCH_STATE=final timeout 170 python bench/scaling.py --only split \
      --out "$OUT/scaling-final" > "$OUT/scaling-final.log" 2>&1
    grep -E "^\| H" "$OUT/scaling-final.log" | cut -c1-160
    timeout 110 python bench/host_interleaved.py > "$OUT/host_interleaved.log" 2>&1; tail -4 "$OUT/host_interleaved.log" ;;
  round25a)
    # session 25: the release of K1Config.slot_guess on the varlen K1 builds through the generated
    # host entry: build, the GPU matrix as the rule picks, stage times
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 230 rule
    timeout 70 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -16 ;;
  round25b)
    # session 25: the split's release check with slot_guess (build, every split GPU test, split_api --quick)
    split_check 300 ;;
  round24c)
    # prepared in session 24, not run: K2 walking several sequences a program (seqs_per_program,
    # the ring across them) against the released K2, no state (issue 9's rows), JIT, checked
    # against float64 first (ragged, empty and one-token sequences among the cases)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 420 python bench/k2_round.py 1,3,2,u0k2,nostate 1,3,2,u0k2,nostate,spp4 1,3,2,u0k2,nostate,spp16 \
      > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -8 "$OUT/k2_round.log" ;;
  round24b)
    # prepared in session 24, not run: time slabs (issue 13's memory point; kda_tile.slabs): their
    # GPU tests (every state mode, 16/32-token and split slabs; peak memory under 64 MB at H96
    # 1x8192 and H8 1x1M), then their cost through kda_prefill under workspace limits
    timeout 110 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 240 python -m pytest -q -m gpu tests/test_gpu_correctness.py -k slabs > "$OUT/pytest_slabs.log" 2>&1
    tail -3 "$OUT/pytest_slabs.log"
    timeout 200 python -u bench/slab_probe.py > "$OUT/slab_probe.log" 2>&1
    grep -E "Error|error" "$OUT/slab_probe.log" | head -3; grep -v '^{' "$OUT/slab_probe.log" | tail -24 ;;
  round24a)
    # prepared in session 23, not run: the slot search's first step at the sequence a batch of
    # equal lengths gives (K1Config.slot_guess), 16- and 32-token varlen K1, JIT, checked against
    # float64 first (ragged and empty sequences among the cases)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192 cu;H96 ragged6 cu;H32 2048x64 cu;H32 8192x16 cu;H32 256x512 cu" timeout 300 \
      python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2,el,lp 1,64,12,holes,diag,ds,u0k2,el,lp,sg \
      1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp 1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp,sg \
      > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -6 "$OUT/k1_round.log" ;;
  round23g)
    # session 23: counters of the released K1 (early loads, lean prologue) through kda_prefill:
    # H96 1x8192 (16-token chunks) and H32 1x32768 (32-token), each call's kernels
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    for hs in "96 8192" "32 32768"; do
      timeout 110 ncu --clock-control none --profile-from-start off --csv --page details --section SpeedOfLight \
        --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
        python bench/ncu_prefill.py $hs > "$OUT/ncu_H${hs// /_}.csv" 2> "$OUT/ncu_H${hs// /_}.err"
      tail -1 "$OUT/ncu_H${hs// /_}.err"
    done
    python bench/ncu_summary.py "$OUT"/ncu_H*.csv ;;
  round23a)
    # prepared in session 22, not run: K1Config.early_loads (el: A_log and dt_bias loaded first,
    # beta behind the q, k, g copies) and lean_prologue (lp: the copies' rows from the slot
    # search's registers, GVA's division only where HV != H) in the released 16- and 32-token K1
    # forms, JIT, checked against float64 first
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192 cu;H96 1x8192;H32 2048x64 cu" timeout 300 python bench/k1_round.py \
      1,64,12,holes,diag,ds,u0k2,ho 1,64,12,holes,diag,ds,u0k2,ho,el 1,64,12,holes,diag,ds,u0k2,lp \
      1,64,12,holes,diag,ds,u0k2,el,lp 1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,ho \
      1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,ho,el 1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,lp \
      1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,el,lp > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -9 "$OUT/k1_round.log" ;;
  round22e)
    # session 22: the split's release check for round22d's K1 (its split tests were cut at 5 of 10):
    # build, every split GPU test, split_api
    split_check 300 ;;
  round22d)
    # session 22: GVA's head once a program in the 16-token K1 (JIT against the previous release,
    # checked against float64 first), then the release of it and of the 32-token K1's tail branch
    # and head once (round22c) through the generated host entry: build, the GPU matrix as the rule
    # picks and forced to 32-token chunks, stage and host times, the split tests last
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192 cu;H96 1x8192;H32 2048x64 cu" timeout 120 python bench/k1_round.py \
      1,64,12,holes,diag,ds,u0k2 1,64,12,holes,diag,ds,u0k2,ho > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -3 "$OUT/k1_round.log"
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    matrix_runs 130 rule 32
    timeout 70 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -16
    gpu_tests 170 split split "split tests" ;;
  round22c)
    # session 22: the 32-token K1's further cuts (tu: the gate's tail mask in a branch, ir: the
    # inverse's off-diagonal products from row vectors, ho: GVA's head divided once a program)
    # against the released (rnr) build, JIT, checked against float64 first; then through the host
    # entry: the split at H8 1x65536 (split_api --quick) and host time at T = 64, H = 1 after the
    # caller-outputs path's shortening, beside the launch floor
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192 cu;H8 1x65536 cu;H32 256x512 cu" timeout 200 python bench/k1_round.py \
      1,128,5,holes,diag,ds,u0k2,ch32,rnr 1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu 1,128,5,holes,diag,ds,u0k2,ch32,rnr,ir \
      1,128,5,holes,diag,ds,u0k2,ch32,rnr,ho 1,128,5,holes,diag,ds,u0k2,ch32,rnr,tu,ir,ho > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -7 "$OUT/k1_round.log"
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 90 python bench/split_api.py --quick > "$OUT/split_api.log" 2>&1
    grep -v -E '^\{|INFO' "$OUT/split_api.log" | tail -6
    timeout 40 python bench/launch_floor.py > "$OUT/floor.log" 2>&1; grep -E "Graph|cuLaunch" "$OUT/floor.log" | head -4
    timeout 150 python bench/host_overhead.py --iters 3000 > "$OUT/host.log" 2>&1; grep -E "out=|floor: TVM|C\+\+ entry, graph" "$OUT/host.log" | head -12
    timeout 40 python bench/launch_floor.py > "$OUT/floor2.log" 2>&1; grep -E "Graph|cuLaunch" "$OUT/floor2.log" | head -4 ;;
  round22a)
    # prepared in session 21, not run: the row norms' 1/sqrt as rsqrt.approx + one Newton step
    # (K1Config.rsqrt_nr) in the 32-token K1 against the released one, accurate math, checked
    # against float64 first (JIT; the 16-token form spills 24 bytes at 80 registers, so it is
    # timed but not the candidate)
    K1_SHAPES="H96 1x8192 cu;H8 1x65536 cu;H32 256x512 cu" timeout 240 python bench/k1_round.py \
      1,128,5,holes,diag,ds,u0k2,ch32 1,128,5,holes,diag,ds,u0k2,ch32,rnr 1,64,12,holes,diag,ds,u0k2,rnr \
      > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -6 "$OUT/k1_round.log" ;;
  round21a)
    # prepared in session 20, not run: passes A and C with one and two consumers, and the scan with
    # and without prefetch (ScanConfig.prefetch), each checked against float64 (six varlen cases,
    # fp32 and bf16 state) and timed at the plan's G and beside it (TileLang's JIT)
    SPLIT_CHUNK=32 SPLIT_NW=1,2 SPLIT_SCAN_PF=0,1 SPLIT_SHAPES="H8 1x65536,H16 1x65536,H8 1x262144" \
      timeout 420 python bench/split_round.py 8 16 32 > "$OUT/split_round.log" 2>&1
    grep -E "^correctness|^shape|^H" "$OUT/split_round.log" | tail -40 ;;
  round21c)
    # session 21: the scan at 2, 4 and 8 rows a program (ScanConfig.block_rows), with and without
    # prefetch, beside passes A and C with two consumers (JIT, checked against float64 first)
    SPLIT_CHUNK=32 SPLIT_NW=2 SPLIT_SCAN_PF=0,1 SPLIT_SCAN_BR=2,4,8 SPLIT_SHAPES="H8 1x65536,H16 1x65536,H8 1x262144" \
      timeout 420 python bench/split_round.py 8 16 32 > "$OUT/split_round.log" 2>&1
    grep -E "^correctness|^shape|^H" "$OUT/split_round.log" | tail -60 ;;
  round21d)
    # session 21: issue 9's rows again (last measured whole in session 11), kda_tile and cuDNN in one
    # process (fla autotunes ~200 s a new shape): the many-sequence rows with no state and with the
    # final state out, the long rows with fp32 state in and out; ncu of the two-consumer split
    for st in none final; do
      BENCH_LIBS=kda_tile,cudnn_fe BENCH_STATE=$st timeout 150 python bench/scaling.py --only split \
        --out "$OUT/scaling-$st" > "$OUT/scaling-$st.log" 2>&1
      echo "state $st"; grep -E "^\| H" "$OUT/scaling-$st.log" | cut -c1-160
    done
    BENCH_LIBS=kda_tile,cudnn_fe timeout 150 python bench/scaling.py --only long --out "$OUT/scaling-long" \
      > "$OUT/scaling-long.log" 2>&1
    echo "long, state inout"; grep -E "^\| H" "$OUT/scaling-long.log" | cut -c1-160
    timeout 90 ncu --clock-control none --profile-from-start off --csv --page details --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python bench/ncu_prefill.py 8 65536 > "$OUT/ncu_split.csv" 2> "$OUT/ncu_split.err"
    wc -l "$OUT/ncu_split.csv"; tail -2 "$OUT/ncu_split.err" ;;
  round21e)
    # session 21: the 32-token K1 at 6 programs an SM (min_blocks 6: 80 registers, 36 bytes of
    # spill) against the released 5 (96 registers), accurate and fast_math, checked against float64
    # first (JIT); ncu occupancy of both at H96 1x8192
    K1_SHAPES="H96 1x8192 cu;H8 1x65536 cu;H32 256x512 cu" timeout 300 python bench/k1_round.py \
      1,64,12,holes,diag,ds,u0k2 1,128,5,holes,diag,ds,u0k2,ch32 1,128,6,holes,diag,ds,u0k2,ch32 \
      1,128,5,holes,diag,ds,u0k2,ch32,fast 1,128,6,holes,diag,ds,u0k2,ch32,fast > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -12 "$OUT/k1_round.log"
    timeout 120 ncu --clock-control none --profile-from-start off --csv --page details --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats -k regex:k1 \
      python bench/k1_round.py ncu 1,128,5,holes,diag,ds,u0k2,ch32 1,128,6,holes,diag,ds,u0k2,ch32 \
      > "$OUT/k1_ncu.csv" 2> "$OUT/k1_ncu.err"; wc -l "$OUT/k1_ncu.csv" ;;
  round21f)
    # session 21: pass A's identity rows lean (K2Config.lean_id, configs.SPLIT_LEAN_ID, released in
    # the tree) against the full form in one process (JIT, checked against float64 first), then the
    # release through the host entry: build, every split GPU test, split_api
    SPLIT_CHUNK=32 SPLIT_NW=2 SPLIT_LEAN=0,1 SPLIT_SHAPES="H8 1x65536,H16 1x65536,H8 1x262144" \
      timeout 150 python bench/split_round.py 8 16 > "$OUT/split_round.log" 2>&1
    grep -E "^correctness|^shape|^H" "$OUT/split_round.log" | tail -20
    split_check 300 ;;
  round21g)
    # session 21: ncu of the released split with pass A's identity rows lean (compare round21d's)
    timeout 120 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 100 ncu --clock-control none --profile-from-start off --csv --page details --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python bench/ncu_prefill.py 8 65536 > "$OUT/ncu_split.csv" 2> "$OUT/ncu_split.err"
    wc -l "$OUT/ncu_split.csv"; tail -2 "$OUT/ncu_split.err" ;;
  round21h)
    # session 21: host time at T = 64, H = 1 after the Python path's shortening (stage_times' host
    # rows; the launch floor beside it, so that the host's phase shows)
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -2
    timeout 40 python bench/launch_floor.py > "$OUT/floor.log" 2>&1; grep -E "Graph|cuLaunch" "$OUT/floor.log" | head -4
    timeout 45 python bench/stage_times.py --iters 4000 --out "$OUT" > "$OUT/stage_times.log" 2>&1
    grep -E '"call"' "$OUT/stage_times.log" | cut -c1-200 ;;
  round21b)
    # prepared in session 20: the split's release check through the host entry with time for every
    # split GPU test (round 20d's 260 s ran 5 of 7 kinds); run after changing SPLIT_CONSUMERS or the
    # registry's scan and `python -m verify`
    split_check 400 ;;
  round19a)
    # prepared in session 18, not run: where the 32-token K1 loses issue efficiency (ncu source
    # counters at H96 1x8192, released 16-token K1 beside it), and the fast_math K1 at 32 tokens
    # (correctness against float64, times) before its builds may be released
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight \
      --section Occupancy --section WarpStateStats --section SchedulerStats --section SourceCounters \
      -o "$OUT/k1_src" python bench/k1_round.py ncu 1,128,5,holes,diag,ds,u0k2,ch32 1,64,12,holes,diag,ds,u0k2 \
      > "$OUT/k1_ncu.log" 2>&1; tail -1 "$OUT/k1_ncu.log"
    ncu --import "$OUT/k1_src.ncu-rep" --page source --csv --print-source sass > "$OUT/k1_src.csv" 2> "$OUT/k1_src.err"
    python bench/ncu_source_top.py "$OUT/k1_src.csv" 25 || head -c 600 "$OUT/k1_src.err"
    timeout 150 python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2 1,128,5,holes,diag,ds,u0k2,ch32 \
      1,128,5,holes,diag,ds,u0k2,ch32,fast > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -6 "$OUT/k1_round.log" ;;
  round18d|round19d)
    # session 18: the release of 32-token chunks through the generated host entry: build, stage
    # times with every unsplit call forced to 16- and to 32-token chunks, the GPU matrix (without
    # the split tests: the split's builds are unchanged) as the rule picks and forced to 32.
    # Session 19 (round19d): the same for the unguarded 32-token K1 and its fast_math builds, which
    # KDA_TILE_CHUNK=32 now forces too
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 150 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    for c in 16 32; do
      KDA_TILE_CHUNK=$c timeout 90 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times_$c.log" 2>&1
      mv "$OUT/stage-times.json" "$OUT/stage-times-$c.json" 2>/dev/null; echo "chunk $c"; grep -v "^{" "$OUT/stage_times_$c.log" | tail -14
    done
    matrix_runs 170 rule 32 ;;
  round18c)
    # session 18: K2 at 32-token chunks with one program a head (two consumer warpgroups: the
    # workspace read once; round 18b: one consumer reads it twice and is DRAM-bound at 74%), 3 and
    # 4 slots; K1 at 32-token chunks with the inverse from its 16-row blocks
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 260 python bench/k2_round.py 1,3,2,u0k2 1,3,2,u0k2,ch32 2,3,1,u0k2,ch32 2,4,1,u0k2,ch32 \
      > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -9 "$OUT/k2_round.log"
    timeout 150 python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2 1,128,5,holes,diag,ds,u0k2,ch32 \
      1,128,6,holes,diag,ds,u0k2,ch32 > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -6 "$OUT/k1_round.log" ;;
  round18b)
    # session 18: 32-token chunks (K1Config.chunk, K2Config.chunk): K2 at half the chain's steps
    # against the released K2, K1 (128 threads, two row halves) at 5 and 6 programs an SM against the
    # released K1; correctness against float64 first; then ncu counters of both new kernels
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 python bench/k2_round.py 1,3,2,u0k2 1,3,2,u0k2,ch32 > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -5 "$OUT/k2_round.log"
    timeout 150 python bench/k1_round.py 1,64,12,holes,diag,ds,u0k2 1,128,5,holes,diag,ds,u0k2,ch32 \
      1,128,6,holes,diag,ds,u0k2,ch32 > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -6 "$OUT/k1_round.log"
    timeout 100 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
      --csv --page details python bench/k2_round.py ncu 1,3,2,u0k2,ch32 1,3,2,u0k2 > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
    ncu_keys "$OUT/ncu.csv" "$OUT/ncu.err" ;;
  round18a)
    # next session: K2's unguarded stores with a per-row predicate and no branch (row), the
    # ring's period unrolled (unroll), both, the released form and the guarded one, through the JIT
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 240 python bench/k2_round.py 1,3,2,u0k2 1,3,2,u0k2,row 1,3,2,u0k2,unroll 1,3,2,u0k2,row,unroll \
      1,3,2,u0k2,guarded > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -11 "$OUT/k2_round.log" ;;
  round17d)
    # session 17: K2's output stores without TileLang's guards and, for whole chunks, without a
    # predicate each (as registered) against the guarded form (the previous release) through the
    # JIT; then the release through the host entry: build, the GPU matrix, stage times, split tests
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python bench/k2_round.py 1,3,2,u0k2,guarded 1,3,2,u0k2 > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -5 "$OUT/k2_round.log"
    release_check_split 50 60 ;;
  round17c)
    # session 17: U0's k-step with v's operand loaded beside Sh (-Wk)^T (u0k2, as registered) and
    # prefetched a chunk ahead (u0pre), against the previous release's K2 through the JIT; then the
    # u0k2 release through the host entry: build, the GPU matrix, stage times, the split tests
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 120 python bench/k2_round.py 1,3,2 1,3,2,u0k2 1,3,2,u0k2,u0pre > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -7 "$OUT/k2_round.log"
    release_check_split 60 120 ;;
  round17b)
    # session 17: U0 = Ab v as one more k-step in the consumers' accumulator (u0k2; u0first: the
    # k-step before St's conversion) against the previous release's K2 through the JIT; then the
    # u0k2 release through the host entry: build, the GPU matrix, stage times, the split tests
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 120 python bench/k2_round.py 1,3,2 1,3,2,u0k2 1,3,2,u0k2,u0first > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -7 "$OUT/k2_round.log"
    timeout 80 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout ${MATRIX_LIMIT:-170} python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      tests/test_reference.py -k "not split" > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -6
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -9
    timeout ${SPLIT_LIMIT:-120} python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      tests/test_split.py -k "split" > "$OUT/pytest_split.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_split.log" | tail -4 ;;
  round17a)
    # session 17: why the decoupled u0k2 loader costs the chain (+52% at H96 1x8192 in 16c):
    # the released K2 at the u0k2 register split (r192), u0k2 without U0's product (no_u0),
    # u0k2 at the released split (r216: the loading warpgroup spills)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 250 python bench/k2_round.py 1,3,2 1,3,2,r192 1,3,2,u0k2 1,3,2,u0k2,no_u0 1,3,2,u0k2,r216 \
      > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -11 "$OUT/k2_round.log" ;;
  round16c)
    # session 16: the u0k2 K2 as the code has it (3 and 4 slots; round 16c ran the loader with
    # its copies ahead of the product, now warp 0 copies and warps 2-3 multiply) against the
    # released K2
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 python bench/k2_round.py 1,3,2 1,3,2,u0k2 1,4,2,u0k2 > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -7 "$OUT/k2_round.log" ;;
  round16b)
    # session 16: K2 with U0 = Ab v (u0k2; first in the consumers' step, then by the loading
    # warpgroup) against the released K2, fed by the matching K1
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 250 python bench/k2_round.py 1,3,2 1,3,2,u0k2 ${K2_MORE:-} > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -5 "$OUT/k2_round.log" ;;
  round16a)
    # session 16: K1 writes Ab's bf16 parts in place of U0 and reads no v; K2 forms U0 = Ab v
    # (K1Config/K2Config.u0_in_k2), each against the released build through the JIT; then ncu of both
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 python bench/k1_round.py 1,64,12,holes,diag,ds 1,64,12,holes,diag,ds,u0k2 > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -4 "$OUT/k1_round.log"
    timeout 200 python bench/k2_round.py 1,3,2 1,3,2,u0k2 > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -5 "$OUT/k2_round.log"
    timeout 100 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      -o "$OUT/u0k2" python bench/k2_round.py ncu 1,3,2,u0k2 > "$OUT/u0k2_ncu.log" 2>&1; tail -1 "$OUT/u0k2_ncu.log"
    ncu --import "$OUT/u0k2.ncu-rep" --csv --page details > "$OUT/u0k2_details.csv" 2> /dev/null
    grep -E "DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Issue Slots Busy|Warp Cycles Per Issued|Executed Ipc A" \
      "$OUT/u0k2_details.csv" | cut -d, -f5,13-15 | head -20 ;;
  round15h)
    # session 15: the release with the varlen K1's slot search of as many steps as N needs
    # (K1Config.dyn_search) through the host entry: build, the GPU matrix without and then with the
    # split tests (T up to 1M; the split runs the varlen K1), stage times
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -9
    timeout 170 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      -k "not split" > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -6
    OUT="$OUT/split" timeout ${SPLIT_LIMIT:-150} python -m pytest -m gpu -q -p no:cacheprovider \
      tests/test_gpu_correctness.py -k split > "$OUT/pytest_gpu_split.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu_split.log" | tail -4 ;;
  round15g)
    # session 15: K1's slot search with as many steps as N needs (K1Config.dyn_search) and 13
    # programs an SM (72 registers, the shared-memory limit), against the released K1
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 300 python bench/k1_round.py 1,64,12,holes,diag 1,64,12,holes,diag,ds 1,64,13,holes,diag \
      1,64,13,holes,diag,ds > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -7 "$OUT/k1_round.log" ;;
  round15f)
    # session 15: K1 in head-major program order (K1Config.head_major) against the released K1
    # (k1_round: correctness against float64, workspace compared, then times), then its DRAM
    # throughput under ncu at H96 1x8192
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 300 python bench/k1_round.py 1,64,12,holes,diag 1,64,12,holes,diag,hm > "$OUT/k1_round.log" 2>&1
    grep -E "error|Error" "$OUT/k1_round.log" | head -3; tail -6 "$OUT/k1_round.log"
    timeout 120 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --csv python bench/k1_round.py ncu 1,64,12,holes,diag,hm \
      > "$OUT/k1_hm_ncu.csv" 2> "$OUT/k1_hm_ncu.err"
    grep -E "DRAM Throughput|Duration|L2 Hit Rate|Memory Throughput" "$OUT/k1_hm_ncu.csv" | cut -d, -f13-15 ;;
  round15e)
    # session 15: the released K1 at H96 1x8192 (cu_seqlens): speed of light, occupancy, memory,
    # warp states, and stalls per SASS instruction
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 ncu --clock-control none --profile-from-start off -k regex:k1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section SourceCounters -o "$OUT/k1_src" \
      python bench/k1_round.py ncu ${K1_NCU:-1,64,12,holes,diag} > "$OUT/k1_ncu.log" 2>&1; tail -1 "$OUT/k1_ncu.log"
    ncu --import "$OUT/k1_src.ncu-rep" --csv --page details > "$OUT/k1_details.csv" 2> "$OUT/k1_src.err"
    ncu --import "$OUT/k1_src.ncu-rep" --page source --csv --print-source sass > "$OUT/k1_src.csv" 2>> "$OUT/k1_src.err"
    grep -E "DRAM Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|Warp Cycles Per Issued|Block Limit|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" "$OUT/k1_details.csv" | cut -d, -f13-15 | head -24
    python bench/ncu_source_top.py "$OUT/k1_src.csv" 25 || head -c 600 "$OUT/k1_src.err" ;;
  round15d)
    # session 15: K2's chain step with U0 in the first group's accumulator (ua) and gC read while
    # it runs (gp), alone and with the merged output products (mo), against the released step;
    # then ncu source-level sampling of the ua,gp build at H96 1x8192
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 300 python bench/k2_round.py 1,3,2 1,3,2,ua 1,3,2,ua,gp 1,3,2,mo,ua,gp > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -8 "$OUT/k2_round.log"
    timeout 120 ncu --clock-control none --profile-from-start off -k regex:k2 --section SpeedOfLight \
      --section WarpStateStats --section SourceCounters -o "$OUT/k2_src" \
      python bench/k2_round.py ncu 1,3,2,ua,gp > "$OUT/k2_ncu.log" 2>&1; tail -1 "$OUT/k2_ncu.log"
    ncu --import "$OUT/k2_src.ncu-rep" --page source --csv --print-source sass > "$OUT/k2_src.csv" 2> "$OUT/k2_src.err"
    python bench/ncu_source_top.py "$OUT/k2_src.csv" 12 || head -c 600 "$OUT/k2_src.err" ;;
  round15c)
    # session 15: where K2's consumer waits, per SASS instruction, at H96 1x8192: the released K2
    # and its no_store probe (the stores cost 23% in session 9 and moving them made K2 slower)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 ncu --clock-control none --profile-from-start off -k regex:k2 --section SpeedOfLight \
      --section WarpStateStats --section SourceCounters -o "$OUT/k2_src" \
      python bench/k2_round.py ncu 1,3,2 1,3,2,no_store > "$OUT/k2_ncu.log" 2>&1; tail -2 "$OUT/k2_ncu.log"
    ncu --import "$OUT/k2_src.ncu-rep" --page source --csv --print-source sass > "$OUT/k2_src.csv" 2> "$OUT/k2_src.err"
    ncu --import "$OUT/k2_src.ncu-rep" --csv --page details > "$OUT/k2_details.csv" 2>> "$OUT/k2_src.err"
    python bench/ncu_source_top.py "$OUT/k2_src.csv" 25 || head -c 600 "$OUT/k2_src.err" ;;
  round15b)
    # session 15: the chain step's output products merged into the first wgmma group
    # (K2Config.merged_o): the micro-benchmark's forms at 1-3 warpgroups an SM, then K2 released
    # against merged (correctness against float64 first, then times at k2_round's shapes)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 150 python bench/chain_step.py --out "$OUT" > "$OUT/chain_step.log" 2>&1; tail -13 "$OUT/chain_step.log"
    timeout 380 python bench/k2_round.py 1,3,2 1,3,2,mo > "$OUT/k2_round.log" 2>&1
    grep -E "error|Error" "$OUT/k2_round.log" | head -3; tail -6 "$OUT/k2_round.log" ;;
  round15a)
    # queued by session 14: where the fused pairs producer waits, per SASS instruction (source-level
    # stall sampling of the producer-only probe and of the whole kernel at H96 1x8192)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    FUSED_NCU=pairs_probe_producer,pairs_varlen_h0f32_ht timeout 200 ncu --clock-control none \
      --profile-from-start off --section WarpStateStats --section SourceCounters -o "$OUT/pairs_src" \
      python bench/fused_round.py ncu > "$OUT/ncu_src.log" 2>&1; tail -2 "$OUT/ncu_src.log"
    # (the report comes back too: open it in Nsight Compute if the CSV page fails)
    ncu --import "$OUT/pairs_src.ncu-rep" --page source --csv --print-source sass > "$OUT/pairs_src.csv" \
      2> "$OUT/pairs_src.err"
    python bench/ncu_source_top.py "$OUT/pairs_src.csv" 20 || head -c 600 "$OUT/pairs_src.err"
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    FUSED_NO_MATRIX=1 timeout 150 python bench/fused_round.py pairs > "$OUT/pairs.log" 2>&1
    grep -E "^BAD|COMPILE|prewarm|^H[0-9]" "$OUT/pairs.log" | tail -8 ;;
  round14d)
    # session 14: the two GPU-matrix split tests the earlier rounds' limits cut (T = 1M, forced),
    # then the fused pairs timing rows (checked against kda_prefill) on this machine
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    OUT="$OUT/split" timeout 130 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "split_1m or split_forced" > "$OUT/pytest_gpu_split.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu_split.log" | tail -4
    FUSED_NO_MATRIX=1 timeout 150 python bench/fused_round.py pairs > "$OUT/pairs.log" 2>&1
    grep -E "^BAD|COMPILE|prewarm|^H[0-9]" "$OUT/pairs.log" | tail -8 ;;
  round14c)
    # session 14: the pairs producer with the warpgroup-wide inverse (fused_round.py pairs), ncu
    # counters of the pairs kernel and its producer alone at H96 1x8192, then the GPU matrix's
    # split tests with the released K1 (Mqk's diagonal) in what the call's limit leaves
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    CORRECTNESS_BUDGET_S=100 timeout 220 python bench/fused_round.py pairs > "$OUT/pairs.log" 2>&1
    grep -E "^correctness|^BAD|COMPILE|prewarm|^H[0-9]" "$OUT/pairs.log" | tail -12
    FUSED_NCU=pairs_varlen_h0f32_ht,pairs_probe_producer timeout 80 ncu --clock-control none --profile-from-start off \
      --csv --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats python bench/fused_round.py ncu > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
    tail -1 "$OUT/ncu.err"; wc -l < "$OUT/ncu.csv"
    OUT="$OUT/split" timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "split" > "$OUT/pytest_gpu_split.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu_split.log" | tail -4 ;;
  round14b)
    # session 14: the released K1 with Mqk's diagonal through the host entry (build, GPU matrix
    # without the split tests, stage times), then the fused kernel's producer in K1's per-element
    # form against session 3's and against kda_prefill (bench/fused_round.py pairs)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      -k "not split" > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -6
    timeout 50 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v "^{" "$OUT/stage_times.log" | tail -7
    CORRECTNESS_BUDGET_S=110 timeout 250 python bench/fused_round.py pairs > "$OUT/pairs.log" 2>&1
    grep -E "^correctness|^BAD|COMPILE|prewarm|^H[0-9]" "$OUT/pairs.log" | tail -24 ;;
  round13d)
    # session 13: Mqk's diagonal from an fp32 dot (K1Config.mqk_diag) against the released K1, JIT;
    # then the release with it through the host entry: build, the GPU matrix, stage times, the
    # matrix's split tests last (what the call's limit leaves)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    K1_SHAPES="H96 1x8192;H96 1x8192 cu;H8 1x65536 cu;H32 2048x64 cu" timeout 150 python bench/k1_round.py \
      1,64,12,holes 1,64,12,holes,diag > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -5
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 150 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py tests/test_reference.py \
      -k "not split" > "$OUT/pytest_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu.log" | tail -6
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v '^{' "$OUT/stage_times.log" | tail -5
    OUT="$OUT/split" timeout 140 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "split" > "$OUT/pytest_gpu_split.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu_split.log" | tail -6 ;;
  round13c)
    # session 13: the GPU matrix's split tests (T up to 1M) with the released K1, after round13b
    timeout 100 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    OUT="$OUT/split" timeout 400 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_correctness.py \
      -k "split" > "$OUT/pytest_gpu_split.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_gpu_split.log" | tail -8 ;;
  holes)
    # K1 with hole programs returning first (K1Config.skip_holes, session 12, not yet measured)
    # against the released K1, through TileLang's JIT, at k1_round's shapes (many-sequence ones included)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 300 python bench/k1_round.py 1,64,12 1,64,12,holes > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -8 ;;
  round12a)
    # session 12: graph nodes' parameters rewritten only when they change, less Python before the
    # entry (issue 11's out= row): build, host GPU tests, stage times, host overhead (both launch forms)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED|NOT VERIFIED" | tail -3
    timeout 200 python -m pytest -m gpu -q -p no:cacheprovider tests/test_host_codegen_gpu.py > "$OUT/pytest_host_gpu.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_host_gpu.log" | tail -8
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v -E '^\{|warn' "$OUT/stage_times.log" | tail -8
    timeout 240 python bench/host_overhead.py --iters 3000 > "$OUT/host.log" 2>&1
    grep -v -E '^\{|nanobind|leaked' "$OUT/host.log" | tail -45 ;;
  round12b)
    # session 12: decode through the API (GPU tests, bench/decode.py: host time per call), then fp32
    # value-block widths 32 and 16 through TileLang's JIT at N = 1..1024
    decode_check
    timeout 150 python bench/decode_round.py sweep_f32 > "$OUT/decode_sweep_f32.log" 2>&1
    grep -v -E '^\{|INFO' "$OUT/decode_sweep_f32.log" | tail -6 ;;
  round12c)
    # session 12: the fp32 one-token decode at bv16 through the API (decode GPU tests, bench/decode.py),
    # ncu of one launch at N = 1 beside a one-element fill_ (issue 12's 2x floor), then the custom op /
    # compile / graph / fla integration tests after api's positional path
    decode_check
    NCU_N=1 timeout 90 ncu --clock-control none -k 'regex:kda_decode|elementwise' --csv --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python bench/decode_round.py ncu > "$OUT/decode_ncu_n1.csv" 2> "$OUT/decode_ncu_n1.err"
    tail -1 "$OUT/decode_ncu_n1.err"; grep -E '"Duration"|Warp Cycles Per Issued' "$OUT/decode_ncu_n1.csv" | cut -c1-200 | tail -8
    timeout 220 python -m pytest -m gpu -q -p no:cacheprovider tests/test_integration_gpu.py tests/test_custom_op.py \
      > "$OUT/pytest_integration.log" 2>&1
    grep -E "passed|failed|FAILED|Error" "$OUT/pytest_integration.log" | tail -8 ;;
  round12d)
    # session 12: build, stage times, the whole GPU matrix through kda_prefill's positional path
    release_check 330 ;;
  round11a)
    # session 11: K1 and K2 through TileLang's JIT at the many-sequence shapes. It first ran with two
    # variants since removed (K1 skipping hole programs, "1,64,12" against "1,64,12,p=holes"; K2 with a
    # loading warp, "1,3,3,lw" and others): bench/NOTES.md, session 11
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
    timeout 240 python bench/k1_round.py ${K1_VARIANTS:-1,64,12} > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -5
    timeout 330 python bench/k2_round.py ${K2_VARIANTS:-1,3,2} > "$OUT/k2_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k2_round.log" | tail -12 ;;
  round10)
    # session 10: the sequence split released: build, stage times, the whole GPU matrix (split rows included)
    release_check 380 ;;
  round10c)
    # session 10: host time and stage times after the split's routing, then the peers at H8 1x65536
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "^built|FAILED" | tail -3
    timeout 60 python bench/stage_times.py --out "$OUT" > "$OUT/stage_times.log" 2>&1; grep -v -E '^\{|warn' "$OUT/stage_times.log" | tail -8
    BENCH_NO_HOST=1 timeout 330 python -u bench/bench_peers.py --out "$OUT" --only "${PEERS_ONLY:-H8 1x65536}" > "$OUT/bench.log" 2>&1
    grep -E "^\| |geomean|peak" "$OUT/bench.log" | tail -14 ;;
  scanbr)
    # session 10: the split's scan at 4, 2 and 16 state rows a program (the released 8 is in round10b)
    for br in ${SCAN_BRS:-4 2 16}; do
      chk=0; [ "$br" = 4 ] && chk=1
      SPLIT_SCAN_BR=$br SPLIT_CHECK=$chk SPLIT_SHAPES="H8 1x65536,H16 1x65536,H8 1x262144" \
        timeout 200 python bench/split_round.py 16 > "$OUT/split_br$br.log" 2>&1
      echo "== block_rows $br"; grep -v -E '^\{|INFO|^compiled|^prewarm' "$OUT/split_br$br.log" | tail -5
    done ;;
  round10b)
    # session 10: the split through kda_prefill against the unsplit path, then its stages through the JIT
    timeout 300 python bench/split_api.py ${SPLIT_API_ARGS:-} > "$OUT/split_api.log" 2>&1
    grep -v -E '^\{|INFO' "$OUT/split_api.log" | tail -14
    timeout 240 python bench/split_round.py ${SPLIT_G:-8 16 32} > "$OUT/split_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/split_round.log" | tail -22 ;;
  round9)
    # session 9: the released K1 and K2 through TileLang's JIT first, then the release (K1 at one
    # chunk, 64 threads, cp.async) through the generated entry: build, stage times, the GPU matrix
    timeout 150 python bench/k1_round.py ${K1_VARIANTS:-1,64,12} > "$OUT/k1_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k1_round.log" | tail -4
    timeout 150 python bench/k2_round.py ${K2_VARIANTS:-1,3,2} > "$OUT/k2_round.log" 2>&1
    grep -v -E '^\{|INFO|^compiled' "$OUT/k2_round.log" | tail -6
    release_check 400 ;;
  round8)
    # session 8: the WY K1 and K2 released: build, stage times, the whole GPU matrix
    release_check 400 ;;
  peers)
    # bench_peers.py on the shapes named in PEERS_ONLY (comma-separated label parts), no host rows
    timeout 200 python -m kda_tile build --jobs 16 2>&1 | grep -E "FAILED" | tail -3
    BENCH_NO_HOST=1 timeout 520 python -u bench/bench_peers.py --out "$OUT" --only "$PEERS_ONLY" > "$OUT/bench.log" 2>&1
    grep -E "^\| |geomean|peak" "$OUT/bench.log" | tail -14 ;;
  bench)
    timeout 540 python bench/bench_peers.py --out "$OUT" > "$OUT/bench.log" 2>&1; tail -30 "$OUT/bench.log"
    timeout 120 python bench/host_overhead.py > "$OUT/host.log" 2>&1; tail -25 "$OUT/host.log" ;;
esac
