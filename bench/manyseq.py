"""Time per call of kda_prefill on packed batches of many short sequences, and per kernel.

    python bench/manyseq.py probe N L H     # one configuration, in this process
    python bench/manyseq.py sweep [--out DIR] [--timeout S]   # each configuration in a fresh
                                                               # process, killed after S seconds

A call that does not finish is reported as a timeout, not waited for. Each configuration is
checked against the float64 reference on its first 8 sequences (fresh random inputs) before it
is timed. Kernel times come from the CUDA profiler (one call); call times are medians of 10.
"""
import json
import os
import subprocess
import sys
import time

SWEEP = [  # (sequences, tokens each, heads); growing, so that a timeout costs little
    (64, 64, 32), (256, 64, 32), (1, 131072, 32), (256, 512, 32), (512, 64, 32), (4096, 1, 8),
    (2048, 64, 32), (8192, 16, 32),
]


def probe(N: int, L: int, H: int) -> dict:
    import torch
    from kda_tile import kda_prefill
    from kda_kernels.reference import kda_recurrent, random_inputs, rel_err

    T = N * L
    cu = torch.arange(0, T + 1, L, dtype=torch.int64)
    x = random_inputs(1, T, H, device="cuda", cu_seqlens=cu, state_dtype=torch.float32)
    args = (x["q"], x["k"], x["v"], x["g"], x["beta"])
    kw = dict(A_log=x["A_log"], dt_bias=x["dt_bias"], cu_seqlens=x["cu_seqlens"],
              initial_state=x["initial_state"], output_final_state=True)
    t0 = time.perf_counter()
    o, ht = kda_prefill(*args, **kw)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    # The first m sequences (at most 2048 tokens: a prefix of a sequence is a sequence) against float64.
    m = min(N, 8)
    n_tok = min(m * L, 2048)
    cu_m = torch.clamp(cu[:m + 1], max=n_tok).cuda()
    ro, rh = kda_recurrent(*(a[:, :n_tok] for a in args), A_log=x["A_log"], dt_bias=x["dt_bias"],
                           cu_seqlens=cu_m, initial_state=x["initial_state"][:m], output_final_state=True)
    err_o = rel_err(o[:, :n_tok], ro)
    err_h = rel_err(ht[:m], rh) if n_tok == m * L else None
    from stage_times import event_ms, kernel_ms

    def call():
        return kda_prefill(*args, **kw)
    return dict(N=N, L=L, H=H, T=T, first_s=round(first, 3), ms=round(event_ms(call, 10), 4),
                err_o=err_o, err_ht=err_h, kernels_ms=kernel_ms(call))


def sweep(out: str, timeout: float):
    rows = []
    for N, L, H in SWEEP:
        t0 = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, __file__, "probe", str(N), str(L), str(H)], capture_output=True,
                               text=True, timeout=timeout)
            lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
            row = json.loads(lines[-1]) if lines else dict(N=N, L=L, H=H, error=r.stderr.strip().splitlines()[-8:])
        except subprocess.TimeoutExpired:
            row = dict(N=N, L=L, H=H, timeout_s=timeout)
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if out:
        with open(os.path.join(out, "manyseq.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    print(f"{'N':>6} {'L':>7} {'H':>3} {'ms':>9} {'err_o':>9} {'kernels (ms)'}")
    for r in rows:
        ms = r.get("ms", "TIMEOUT" if "timeout_s" in r else "ERROR")
        print(f"{r['N']:>6} {r['L']:>7} {r['H']:>3} {ms!s:>9} {r.get('err_o', float('nan')):>9.2e} {r.get('kernels_ms', r.get('error', ''))}")


if __name__ == "__main__":
    if sys.argv[1] == "probe":
        import faulthandler
        faulthandler.dump_traceback_later(float(os.environ.get("MANYSEQ_DUMP_S", "1e9")), exit=True)
        print(json.dumps(probe(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
    else:
        a = sys.argv[2:]
        out = a[a.index("--out") + 1] if "--out" in a else ""
        to = float(a[a.index("--timeout") + 1]) if "--timeout" in a else 40.0
        sweep(out, to)
