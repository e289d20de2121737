"""Builds every released host entry (generated C++ and both cubins) in parallel processes,
so that a device round's tests and benchmarks start warm. Needs nvcc, not a GPU."""
import concurrent.futures as cf
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _one(i):
    from host_codegen import get_entry, released_pairs
    k1, k2 = released_pairs()[i]
    t0 = time.perf_counter()
    get_entry(k1, k2, backend="cpp").load_kernels()
    return f"{k1.name} + {k2.name}: {time.perf_counter() - t0:.1f}s"


def main():
    from host_codegen import released_pairs
    n = len(released_pairs())
    t0 = time.perf_counter()
    failed = 0
    with cf.ProcessPoolExecutor(int(os.environ.get("JOBS", os.cpu_count() or 4))) as ex:
        for fut in cf.as_completed([ex.submit(_one, i) for i in range(n)]):
            try:
                fut.result()
            except Exception as e:
                failed += 1
                print("prewarm failed:", type(e).__name__, str(e)[:400], flush=True)
    print(f"prewarmed {n - failed}/{n} host entries in {time.perf_counter() - t0:.0f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
