"""`python -m kda_tile build` prepares everything kda_prefill loads, for every released
configuration, on any machine with nvcc (no GPU needed): each build's lowered IR read into its
host spec and its sm_90a cubin, then each (K1, K2) pair's generated C++ host entry. Everything
lands in the caches (TileLang's, and host_codegen's under $KDA_TILE_CACHE), so that a first
call lowers and compiles nothing. A second run finds it all cached and says so.

`python -m kda_tile demo` runs kda_prefill at a small shape on the GPU and compares it with the
float64 reference; without a GPU it runs the generated entry's argument checks (the release gate
and the same checks kda_prefill runs) on CPU tensors, then the reference.
"""
import argparse
import os
import sys
import time

from ._build import build


def _inputs(device):
    import torch
    from kda_kernels import reference
    B, T, H = 1, 100, 2
    return (B, T, H), reference.random_inputs(B, T, H, seed=0, state_dtype=torch.float32, device=device)


def demo() -> int:
    import torch
    from kda_tile import gate
    from kda_kernels import reference
    (B, T, H), inp = _inputs("cuda" if torch.cuda.is_available() else "cpu")
    args = (inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"])
    kw = dict(A_log=inp["A_log"], dt_bias=inp["dt_bias"], initial_state=inp["initial_state"], output_final_state=True)
    if torch.cuda.is_available():
        import kda_tile
        t0 = time.perf_counter()
        try:
            o, ht = kda_tile.kda_prefill(*args, **kw)
        except gate.UnverifiedBuildError as e:
            print(f"kda_prefill refused: {e}")
            return 1
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        o_ref, ht_ref = reference.kda_recurrent(*args, **kw)
        print(f"GPU {torch.cuda.get_device_name()}: kda_prefill B={B} T={T} H={H} (first call {first * 1e3:.0f} ms): "
              f"rel err o {reference.rel_err(o, o_ref):.2e}, final state {reference.rel_err(ht, ht_ref):.2e} "
              f"against the float64 reference")
        return 0
    from kda_tile.api import check_inputs
    print("no CUDA GPU: the kernels need an sm_90a (Hopper) GPU, so nothing is launched here.")
    t0 = time.perf_counter()
    try:
        env = check_inputs(*args, **kw, device="cpu")
    except gate.UnverifiedBuildError as e:
        print(f"kda_prefill would refuse: {e}")
        return 1
    dt = time.perf_counter() - t0
    dims = ", ".join(f"{k}={env[k]}" for k in ("B", "T", "H", "N1") if k in env)
    print(f"generated entry: the release gate and kda_prefill's argument checks pass on CPU tensors "
          f"({dims}; {dt * 1e3:.0f} ms including the entry's load)")
    try:
        check_inputs(inp["q"].float(), *args[1:], **kw, device="cpu")
    except TypeError as e:
        print(f"  and refuse a float32 q: TypeError: {e}")
    t0 = time.perf_counter()
    o, ht = reference.kda_recurrent(*args, **kw)
    oc, htc = reference.kda_chunked(*args, **kw)
    print(f"float64 reference on the CPU, B={B} T={T} H={H}: o {tuple(o.shape)}, final state "
          f"{tuple(ht.shape)}, |o| = {o.norm():.4f}; chunked vs token recurrence: "
          f"{reference.rel_err(oc, o):.1e} (o), {reference.rel_err(htc, ht):.1e} (state); "
          f"{time.perf_counter() - t0:.2f}s")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kda_tile")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile every released kernel for sm_90a and its host entries")
    b.add_argument("--jobs", type=int, default=max(1, min(8, os.cpu_count() or 1)))
    b.add_argument("--kernels-only", action="store_true", help="skip the (K1, K2) host entries")
    b.add_argument("-v", "--verbose", action="store_true", help="keep TileLang's INFO logging")
    sub.add_parser("demo", help="run at a small shape (GPU) or the entry's checks and the reference (CPU)")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        return build(args.jobs, entries=not args.kernels_only, verbose=args.verbose)
    return demo()


if __name__ == "__main__":
    sys.exit(main())
