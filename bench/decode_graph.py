"""Is kda_decode at small N bound by the host or by the kernel? (issue 12's "within 2x of the
launch floor")

    python bench/decode_graph.py

For N = 1 and 8 at H32 (pool P = 2N, random rows), fp32 and bf16 pools, and for the launch floor (a
one-element torch fill_), two device times per call:
- eager: triton do_bench median of one call (the host issues every call; if the host is slower
  than the kernel, this is host time);
- graph: 16 consecutive calls captured in one CUDA graph, do_bench median of a replay / 16 (no
  host work between kernels: the kernel's own time plus the GPU's per-node launch cost).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import kda_tile  # noqa: E402

H = HV = 32
REPS = 16


def per_call(fn, do_bench):
    eager = do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(REPS):
            fn()
    graph = do_bench(g.replay, warmup=25, rep=200, return_mode="median") * 1e3 / REPS
    return eager, graph


def main():
    from triton.testing import do_bench
    rows = []
    one = torch.zeros(1, device="cuda")
    fe, fg = per_call(lambda: one.fill_(1.0), do_bench)
    rows.append(dict(case="floor: fill_ of one element", eager_us=fe, graph_us=fg))
    for state in (torch.float32, torch.bfloat16):
        for N in (1, 8):
            gen = torch.Generator(device="cuda").manual_seed(N)
            bf = torch.bfloat16
            rn = lambda *s: torch.randn(*s, generator=gen, device="cuda").to(bf)  # noqa: E731
            q, k, v, g, beta = rn(N, H, 128), rn(N, H, 128), rn(N, HV, 128), rn(N, HV, 128), rn(N, HV)
            A_log = torch.empty(HV, device="cuda").uniform_(0.0, 2.7, generator=gen)
            dt_bias = torch.randn(HV, 128, device="cuda", generator=gen) * 0.5
            pool = (torch.randn(2 * N, HV, 128, 128, device="cuda", generator=gen) * 0.1).to(state)
            idx = torch.randperm(2 * N, device="cuda", generator=gen)[:N].to(torch.int64)
            o = torch.empty(N, HV, 128, device="cuda", dtype=bf)

            def call():
                kda_tile.kda_decode(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, state_pool=pool,
                                    state_indices=idx, out=o)
            call()
            e, gr = per_call(call, do_bench)
            rows.append(dict(case=f"kda_decode N={N} {str(state)[6:]} pool", eager_us=e, graph_us=gr))
    for r in rows:
        r["eager_vs_floor"] = r["eager_us"] / fe
        r["graph_vs_floor"] = r["graph_us"] / fg
        print(json.dumps(r), flush=True)
    print(f"{'case':34s} {'eager us':>9s} {'x floor':>8s} {'graph us':>9s} {'x floor':>8s}")
    for r in rows:
        print(f"{r['case']:34s} {r['eager_us']:9.2f} {r['eager_vs_floor']:8.2f} {r['graph_us']:9.2f} "
              f"{r['graph_vs_floor']:8.2f}")


if __name__ == "__main__":
    with torch.inference_mode():
        main()
