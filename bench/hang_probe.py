"""Does one kda_prefill call on N packed sequences of L tokens (H heads) finish? Prints a
timestamp per phase; the process exits with a Python stack dump after HANG_S seconds (10).

    python bench/hang_probe.py N L H [flags]
      flags: extra entry flags (256 skips K1, 512 skips K2; plain launches)
      HANG_FIXED=1: a fixed-length batch of N rows instead (no cu_seqlens)
      HANG_NOSTATE=1: no initial state, no final state
"""
import faulthandler
import os
import sys
import time

import torch

faulthandler.dump_traceback_later(float(os.environ.get("HANG_S", "10")), exit=True)
N, L, H = map(int, sys.argv[1:4])
extra = int(sys.argv[4]) if len(sys.argv) > 4 else 0
fixed = os.environ.get("HANG_FIXED") == "1"
state = os.environ.get("HANG_NOSTATE") != "1"
t0 = time.perf_counter()


def mark(what):
    print(f"{time.perf_counter() - t0:8.3f}s {what}", flush=True)


from kda_tile import api, kda_prefill  # noqa: E402
from kda_kernels.reference import random_inputs  # noqa: E402

T = N * L
if fixed:
    x = random_inputs(N, L, H, device="cuda", state_dtype=torch.float32 if state else None)
else:
    x = random_inputs(1, T, H, device="cuda", cu_seqlens=torch.arange(0, T + 1, L),
                      state_dtype=torch.float32 if state else None)
torch.cuda.synchronize()
mark("inputs")
args = (x["q"], x["k"], x["v"], x["g"], x["beta"])
if extra:
    raw, lf = api._raw_for(x["initial_state"], state, x["cu_seqlens"], False)
    o, ht = raw(*args, x["A_log"], x["dt_bias"], x["cu_seqlens"], x["initial_state"], -5.0, None, None, None,
                (lf & ~128) | extra)
else:
    o, ht = kda_prefill(*args, A_log=x["A_log"], dt_bias=x["dt_bias"], cu_seqlens=x["cu_seqlens"],
                        initial_state=x["initial_state"], output_final_state=state)
mark("call returned")
torch.cuda.synchronize()
mark("synchronized")
print("RESULT ok", N, L, H, extra, "fixed" if fixed else "varlen", "state" if state else "nostate", flush=True)
