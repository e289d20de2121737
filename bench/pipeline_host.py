"""Host time of the slab pipeline's loop (kda_tile.slabs.run_pipelined) on the CPU: the generated
C++ entry in its dry-run mode (checks, workspace, argument packing; no driver calls) stands in for
each slab's two launches, and minimal stand-ins for torch.cuda's streams and events record
nothing, so what is timed is the loop's Python and the entry's host work a slab. The real
stream switches and events on a GPU machine cost more (bench/pipeline_probe.py's timeline gives
the whole on the device).

    python bench/pipeline_host.py [T H SLABS]     # default 32768 32 8

Prints the median us a slab of the whole loop and of the entry calls alone.
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import host_codegen as hc  # noqa: E402
from kda_tile import api, slabs  # noqa: E402


class _Null:
    def __init__(self, *a, **k):
        pass

    def wait_stream(self, other):
        pass

    def wait_event(self, ev):
        pass

    def record(self, stream=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main():
    T, H, n = (int(x) for x in (sys.argv[1:4] if len(sys.argv) > 3 else (32768, 32, 8)))
    tokens = -(-T // n)
    null = _Null()
    torch.cuda.current_stream = lambda device=None: null
    torch.cuda.stream = lambda s: null
    torch.cuda.set_stream = lambda s: None
    torch.cuda.Event = _Null
    slabs._streams = lambda device: (null, null)
    _, chunk = api._one_sequence_plan(T, H)
    cu = torch.tensor([0, T])
    entry_s = []
    raws = {}

    def raw_for(h0, want):
        # as api._pipelined's: a dispatch key, then the cached raw entry
        key = api._dispatch_key(cu, h0, want, False, False, chunk, 1)
        if key not in raws:
            raws[key] = make_raw(h0, want)
        return raws[key]

    def make_raw(h0, want):
        e = hc.get_entry(*api._prepare(h0, want, cu, False, False, chunk), backend="cpp")

        def raw(*a):
            *args, flags, ws = a
            t0 = time.perf_counter()
            e._entry(*args, flags | 4, ws)
            entry_s.append(time.perf_counter() - t0)
        return raw
    z = lambda *s: torch.zeros(*s, dtype=torch.bfloat16)  # noqa: E731
    q, v = z(1, T, H, 128), z(1, T, H, 128)
    h0 = torch.zeros(1, H, 128, 128)
    args = (q, q, v, v, z(1, T, H))
    kw = dict(A_log=torch.zeros(H), dt_bias=torch.zeros(H, 128), lower_bound=-5.0, scale=None, initial_state=h0,
              output_final_state=True, cu_seqlens=cu, out=None, final_state_out=None)
    whole, ent = [], []
    for _ in range(30):
        entry_s.clear()
        t0 = time.perf_counter()
        slabs.run_pipelined(raw_for, tokens, chunk, *args, **kw)
        whole.append((time.perf_counter() - t0) / n)
        ent.append(sum(entry_s) / n)
    w, e = statistics.median(whole[5:]) * 1e6, statistics.median(ent[5:]) * 1e6
    print(f"H{H} 1x{T}, {n} slabs of {tokens}: {w:.1f} us a slab in the loop, {e:.1f} of them in the two entry "
          f"calls (dry run), {w - e:.1f} in the rest")


if __name__ == "__main__":
    main()
