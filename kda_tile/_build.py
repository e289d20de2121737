"""`python -m kda_tile build`: everything kda_prefill and kda_decode load, for every released configuration,
prepared ahead (see kda_tile.__main__). Lives apart from __main__ because spawned worker
processes cannot import functions from a package's __main__ module."""
import concurrent.futures as cf
import logging
import multiprocessing as mp
import os
import time


def _quiet(verbose: bool):
    """Worker initializer: TileLang logs every compile at INFO; keep that for -v."""
    if not verbose:
        os.environ.setdefault("TL_LOG_LEVEL", "WARNING")
        logging.getLogger("tilelang").setLevel(logging.WARNING)
        logging.getLogger("TileLang").setLevel(logging.WARNING)
    os.environ.setdefault("TVM_NUM_THREADS", "1")


def _verification(build, ir_hash: str) -> str:
    """What the release gate will say about this build, in a word or a sentence."""
    from kda_tile import gate
    from kda_kernels import buildkey
    rec = gate.load_manifest().get("builds", {}).get(build.name)
    if rec is None:
        return "NOT VERIFIED (no record: run python -m verify)"
    if rec.get("status") != "proved":
        return f"NOT VERIFIED (status {rec.get('status')})"
    if rec.get("gate_key") != buildkey.gate_key(build):
        return "NOT VERIFIED (stale record: run python -m verify)"
    if rec.get("ir_hash") != ir_hash:
        return "NOT VERIFIED (record proves another IR)"
    return "verified"


def _prepare_one(name: str) -> dict:
    """Worker: one build's host spec (lowering it unless cached) and cubin (nvcc unless cached)."""
    import host_codegen as hc
    from kda_kernels import registry
    build = registry.BY_NAME[name]
    t0 = time.perf_counter()
    d = hc.kernel_dir(build)
    cached = os.path.exists(os.path.join(d, "meta.json")) and os.path.exists(os.path.join(d, "kernel.cubin"))
    ks = hc.kernel_spec(build)
    cubin = hc.cubin_path(build)
    with open(cubin, "rb") as f:
        head = f.read(4)
    size = os.path.getsize(cubin)
    with open(os.path.join(d, "kernel.cu")) as f:
        has_kernel = "__global__" in f.read()
    status = "ok" if head == b"\x7fELF" and has_kernel else "no kernel" if not has_kernel else "not a cubin"
    threads = 1
    for e in ks.block:
        threads *= e[1] if e[0] == "int" else 0
    return {"name": name, "seconds": time.perf_counter() - t0, "cached": cached, "status": status,
            "smem": ks.smem[1] if ks.smem[0] == "int" else None, "threads": threads, "cubin_bytes": size,
            "verification": _verification(build, ks.ir_hash)}


def _entry_one(i: int) -> dict:
    """Worker: one released entry's generated C++ host entry ((K1, K2) pair, split or decode build),
    compiled unless cached."""
    import host_codegen as hc
    from host_codegen.cpp_entry import read_binding
    builds = hc.released_entries()[i]
    t0 = time.perf_counter()
    _, _, d = hc.entry_dir(*builds)
    cached = read_binding(d) is not None
    hc.get_entry(*builds, backend="cpp")
    return {"name": " + ".join(b.name for b in builds), "seconds": time.perf_counter() - t0, "cached": cached,
            "status": "ok"}


def _run(fn, items, jobs, verbose, line):
    """Run fn over items in worker processes, printing `i/N` lines as they finish."""
    n, failed, done = len(items), 0, 0
    w = len(str(n))
    ctx = mp.get_context("spawn")   # no TileLang/TVM state is forked into the workers
    with cf.ProcessPoolExecutor(max_workers=max(1, min(jobs, n)), mp_context=ctx, initializer=_quiet,
                                initargs=(verbose,)) as ex:
        futs = {ex.submit(fn, it): it for it in items}
        for fut in cf.as_completed(futs):
            done += 1
            try:
                r = fut.result()
                print(f"  [{done:{w}d}/{n}] {line(r)}", flush=True)
                failed += r["status"] != "ok"
            except Exception as e:  # report every item, then fail
                failed += 1
                print(f"  [{done:{w}d}/{n}] {futs[fut]}  FAILED: {type(e).__name__}: {e}", flush=True)
    return failed


def _kernel_line(r) -> str:
    t = "cached" if r["cached"] else f"{r['seconds']:.1f} s"
    smem = f"{r['smem']:6d} B" if r["smem"] is not None else "dynamic"
    return (f"{r['name']:40s} {t:>8s}  smem {smem}  {r['threads']:4d} threads  cubin {r['cubin_bytes'] / 1024:6.1f} KB"
            f"  {r['status']}  {r['verification']}")


def _entry_line(r) -> str:
    t = "cached" if r["cached"] else f"{r['seconds']:.1f} s"
    return f"{r['name']:75s} {t:>8s}  {r['status']}"


def build(jobs: int, entries: bool = True, verbose: bool = False) -> int:
    import host_codegen as hc
    from kda_kernels import registry
    names = [b.name for b in registry.RELEASED]
    t0 = time.perf_counter()
    print(f"kernels: {len(names)} released builds for {registry.TARGET}, {jobs} processes "
          f"(cache {hc.cache_dir()})", flush=True)
    failed = _run(_prepare_one, names, jobs, verbose, _kernel_line)
    t1 = time.perf_counter()
    n_pairs, failed_entries = 0, 0
    if entries and not failed:
        every = hc.released_entries()
        n_pairs = len(every)
        n_lf = len(hc.released_longest_first())
        n_one = {stage: sum(1 for e in every if len(e) == 1 and e[0].stage == stage) for stage in ("k1_short", "decode")}
        print(f"host entries: {n_pairs} released ({len(hc.released_pairs())} (K1, K2) pairs, "
              f"{len(hc.released_splits())} sequence splits, {n_lf} longest-first, {n_one['k1_short']} short-form "
              f"and {n_one['decode']} decode builds)", flush=True)
        failed_entries = _run(_entry_one, list(range(n_pairs)), jobs, verbose, _entry_line)
    t2 = time.perf_counter()
    msg = f"built {len(names) - failed}/{len(names)} kernels in {t1 - t0:.1f} s"
    if entries:
        msg += (f", {n_pairs - failed_entries}/{n_pairs} host entries in {t2 - t1:.1f} s" if n_pairs
                else ", host entries skipped (a kernel failed)")
    print(msg + f"; {t2 - t0:.1f} s in all")
    return 1 if failed or failed_entries else 0
