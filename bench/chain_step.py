"""Micro-benchmark: one chunk step of the WY chain, in isolation (issue: measure before building).

Each warpgroup holds a 64 x 128 fp32 state fragment and runs `steps` chunk steps of

    Sh = fp16(St); WO = Sh Wk^T; Oacc = Sh qd^T; St *= gC; wait(1)
    Uh = fp16(U0^T - WO); St += Uh kr; Oacc += Uh Mqk^T; wait(0); store Oacc

on operands that stay in shared memory (no loads, no producer), so the time per step is the
chain's latency at the given number of warpgroups per SM. CTAs of one warpgroup are launched
132 * m at a time for m warpgroups per SM (as many as the registers let the SM hold).

    python bench/chain_step.py [--steps 4096] [--forms split,merged,merged_zm,no_o] [--out DIR]

Each form (see `build`) is timed at 1, 2 and 3 warpgroups an SM, with the decay after wait(1).
"""
import argparse
import json
import os
from pathlib import Path

C, K, BV = 16, 128, 64


def build(decay_at="overlap", form="split"):
    """decay_at: where St *= gC sits: "overlap" (between the first wgmma group's issue and its
    wait), "after_wait" (after wait(1)), "before_issue" (before the first group is issued).
    form: "split" (K2's step: WO = Sh Wk^T and O = Sh qd^T as two groups of eight N = 16 wgmmas,
    O += Uh Mqk^T as its own N = 16 wgmma), "merged" ([WO | O1] = Sh [Wk; qd]^T as one group of
    eight N = 32 wgmmas, so that St += Uh kr no longer queues behind the output's products;
    O2 = Uh Mqk^T, O = O1 + O2 at the store), "merged_zm" (the same with [WO | O] += Uh [0; Mqk]^T
    as one N = 32 wgmma instead of O2), "no_o" (no output products: the chain's floor)."""
    import tilelang.language as T
    f16, f32 = "float16", "float32"
    NCTA = T.dynamic("NCTA")
    merged = form.startswith("merged")
    zm = form == "merged_zm"

    @T.prim_func
    def chain(src: T.Tensor((C, K), f16), o: T.Tensor((NCTA, 8, BV, C), f32), steps: T.int32):
        with T.Kernel(NCTA, threads=128) as (bx,):
            Wk_s = T.alloc_shared((C, K), f16)
            qd_s = T.alloc_shared((C, K), f16)
            WQ_s = T.alloc_shared((2 * C, K), f16)
            kr_s = T.alloc_shared((C, K), f16)
            U0_s = T.alloc_shared((C, BV), f16)
            Mqk_s = T.alloc_shared((C, C), f16)
            ZM_s = T.alloc_shared((2 * C, C), f16)
            gC_s = T.alloc_shared((K,), f32)
            St = T.alloc_fragment((BV, K), f32)
            Sh = T.alloc_fragment((BV, K), f16)
            WO = T.alloc_fragment((BV, C), f32)
            Oa = T.alloc_fragment((BV, C), f32)
            WOa = T.alloc_fragment((BV, 2 * C), f32)
            Uh = T.alloc_fragment((BV, C), f16)
            T.copy(src, Wk_s)
            T.copy(src, qd_s)
            T.copy(src, kr_s)
            for r, d in T.Parallel(2 * C, K):
                WQ_s[r, d] = src[r % C, d]
            for r, j in T.Parallel(C, BV):
                U0_s[r, j] = src[r, j]
            for r, j in T.Parallel(C, C):
                Mqk_s[r, j] = src[r, j]
            for r, j in T.Parallel(2 * C, C):
                ZM_s[r, j] = T.if_then_else(r < C, T.Cast(f16, 0.0), src[r % C, j])
            for d in T.Parallel(K):
                gC_s[d] = 0.99
            T.clear(St)
            for c in T.serial(steps):
                T.copy(St, Sh)
                if decay_at == "before_issue":
                    for j, d in T.Parallel(BV, K):
                        St[j, d] = St[j, d] * gC_s[d]
                if merged:
                    T.wgmma_gemm(Sh, WQ_s, WOa, transpose_B=True, clear_accum=True)
                else:
                    T.wgmma_gemm(Sh, Wk_s, WO, transpose_B=True, clear_accum=True)
                    if form != "no_o":
                        T.wgmma_gemm(Sh, qd_s, Oa, transpose_B=True, clear_accum=True)
                if decay_at == "overlap":
                    for j, d in T.Parallel(BV, K):
                        St[j, d] = St[j, d] * gC_s[d]
                T.wait_wgmma(0 if merged or form == "no_o" else 1)
                if decay_at == "after_wait":
                    for j, d in T.Parallel(BV, K):
                        St[j, d] = St[j, d] * gC_s[d]
                if merged:
                    for j, r in T.Parallel(BV, 2 * C):
                        if r < C:
                            Uh[j, r] = T.Cast(f16, T.Cast(f32, U0_s[r, j]) - WOa[j, r])
                else:
                    for j, r in T.Parallel(BV, C):
                        Uh[j, r] = T.Cast(f16, T.Cast(f32, U0_s[r, j]) - WO[j, r])
                T.wgmma_gemm(Uh, kr_s, St)
                if zm:
                    T.wgmma_gemm(Uh, ZM_s, WOa, transpose_B=True)
                elif form != "no_o":
                    T.wgmma_gemm(Uh, Mqk_s, Oa, transpose_B=True, clear_accum=merged)
                T.wait_wgmma(0)
                if zm:
                    for j, r in T.Parallel(BV, 2 * C):
                        if r >= C:
                            o[bx, c % 8, j, r - C] = WOa[j, r]
                elif merged:
                    for j, r in T.Parallel(BV, 2 * C):
                        if r >= C:
                            o[bx, c % 8, j, r - C] = WOa[j, r] + Oa[j, r - C]
                elif form != "no_o":
                    for j, r in T.Parallel(BV, C):
                        o[bx, c % 8, j, r] = Oa[j, r]
                else:
                    for j, r in T.Parallel(BV, C):
                        o[bx, c % 8, j, r] = T.Cast(f32, Uh[j, r])
    return chain


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4096)
    ap.add_argument("--forms", default="split,merged,merged_zm,no_o")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    import tilelang
    import torch
    from triton.testing import do_bench
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    src = (torch.randn(C, K, device="cuda") * 0.01).half()
    rows = []
    plan = [(f, m) for f in args.forms.split(",") for m in (1, 2, 3)]
    for form, m in plan:
        decay_at = "after_wait"
        kern = tilelang.compile(build(decay_at, form), target={"kind": "cuda", "arch": "sm_90a"}, out_idx=None)
        ncta = sms * m
        o = torch.empty(ncta, 8, BV, C, device="cuda")
        ms_lo = do_bench(lambda: kern(src, o, 16), warmup=10, rep=50, return_mode="median")
        ms = do_bench(lambda: kern(src, o, args.steps), warmup=5, rep=50, return_mode="median")
        us_step = (ms - ms_lo) * 1e3 / (args.steps - 16)
        rows.append(dict(form=form, decay_at=decay_at, warpgroups_per_sm=m, ctas=ncta, steps=args.steps, ms=ms, us_per_step=us_step))
        print(json.dumps(rows[-1]), flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "chain_step.json").write_text(json.dumps(rows, indent=1))
    print("form        warpgroups/SM  us/step")
    for r in rows:
        print(f"{r['form']:10s}  {r['warpgroups_per_sm']:>13}  {r['us_per_step']:.3f}")


if __name__ == "__main__":
    main()
