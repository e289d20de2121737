"""What the slab pipeline gives (kda_tile.slabs.run_pipelined): one-sequence calls through
kda_prefill with the pipeline off (the whole call) and forced on at several slab counts, same
process, same inputs; then, under a workspace limit, the serial slabs against the pipeline.

    python bench/pipeline_probe.py [--quick]

Per shape: median ms (triton do_bench, inference_mode; no state, and fp32 state in and out), the
slab tokens and count, the peak device memory beyond inputs and outputs, and whether o and the
final state equal the whole call's bit for bit (they must: the same chunks, the state carried in
fp32), checked before anything is timed. Writes pipeline_probe.json under $OUT (or
bench/results/), a table last.
"""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from results_io import write_rows  # noqa: E402

import k1_round  # noqa: E402  (the benchmarks' random inputs)
from bench_peers import extra_bytes  # noqa: E402

SHAPES = [  # label, T, H, cu, slab counts; chains = 2 H
    ("H32 1x32768 cu", 32768, 32, True, [4, 8, 16]),
    ("H32 1x131072 cu", 131072, 32, True, [8, 16, 32]),
    ("H32 1x8192 cu", 8192, 32, True, [4, 8]),
    ("H48 1x16384 cu", 16384, 48, True, [4, 8]),
    ("H64 1x8192 cu", 8192, 64, True, [4, 8]),
    ("H96 1x8192 cu", 8192, 96, True, [4, 8]),
    ("H32 1x32768", 32768, 32, False, [8]),
    # session 29: shapes the rule takes that round 29c did not measure (48 chains; a longer sequence)
    ("H24 1x32768 cu", 32768, 24, True, [4, 8]),
    ("H32 1x262144 cu", 262144, 32, True, [8, 16]),
]
# PIPE_SHAPES="H24 1x32768 cu,H32 1x262144 cu" keeps those rows only (the full run)
if os.environ.get("PIPE_SHAPES"):
    SHAPES = [s for s in SHAPES if s[0] in os.environ["PIPE_SHAPES"].split(",")]
LIMITS = [("H96 1x8192 cu", 8192, 96, 64), ("H32 1x32768 cu", 32768, 32, 64)]   # label, T, H, MB
# PIPE_LIMITS=0 leaves the rows under a workspace limit out; PIPE_REPEAT=n measures the shapes n
# times over, in order, so that a row's spread shows beside its ratio
if os.environ.get("PIPE_LIMITS") == "0":
    LIMITS = []
REPEAT = int(os.environ.get("PIPE_REPEAT", "1"))


def timeline(T=32768, H=32, n=8):
    """One pipelined call at H32 1x32768 with each launch timed on its stream: when each slab's K1
    and K2 ran (us from the first K1's start), so a failed prediction shows whether K1 ran beside
    K2 at all."""
    import kda_tile
    from kda_tile import api, slabs
    d = k1_round.inputs(1, T, H, [T], seed=T + H)
    args = [d[k] for k in ("q", "k", "v", "g", "beta")]
    kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], cu_seqlens=d["cu"])
    api.set_pipeline(True)
    api.PIPE_SLABS = n
    api._PIPE.clear()
    kda_tile.kda_prefill(*args, **kw)
    slabs.TRACE = []
    kda_tile.kda_prefill(*args, **kw)
    torch.cuda.synchronize()
    trace, slabs.TRACE = slabs.TRACE, None
    api.set_pipeline(None)
    t0 = trace[0][2]
    print(f"timeline H{H} 1x{T}, {n} slabs (us from the first K1's start):")
    for j, kern, a, b in trace:
        print(f"  slab {j:2d} {kern}: {t0.elapsed_time(a) * 1e3:8.1f} -> {t0.elapsed_time(b) * 1e3:8.1f}")
    # the slabs' pace: K1 start to K1 start (the host's loop where it exceeds the kernels)
    k1 = [t0.elapsed_time(a) * 1e3 for j, kern, a, b in trace if kern == "K1"]
    gaps = sorted(k1[j + 1] - k1[j] for j in range(len(k1) - 1))
    if gaps:
        print(f"timeline: K1 starts {gaps[len(gaps) // 2]:.1f} us apart (median; {gaps[0]:.1f}-{gaps[-1]:.1f}), "
              f"the whole {t0.elapsed_time(trace[-1][3]) * 1e3:.1f} us")


def main():
    import kda_tile
    from kda_tile import api
    from triton.testing import do_bench
    quick = "--quick" in sys.argv
    rows = []

    def measure(label, mode, args, kw, whole, **row):
        api.empty_cache()
        torch.cuda.empty_cache()
        kept = []
        extra = extra_bytes(lambda: kept.append(kda_tile.kda_prefill(*args, **kw)),
                            args[2].numel() * 2 + (kw["initial_state"].numel() * 4 if kw["initial_state"] is not None
                                                   else 0))
        o, ht = kept.pop()
        r = dict(shape=label, state=mode, extra_MB=round(extra / 2 ** 20, 1), **row)
        if whole is not None:
            r["bitwise"] = bool(torch.equal(o, whole[0]) and (ht is None or torch.equal(ht, whole[1])))
        del o, ht
        r["ms"] = do_bench(lambda: kda_tile.kda_prefill(*args, **kw), warmup=5, rep=40, return_mode="median")
        rows.append(r)
        print(json.dumps(r), flush=True)

    with torch.inference_mode():
        for label, T, H, use_cu, counts in (SHAPES[:1] if quick else SHAPES) * REPEAT:
            d = k1_round.inputs(1, T, H, [T] if use_cu else None, seed=T + H)
            args = [d[n] for n in ("q", "k", "v", "g", "beta")]
            for mode in ("none", "inout"):
                h0 = torch.randn(1, H, 128, 128, device="cuda") if mode == "inout" else None
                kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], initial_state=h0, output_final_state=h0 is not None,
                          cu_seqlens=d["cu"])
                api.set_pipeline(False)
                whole = kda_tile.kda_prefill(*args, **kw)
                whole = (whole[0].clone(), None if whole[1] is None else whole[1].clone())
                measure(label, mode, args, kw, None, slabs=1, slab_tokens=0, pipeline=False)
                api.set_pipeline(True)
                for n in counts:
                    api.PIPE_SLABS = n
                    api._PIPE.clear()
                    tokens = api._pipe_rule(1, T, H)
                    measure(label, mode, args, kw, whole, slabs=-(-T // tokens) if tokens else 1,
                            slab_tokens=tokens, pipeline=True)
                api.set_pipeline(None)
            del d, args
        api.PIPE_SLABS = kda_tile.api._configs.PIPE_SLABS
        timeline()
        for label, T, H, mb in ([] if quick else LIMITS):
            d = k1_round.inputs(1, T, H, [T], seed=T + H)
            args = [d[n] for n in ("q", "k", "v", "g", "beta")]
            h0 = torch.randn(1, H, 128, 128, device="cuda")
            kw = dict(A_log=d["A_log"], dt_bias=d["dt_bias"], initial_state=h0, output_final_state=True,
                      cu_seqlens=d["cu"])
            api.set_pipeline(False)
            whole = kda_tile.kda_prefill(*args, **kw)
            whole = (whole[0].clone(), whole[1].clone())
            api.set_workspace_limit(mb << 20)
            for on in (False, True):
                api.set_pipeline(on)
                tokens = api._pipe_rule(1, T, H) if on else api._slab_rule(1, T, H)
                measure(label, "inout", args, kw, whole, slabs=-(-T // tokens), slab_tokens=tokens, pipeline=on,
                        limit_MB=mb)
            api.set_workspace_limit(None)
            api.set_pipeline(None)
            del d, args
    write_rows("pipeline_probe.json", rows)
    # each row against the whole call measured last before it (its own repeat)
    base, last = [], {}
    for r in rows:
        if not r["pipeline"] and "limit_MB" not in r:
            last[(r["shape"], r["state"])] = r["ms"]
        base.append(last.get((r["shape"], r["state"]), float("nan")))
    print(f"{'shape':18s} {'state':>6s} {'limit':>6s} {'pipe':>5s} {'slab':>7s} {'n':>4s} {'ms':>8s} {'x whole':>8s} "
          f"{'extra MB':>9s} {'bitwise':>8s}")
    for r, b in zip(rows, base):
        print(f"{r['shape']:18s} {r['state']:>6s} {r.get('limit_MB', 0):6d} {str(r['pipeline']):>5s} "
              f"{r['slab_tokens']:7d} {r['slabs']:4d} {r['ms']:8.3f} {r['ms'] / b:8.3f} "
              f"{r['extra_MB']:9.1f} {str(r.get('bitwise', '')):>8s}")


if __name__ == "__main__":
    main()
