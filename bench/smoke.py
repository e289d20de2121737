"""Quick GPU smoke test: a few shapes and state modes against the float64 reference,
with poisoned outputs. Prints one line per case."""
import os
import sys
import time

import torch

os.environ["KDA_TILE_POISON"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import test_gpu_correctness as M  # noqa: E402

CASES = [("fixed", 1, 17, 1, None), ("fixed", 1, 64, 4, None), ("fixed", 1, 1000, 8, None), ("fixed", 2, 97, 4, None),
         ("varlen", 1, None, 4, [4, 8, 12]), ("varlen", 1, None, 4, [17, 33, 65]), ("varlen", 1, None, 2, [1, 16, 300])]
fails = 0
for kind, B, T, H, lens in CASES:
    cu = None
    if lens:
        cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64, device="cuda")
        T = sum(lens)
    inp = M._inputs(B, T, H, cu=cu, seed=T + H)
    t0 = time.perf_counter()
    try:
        M._run_modes(f"{kind} B={B} T={T} H={H} {lens or ''}", inp, cu)
        status = "ok"
    except AssertionError as e:
        status, fails = "FAIL " + str(e).replace("\n", " | ")[:600], fails + 1
    except Exception as e:
        status, fails = f"ERROR {type(e).__name__}: {str(e)[:600]}", fails + 1
    print(f"{kind} B={B} T={T} H={H} {lens or ''}: {status} ({time.perf_counter() - t0:.1f}s)", flush=True)
for r in M.RESULTS:
    print(f"  {r['case']:40s} {r['mode']:11s} err_o={r['err_o']:.2e} err_ht={r['err_ht']} nan={r['unwritten_or_nan']}")
sys.exit(1 if fails else 0)
