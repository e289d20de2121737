"""DeepSeek MLA decode, warp-specialized (TileLang examples/deepseek_mla/example_mla_decode_ws.py,
main_no_split): two consumer warpgroups share one softmax through shared memory and two mbarrier
handshakes, and a producer warpgroup fills a two-stage K/V ring with cp.async, whose completion
arrives on the stage's barrier (cp.async.mbarrier.arrive.noinc). Sizes as upstream (512 + 64
head dims, 64-token K/V tiles, 64 query heads a program, one KV head); batch and sequence
length symbolic. (Upstream's 16 as cp.async's count is bytes in its TileLang; in 0.1.15's
tl.ptx_cp_async it is elements: 8 here.)"""
import tilelang.language as T

SOURCE = {"mla_decode_ws": "examples/deepseek_mla/example_mla_decode_ws.py",
          "mla_decode_ws_synced": "examples/deepseek_mla/example_mla_decode_ws.py (+ a row-sum handshake)"}

DIM, PE, BN, BH, STAGES = 512, 64, 64, 64, 2
LOG2E = 1.44269504


def mla_decode_ws(synced=False):
    B, S = T.dynamic("B"), T.dynamic("S")
    H = BH   # one program a (batch, 64 query heads); one KV head
    f16, f32 = "float16", "float32"
    scale = float(DIM + PE) ** -0.5 * LOG2E

    @T.prim_func
    def mla_decode_ws(Q: T.Tensor((B, H, DIM), f16), Q_pe: T.Tensor((B, H, PE), f16),
                      KV: T.Tensor((B, S, 1, DIM), f16), K_pe: T.Tensor((B, S, 1, PE), f16),
                      Out: T.Tensor((B, H, DIM), f16)):
        with T.Kernel(1, B, threads=384) as (hid, bid):
            q_s = T.alloc_shared((BH, DIM), f16)
            qpe_s = T.alloc_shared((BH, PE), f16)
            kv_s = T.alloc_shared((STAGES, BN, DIM), f16)
            kpe_s = T.alloc_shared((STAGES, BN, PE), f16)
            o_s = q_s
            acc_l = T.alloc_fragment((BH, DIM // 2), f32)
            acc_r = T.alloc_fragment((BH, DIM // 2), f32)
            s_f = T.alloc_fragment((BH, BN), f32)
            p_s = T.alloc_shared((BH, BN), f16)
            lsum = T.alloc_fragment((BH,), f32)
            lsum_s = T.alloc_shared((BH,), f32)
            lsum_i = T.alloc_fragment((BH,), f32)
            alpha_s = T.alloc_shared((BH,), f32, scope="shared")
            alpha = T.alloc_fragment((BH,), f32)
            m = T.alloc_fragment((BH,), f32)
            m_prev = T.alloc_fragment((BH,), f32)

            q_ready = T.alloc_barrier(arrive_count=384)
            kv_ready = T.alloc_barrier(arrive_count=[128] * STAGES)
            kv_free = T.alloc_barrier(arrive_count=[256] * STAGES)
            p_ready = T.alloc_barrier(arrive_count=256)
            p_free = T.alloc_barrier(arrive_count=256)
            sums_ready = T.alloc_barrier(arrive_count=128)

            NI = T.ceildiv(S, BN)
            tx = T.get_thread_binding()
            T.copy(Q[bid, :, :], q_s)
            T.copy(Q_pe[bid, :, :], qpe_s)
            T.barrier_arrive(q_ready)

            if tx < 128:
                T.set_max_nreg(240, 1)
                T.fill(lsum, 0)
                T.fill(m, -(2 ** 30))
                T.fill(acc_l, 0)
                T.barrier_wait(q_ready, 0)
                for i in T.serial(T.ceildiv(NI, STAGES)):
                    for st in T.unroll(STAGES):
                        T.barrier_wait(kv_ready[st], i & 1)
                        T.clear(s_f)
                        T.wgmma_gemm(q_s[:, :DIM // 2], kv_s[st, :, :DIM // 2], s_f, transpose_B=True)
                        T.wgmma_gemm(q_s[:, DIM // 2:], kv_s[st, :, DIM // 2:], s_f, transpose_B=True)
                        T.wgmma_gemm(qpe_s, kpe_s[st, :, :], s_f, transpose_B=True)
                        T.wait_wgmma(0)
                        if i != 0 or st != 0:
                            T.barrier_arrive(p_free)
                            T.barrier_wait(p_free, ((i * STAGES + st) & 1) ^ 1)
                        T.copy(m, m_prev)
                        T.reduce_max(s_f, m, dim=1, clear=False)
                        for h in T.Parallel(BH):
                            m[h] = T.max(m[h], m_prev[h])
                        for h in T.Parallel(BH):
                            alpha[h] = T.exp2((m_prev[h] - m[h]) * scale)
                        for h, n in T.Parallel(BH, BN):
                            s_f[h, n] = T.exp2(s_f[h, n] * scale - m[h] * scale)
                        T.reduce_sum(s_f, lsum_i, dim=1)
                        for h in T.Parallel(BH):
                            lsum[h] = lsum[h] * alpha[h] + lsum_i[h]
                        for h, d in T.Parallel(BH, DIM // 2):
                            acc_l[h, d] *= alpha[h]
                        T.copy(alpha, alpha_s)
                        T.copy(s_f, p_s)
                        T.gemm(p_s, kv_s[st, :, :DIM // 2], acc_l)
                        T.barrier_arrive(p_ready)
                        T.barrier_arrive(kv_free[st])
                for h in T.Parallel(BH):
                    lsum_s[h] = lsum[h]
                if synced:
                    T.barrier_arrive(sums_ready)
                for h, d in T.Parallel(BH, DIM // 2):
                    acc_l[h, d] /= lsum[h]
                T.copy(acc_l, o_s[:, :DIM // 2])
                T.copy(o_s[:, :DIM // 2], Out[bid, :, :DIM // 2])
            elif tx < 256:
                T.set_max_nreg(168, 1)
                T.fill(acc_r, 0)
                for i in T.serial(T.ceildiv(NI, STAGES)):
                    for st in T.unroll(STAGES):
                        T.barrier_arrive(p_ready)
                        T.barrier_wait(p_ready, (i * STAGES + st) & 1)
                        for h, d in T.Parallel(BH, DIM // 2):
                            acc_r[h, d] *= alpha_s[h]
                        T.gemm(p_s, kv_s[st, :, DIM // 2:], acc_r)
                        T.barrier_arrive(kv_free[st])
                        if st != STAGES - 1 or i != T.ceildiv(NI, STAGES) - 1:
                            T.barrier_arrive(p_free)
                if synced:
                    T.barrier_wait(sums_ready, 0)
                for h, d in T.Parallel(BH, DIM // 2):
                    acc_r[h, d] /= lsum_s[h]
                T.copy(acc_r, o_s[:, DIM // 2:])
                T.copy(o_s[:, DIM // 2:], Out[bid, :, DIM // 2:])
            else:
                T.set_max_nreg(80, 0)
                for i in T.serial(T.ceildiv(NI, STAGES)):
                    for st in T.unroll(STAGES):
                        T.barrier_wait(kv_free[st], (i & 1) ^ 1)
                        for r in T.serial(4):
                            row = (i * STAGES + st) * BN + r * 16 + (tx - 256) // 8
                            for u in T.serial(DIM // 64):
                                T.ptx_cp_async(
                                    T.access_ptr(kv_s[st, r * 16 + (tx - 256) // 8, 64 * u + (tx - 256) % 8 * 8],
                                                 "w", 8),
                                    T.access_ptr(KV[bid, row, 0, 64 * u + (tx - 256) % 8 * 8], "r", 8), 8)
                            T.ptx_cp_async(
                                T.access_ptr(kpe_s[st, r * 16 + (tx - 256) // 8, (tx - 256) % 8 * 8], "w", 8),
                                T.access_ptr(K_pe[bid, row, 0, (tx - 256) % 8 * 8], "r", 8), 8)
                        T.cp_async_barrier_noinc(kv_ready[st])
    return mla_decode_ws


KERNELS = {"mla_decode_ws": mla_decode_ws, "mla_decode_ws_synced": lambda: mla_decode_ws(synced=True)}
PRECONDITIONS = {name: ["B >= 1", "S >= 128", "S % 128 == 0", "B * S * 512 <= 2**31 - 1"] for name in KERNELS}
BANK_BUDGET = {name: 32 for name in KERNELS}
WRITTEN_ONCE = {name: ["Out"] for name in KERNELS}
# A true finding: after their loops the first consumer stores the row sums to lsum_s and the
# second divides by them, with no barrier or mbarrier between: the second's last wait (p_ready)
# completes with the first's last arrival, which comes before that store. (Upstream's
# sum_exp_shared; in practice the second's last GEMM usually gives the store time.)
# The same kernel with the store published on an mbarrier the second consumer waits on: proved.
EXPECT = {"mla_decode_ws": ("barriers.race", "lsum_s", "the row sums are read with no ordering after their store"),
          "mla_decode_ws_synced": None}
