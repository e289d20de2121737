"""Per-kernel device times of kda_prefill (torch profiler) and its host time with fresh and with
caller-provided outputs, on the H200. A short check after a kernel change, not the peer benchmark.

    python bench/stage_times.py [--out DIR]

Device: for each shape, the call with cu_seqlens (varlen builds), as a fixed batch, and with
cu_seqlens and fast_math, fp32 initial and final state: the median of 20 event-timed calls (each
alone: the host's time per call is inside it), the triton do_bench median (`ms_queued`: the queue
kept full, comparable across host phases), and each kernel's device time from one profiled call. Host: bench/host_overhead.py's timer (perf_counter_ns per call, no sync inside the
timed region, the queue drained every 32 calls) at T=64, H=1, without state, for
kda_prefill(...) and kda_prefill(..., out=o) in the default (graph) launch mode.
Writes stage-times.json to --out ($OUT, else bench/results/) and prints a table.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

# (H, lens, HV); the last two take 32-token chunks by the rule (kda_kernels.configs.use_chunk32)
SHAPES = [(96, [8192], None), (16, [8192], 64), (32, [32768], None), (64, [8192], None)]


def kernel_ms(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = {}
    for ev in prof.key_averages():
        if "kernel" in ev.key:
            out[ev.key.split("(")[0][:40]] = round(getattr(ev, "device_time_total", getattr(ev, "cuda_time_total", 0))
                                                   / 1e3, 4)
    return out


def event_ms(fn, n=20):
    """The median of n event-timed calls, after one untimed call."""
    fn()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return sorted(ts)[n // 2]


def device_rows():
    from triton.testing import do_bench

    from kda_kernels.reference import random_inputs
    from kda_tile import kda_prefill
    rows = []
    for H, lens, HV in SHAPES:
        T = sum(lens)
        cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64)
        x = random_inputs(1, T, H, device="cuda", seed=1, cu_seqlens=cu, state_dtype=torch.float32, HV=HV)
        B, L = len(lens), lens[0]
        for mode in ("cu_seqlens", "batched", "cu_seqlens fast"):
            if mode == "batched" and len(set(lens)) != 1:
                continue
            a = [x[n] for n in ("q", "k", "v", "g", "beta")]
            cu_arg = x["cu_seqlens"]
            if mode == "batched":
                a = [t.reshape(B, L, *t.shape[2:]) for t in a]
                cu_arg = None

            def call(a=a, cu_arg=cu_arg, fast="fast" in mode):
                return kda_prefill(*a, A_log=x["A_log"], dt_bias=x["dt_bias"], initial_state=x["initial_state"],
                                   output_final_state=True, cu_seqlens=cu_arg, fast_math=fast)
            with torch.inference_mode():
                ms = event_ms(call)
                # the queue kept full (do_bench's L2 flush runs ahead of each call), so the host's
                # time per call stays off the device's: comparable across host phases
                ms_queued = do_bench(call, warmup=25, rep=100, return_mode="median")
                ks = kernel_ms(call)
            heads = f"H{H}" if HV is None else f"H{H}/HV{HV}"
            rows.append(dict(shape=f"{heads} {B}x{L}", mode=mode, ms=ms, ms_queued=ms_queued, kernels_ms=ks))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def host_rows(iters):
    from host_overhead import time_calls
    from kda_kernels.reference import random_inputs
    from kda_tile import kda_prefill
    x = random_inputs(1, 64, 1, device="cuda", seed=2)
    a = [x[n] for n in ("q", "k", "v", "g", "beta")]
    o = torch.empty_like(x["v"])
    calls = {
        "kda_prefill": lambda: kda_prefill(*a, A_log=x["A_log"], dt_bias=x["dt_bias"]),
        "kda_prefill(out=o)": lambda: kda_prefill(*a, A_log=x["A_log"], dt_bias=x["dt_bias"], out=o),
    }
    rows = []
    with torch.inference_mode():
        for name, fn in calls.items():
            r = time_calls(fn, iters, 200)
            rows.append(dict(call=name, **r))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or str(Path(__file__).parent / "results"))
    ap.add_argument("--iters", type=int, default=3000)
    args = ap.parse_args()
    host = host_rows(args.iters)
    dev = device_rows()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stage-times.json").write_text(json.dumps(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                                                          host_T64_H1=host, device=dev), indent=1))
    print(f"{'call (T=64, H=1)':24s} {'median us':>9s} {'p10':>7s} {'p90':>7s}")
    for r in host:
        print(f"{r['call']:24s} {r['median_us']:9.2f} {r['p10_us']:7.2f} {r['p90_us']:7.2f}")
    print(f"{'shape':20s} {'mode':15s} {'ms':>7s} {'queued':>7s}  kernels (ms)")
    for r in dev:
        ks = ", ".join(f"{k.replace('_kernel', '')} {v:.3f}" for k, v in sorted(r["kernels_ms"].items()))
        print(f"{r['shape']:20s} {r['mode']:15s} {r['ms']:7.3f} {r['ms_queued']:7.3f}  {ks}")


if __name__ == "__main__":
    main()
