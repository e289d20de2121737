"""What one torch tensor costs to cross TVM-FFI on this machine, and whether torch's C-level DLPack
exchange (``torch.Tensor.__dlpack_c_exchange_api__``: native in newer torch, else from the
torch-c-dlpack-ext wheel or tvm-ffi's JIT build of it) is in place. Without it every tensor goes
through Python's ``__dlpack__``. Prints one JSON line, then a short table.

    python bench/ffi_probe.py [--calls 20000]
"""
import argparse
import json
import statistics
import sys
import time


def median_us(fn, calls: int, reps: int = 9) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter_ns() - t) / calls / 1e3)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    import torch
    import tvm_ffi
    try:
        import torch_c_dlpack_ext  # noqa: F401
        ext = "imported"
    except Exception as e:  # noqa: BLE001
        ext = f"{type(e).__name__}: {e}"[:120]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    nop = tvm_ffi.get_global_func("testing.nop")
    ts = [torch.empty(64, 128, device=dev, dtype=torch.bfloat16) for _ in range(8)]
    row = dict(torch=torch.__version__, tvm_ffi=tvm_ffi.__version__, device=dev, torch_c_dlpack_ext=ext,
               exchange_api=hasattr(torch.Tensor, "__dlpack_c_exchange_api__"))
    for n in (0, 1, 8):
        a = ts[:n]
        row[f"nop_{n}_tensors_us"] = round(median_us(lambda: nop(*a), args.calls), 3)
    row["per_tensor_us"] = round((row["nop_8_tensors_us"] - row["nop_0_tensors_us"]) / 8, 3)
    print(json.dumps(row))
    for k, v in row.items():
        print(f"{k:22s} {v}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
