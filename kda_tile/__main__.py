"""`python -m kda_tile build` compiles every released kernel for sm_90a (no GPU needed);
`python -m kda_tile demo` runs the API at a small shape on the GPU, or the float64
reference on the CPU when there is no GPU, and prints what it did."""
import argparse
import concurrent.futures as cf
import os
import sys
import time


def _compile_one(name: str) -> tuple[str, float, int, str]:
    from kda_tile import _launch, registry
    build = registry.BY_NAME[name]
    t0 = time.perf_counter()
    kernel = _launch.compiled(build)
    src = kernel.get_kernel_source() or ""
    smem = 0
    lowered = getattr(kernel, "artifact", None)
    if lowered is not None and lowered.device_mod is not None:
        for f in lowered.device_mod.functions.values():
            smem = max(smem, int(f.attrs.get("dyn_shared_memory_buf", 0) or 0))
    return name, time.perf_counter() - t0, smem, "ok" if "__global__" in src else "no kernel source"


def build(jobs: int) -> int:
    from kda_tile import registry
    names = [b.name for b in registry.RELEASED]
    print(f"compiling {len(names)} released builds for {registry.TARGET} with {jobs} processes")
    t0 = time.perf_counter()
    failed = 0
    with cf.ProcessPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(_compile_one, n): n for n in names}
        for fut in cf.as_completed(futs):
            try:
                name, dt, smem, status = fut.result()
                print(f"  {name:44s} {dt:6.1f}s  smem {smem:7d} B  {status}")
                failed += status != "ok"
            except Exception as e:  # report every build, then fail
                failed += 1
                print(f"  {futs[fut]:44s} FAILED: {type(e).__name__}: {e}")
    print(f"built {len(names) - failed}/{len(names)} in {time.perf_counter() - t0:.1f}s")
    return 1 if failed else 0


def demo() -> int:
    import torch
    from kda_tile import reference
    B, T, H = 1, 100, 2
    inp = reference.random_inputs(B, T, H, seed=0, state_dtype=torch.float32,
                                  device="cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        import kda_tile
        o, ht = kda_tile.kda_prefill(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                     dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                     output_final_state=True)
        o_ref, ht_ref = reference.kda_recurrent(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"],
                                                A_log=inp["A_log"], dt_bias=inp["dt_bias"],
                                                initial_state=inp["initial_state"], output_final_state=True)
        print(f"GPU {torch.cuda.get_device_name()}: kda_prefill B={B} T={T} H={H}: "
              f"rel err o {reference.rel_err(o, o_ref):.2e}, final state {reference.rel_err(ht, ht_ref):.2e}")
        return 0
    t0 = time.perf_counter()
    o, ht = reference.kda_recurrent(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                    dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                    output_final_state=True)
    oc, htc = reference.kda_chunked(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], A_log=inp["A_log"],
                                    dt_bias=inp["dt_bias"], initial_state=inp["initial_state"],
                                    output_final_state=True)
    print(f"no GPU: float64 reference on the CPU, B={B} T={T} H={H}: o {tuple(o.shape)}, final state "
          f"{tuple(ht.shape)}, |o| = {o.norm():.4f}; chunked vs token recurrence: "
          f"{reference.rel_err(oc, o):.1e} (o), {reference.rel_err(htc, ht):.1e} (state); "
          f"{time.perf_counter() - t0:.2f}s")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kda_tile")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile every released kernel for sm_90a")
    b.add_argument("--jobs", type=int, default=max(1, min(8, os.cpu_count() or 1)))
    sub.add_parser("demo", help="run at a small shape (GPU) or the reference (CPU)")
    args = ap.parse_args(argv)
    return build(args.jobs) if args.cmd == "build" else demo()


if __name__ == "__main__":
    sys.exit(main())
