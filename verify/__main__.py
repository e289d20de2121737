"""`python -m verify` / `kda-verify`: verify kernels, print a table, write a JSON report.

    python -m verify                      every released kda_tile build; refreshes kda_tile/manifest.json
    python -m verify path/to/module.py    every kernel in the module's KERNELS dict
    python -m verify --check-manifest     exit 1 when the committed manifest is stale (CI)

A module names its kernels and what a proof may assume (every table but KERNELS is optional;
a table entry naming a kernel KERNELS does not define is an error):

    import tilelang.language as T

    def scale():                                   # a prim_func or a zero-argument factory
        N = T.dynamic("N")

        @T.prim_func
        def scale(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
                tx = T.get_thread_binding()
                if bx * 128 + tx < N:
                    B[bx * 128 + tx] = A[bx * 128 + tx] * 2.0
        return scale

    KERNELS = {"scale": scale}
    PRECONDITIONS = {"scale": ["N >= 1", "N <= 2**30"]}   # Python expressions over the kernel's
                                                           # size variables (default: none; every
                                                           # integer argument is >= 0 and fits its type)
    BANK_BUDGET = {"scale": 1}         # worst accepted bank-conflict degree (default 1)
    PASS_CONFIGS = {"scale": {}}       # TileLang pass configs to lower with (default none)
    MONOTONE = {"cu_seqlens": ("N1", "T")}   # buffers read as 0 = c[0] <= ... <= c[N1-1] = T
                                             # (default: cu_seqlens over N1 and T)
    MUTATIONS = {}                     # name -> (kernel, function rewriting its lowered device PrimFunc)

Exit status 0 only when every kernel is proved (warnings allowed unless --strict).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from . import VERSION
from .jobs import _hash_work, _work, module_jobs, run_parallel


# -- commands --------------------------------------------------------------------------------------

def cmd_verify(args) -> int:
    from .report import PROVED, failures_text, table, write_json
    t0 = time.perf_counter()
    builds = []

    def specs():
        if args.module:
            return [("module", args.module, j.name) for j in module_jobs(args.module)]
        from kda_tile import registry
        builds.extend(b for b in registry.RELEASED if not args.only or b.name in args.only)
        return [("registry", b.name) for b in builds]
    reports = run_parallel(_work, specs, args.jobs)
    builds = None if args.module else builds
    wall = time.perf_counter() - t0
    print(table(reports))
    text = failures_text(reports)
    if text:
        print()
        print(text)
    lower_s = sum(r.lower_seconds for r in reports)
    check_s = sum(r.verify_seconds for r in reports)
    n_ok = sum(r.status == PROVED for r in reports)
    print(f"\n{n_ok}/{len(reports)} kernels proved in {wall:.1f} s wall on {args.jobs} processes "
          f"(lowering {lower_s:.1f} s, checks {check_s:.1f} s; verifier {VERSION})")
    write_json(args.json, reports, {"verifier_version": VERSION, "wall_seconds": round(wall, 2)})
    print(f"report: {args.json}")
    if builds is not None and not args.no_manifest and not args.only:
        from . import manifest
        path = manifest.write(builds, reports)
        print(f"manifest: {path}")
    return 0 if n_ok == len(reports) else 1


def cmd_check_manifest(args) -> int:
    from . import manifest
    t0 = time.perf_counter()
    names = []

    def specs():
        from kda_tile import registry
        names.extend(b.name for b in registry.RELEASED)
        return names
    results = run_parallel(_hash_work, specs, args.jobs)
    hashes = {n: h for n, h, _ in results}
    problems = manifest.stale(manifest.load(), hashes)
    wall = time.perf_counter() - t0
    if problems:
        print("kda_tile/manifest.json is stale; run `python -m verify` and commit the result:")
        for p in problems:
            print("  " + p)
        print(f"({len(names)} builds lowered in {wall:.1f} s)")
        return 1
    print(f"manifest up to date: {len(names)} builds, verifier {VERSION} ({wall:.1f} s)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kda-verify", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("module", nargs="?", help="a python file exposing KERNELS (default: kda_tile's releases)")
    p.add_argument("--check-manifest", action="store_true", help="exit 1 if kda_tile/manifest.json is stale")
    p.add_argument("--json", default="verify_report.json", help="where to write the JSON report (default: %(default)s)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (default: %(default)s)")
    p.add_argument("--only", nargs="*", default=None, help="only these released builds (no manifest)")
    p.add_argument("--no-manifest", action="store_true", help="do not rewrite the manifest")
    p.add_argument("--strict", action="store_true",
                   help="warnings are errors (accesses in bounds only through a guard TileLang inserted)")
    p.add_argument("--version", action="version", version=f"verify {VERSION}")
    args = p.parse_args(argv)
    from .jobs import single_threaded
    single_threaded()
    if args.strict:
        os.environ["KDA_VERIFY_STRICT"] = "1"   # read by the jobs (worker processes inherit it)
    if args.check_manifest:
        return cmd_check_manifest(args)
    return cmd_verify(args)


if __name__ == "__main__":
    sys.exit(main())
