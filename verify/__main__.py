"""`python -m verify` / `kda-verify`: verify kernels, print a table, write a JSON report.

    python -m verify                      every released kda_tile build; refreshes verify/manifest.json
    python -m verify path/to/module.py    every kernel in the module's KERNELS dict
    python -m verify --check-manifest     exit 1 when the committed manifest is stale (CI)

One line per kernel as it finishes, then the table, the findings and a summary. Exit status 0
only when every kernel is proved (and, for a full run of the released builds, the manifest was
written or already current). The manifest is written only by a full run that proves every
build: a failing, partial (--only) or interrupted run leaves it byte-identical.

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
    STRICT = []                        # kernels whose warnings are errors (as with --strict)
    ANY_CONTENTS = []                  # kernels that must stay in bounds whatever the MONOTONE
                                       # buffers hold (bounds.any_contents; released builds: all)
    DISTINCT = []                      # buffers whose entries >= 0 are pairwise distinct (the rows
                                       # of a state pool): blocks writing those rows do not race

A warning (an access in bounds only through a guard TileLang inserted) does not fail the run
unless --strict.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from . import VERSION
from .jobs import _hash_work, _work, module_jobs, run_parallel


# -- commands --------------------------------------------------------------------------------------

def _progress(report, done, total):
    from .runner import progress_line
    print(progress_line(report, done, total), flush=True)


def _summary(reports, wall, jobs) -> str:
    from . import solver
    from .report import PROVED
    counts = {}
    for r in reports:
        v = "error" if r.error else r.status
        counts[v] = counts.get(v, 0) + 1
    n_ok = counts.get(PROVED, 0)
    lower_s = sum(r.lower_seconds for r in reports)
    check_s = sum(r.verify_seconds for r in reports)
    st = [getattr(r, "solver_stats", {}) for r in reports]
    queries = sum(s.get("queries", 0) for s in st)
    cached = sum(s.get("cached", 0) for s in st)
    rmax = max((s.get("rlimit_max_query", 0) for s in st), default=0)
    # the largest query among the kernels held to the default limit, and among those with their own
    own = [s for s in st if s.get("rlimit_limit", solver.DEFAULT_RLIMIT) != solver.DEFAULT_RLIMIT]
    own_ids = {id(s) for s in own}
    rdef = max((s.get("rlimit_max_query", 0) for s in st if id(s) not in own_ids), default=0)
    slowest = max(reports, key=lambda r: r.lower_seconds + r.verify_seconds, default=None)
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    carried = sum(r.carried for r in reports)
    lines = [f"{n_ok}/{len(reports)} kernels proved ({verdicts}) in {wall:.1f} s wall on {jobs} processes "
             f"(lowering {lower_s:.1f} s, checks {check_s:.1f} s; verifier {VERSION})"
             + (f"; {carried} carried over from their records (same proof key and IR hash; --reprove "
                "proves them again)" if carried else "")]
    if slowest is not None:
        lines.append(f"slowest kernel {slowest.name} {slowest.lower_seconds + slowest.verify_seconds:.1f} s; "
                     f"{queries} solver queries ({cached} from the memo); largest query {rdef} Z3 resource units "
                     f"of the {solver.DEFAULT_RLIMIT or 'unlimited'} allowed (KDA_VERIFY_RLIMIT)"
                     + (f"; {rmax} in the {len(own)} kernels with their own limit" if own else ""))
    return "\n".join(lines)


def cmd_verify(args) -> int:
    from .report import PROVED, failures_text, table, write_json
    t0 = time.perf_counter()
    builds, keys = [], {}

    def specs():
        if args.module:
            return [("module", args.module, j.name) for j in module_jobs(args.module)]
        from kda_kernels import registry

        from . import manifest
        builds.extend(b for b in registry.RELEASED if not args.only or b.name in args.only)
        if args.only and len(builds) != len(set(args.only)):
            unknown = sorted(set(args.only) - {b.name for b in builds})
            raise SystemExit(f"--only: no released build named {', '.join(unknown)}")
        keys.update(manifest.gate_keys(builds))   # before lowering: a change during the run is caught
        recs = {} if args.reprove else manifest.load().get("builds", {})
        return [("registry", b.name, manifest.prior(recs.get(b.name))) for b in builds]
    reports = run_parallel(_work, specs, args.jobs, on_result=_progress)
    builds = None if args.module else builds
    wall = time.perf_counter() - t0
    print()
    print(table(reports))
    text = failures_text(reports)
    if text:
        print()
        print(text)
    n_ok = sum(r.status == PROVED for r in reports)
    print()
    print(_summary(reports, wall, args.jobs))
    solver_stats = {r.name: getattr(r, "solver_stats", {}) for r in reports}
    write_json(args.json, reports, {"verifier_version": VERSION, "wall_seconds": round(wall, 2),
                                    "solver": solver_stats})
    print(f"report: {args.json}")
    rc = 0 if n_ok == len(reports) else 1
    if builds is not None and not args.no_manifest:
        from . import manifest
        if args.only:
            print(f"manifest: not written (--only: a partial run never rewrites {manifest.manifest_path()})")
        else:
            try:
                path, changed = manifest.write(builds, reports, keys=keys)
                print(f"manifest: {path} ({'updated' if changed else 'unchanged'})")
            except manifest.NotWritten as e:
                print(f"manifest: NOT written, {manifest.manifest_path()} is left as it was: {e}")
                rc = 1
    return rc


def cmd_check_manifest(args) -> int:
    from . import manifest
    t0 = time.perf_counter()
    names, keys = [], {}

    def specs():
        from kda_kernels import registry
        names.extend(b.name for b in registry.RELEASED)
        keys.update(manifest.gate_keys(registry.RELEASED))
        return names
    doc = manifest.load()

    def progress(result, done, total):
        name, h, secs, _ = result
        rec = doc.get("builds", {}).get(name, {})
        same = rec.get("ir_hash") == h and rec.get("gate_key") == keys.get(name)
        print(f"[{done:{len(str(total))}d}/{total}] {name:44s} lowered in {secs:5.1f} s  "
              f"{'matches its record' if same else 'DIFFERS from its record'}", flush=True)
    results = run_parallel(_hash_work, specs, args.jobs, on_result=progress)
    hashes = {n: h for n, h, _, _ in results}
    problems = manifest.stale(doc, hashes, keys)
    old_proofs = manifest.stale_proofs(doc, {n: k for n, _, _, k in results})
    wall = time.perf_counter() - t0
    if problems:
        print("verify/manifest.json is stale; run `python -m verify` and commit the result:")
        for p in problems:
            print("  " + p)
        print(f"({len(names)} builds lowered in {wall:.1f} s)")
        return 1
    print(f"manifest up to date: {len(names)} builds, gate keys and lowered IR hashes match, verifier {VERSION} "
          f"({wall:.1f} s)")
    if old_proofs:
        print(f"note: {len(old_proofs)} of {len(names)} builds have proof keys that differ from their records "
              f"(first: {old_proofs[0]}): the verifier's sources, a program before lowering, the toolchain or "
              f"a check input changed since they were proved. The next `python -m verify` proves them again "
              f"instead of carrying them over")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kda-verify", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("module", nargs="?", help="a python file exposing KERNELS (default: kda_tile's releases)")
    p.add_argument("--check-manifest", action="store_true", help="exit 1 if verify/manifest.json is stale")
    p.add_argument("--json", default="verify_report.json", help="where to write the JSON report")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    p.add_argument("--only", nargs="+", default=None, help="only these released builds (no manifest)")
    p.add_argument("--no-manifest", action="store_true", help="do not rewrite the manifest")
    p.add_argument("--reprove", action="store_true",
                   help="prove every build again, also where its proof key and IR hash equal a proved record's")
    p.add_argument("--strict", action="store_true",
                   help="warnings are errors (accesses in bounds only through a guard TileLang inserted)")
    p.add_argument("--version", action="version", version=f"verify {VERSION}")
    args = p.parse_args(argv)
    from .jobs import single_threaded
    single_threaded()
    if args.strict:
        os.environ["KDA_VERIFY_STRICT"] = "1"   # read by the jobs (worker processes inherit it)
    if os.environ.get("KDA_VERIFY_TIMEOUT_MS"):
        print("kda-verify: KDA_VERIFY_TIMEOUT_MS is no longer read: queries have a deterministic Z3 resource "
              "limit instead (KDA_VERIFY_RLIMIT)", file=sys.stderr)
    if args.check_manifest:
        return cmd_check_manifest(args)
    return cmd_verify(args)


if __name__ == "__main__":
    sys.exit(main())
