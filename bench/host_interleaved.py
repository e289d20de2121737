"""Host time of kda_prefill(out=o) beside its floor, interleaved so that a slow host phase shows in
both (issue 11; session 22, prepared, not run).

Run on the H200:  python bench/host_interleaved.py [--blocks 40] [--calls 200] [--decode]

--decode times kda_decode instead (issue 12: one decode step at N = 1, H32, fp32 pool of 2 rows,
fresh o; with --out, the caller's o) beside the same floor, and writes
host-interleaved-decode[-out].json.

The floor is what any host entry of this call pays: one Python call into a TVM-FFI function that
takes the same eight tensors (q, k, v, g, beta, A_log, dt_bias, o) and launches a two-node graph
of empty kernels on the caller's current stream. Blocks of `calls` calls of each alternate (ours,
floor, ours, ...); each call is timed alone with perf_counter_ns, the queue drained every 32 calls
outside the timed region (bench/host_overhead.py's timer). Reported: per kind the median of the
block medians, and the median over block pairs of ours minus floor (what the API and the entry
add above the floor, the part this code controls). Writes host-interleaved.json to $OUT (else
bench/results/).
"""
import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SOURCE = r'''
#include <dlfcn.h>
#include <fstream>
#include <string>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/string.h>

namespace ffi = tvm::ffi;
typedef int CUresult;
typedef void* P;
struct NodeParams { P func; unsigned grid[3], block[3], smem; void** params; void** extra; P kern; P ctx; };
#define CK(x) do { CUresult r_ = (x); if (r_) TVM_FFI_THROW(RuntimeError) << #x << " = " << r_; } while (0)

static CUresult (*cuGraphLaunch)(P, P) = nullptr;
static P g_exec = nullptr;
static int g_x = 0;
static void* g_args[] = {&g_x};

void setup(ffi::String cubin_path) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  auto get = [&](const char* n) { void* f = dlsym(lib, n); if (!f) TVM_FFI_THROW(RuntimeError) << "missing " << n; return f; };
  auto cuCtxGetCurrent = reinterpret_cast<CUresult (*)(P*)>(get("cuCtxGetCurrent"));
  auto cuModuleLoadData = reinterpret_cast<CUresult (*)(P*, const void*)>(get("cuModuleLoadData"));
  auto cuModuleGetFunction = reinterpret_cast<CUresult (*)(P*, P, const char*)>(get("cuModuleGetFunction"));
  auto cuGraphCreate = reinterpret_cast<CUresult (*)(P*, unsigned)>(get("cuGraphCreate"));
  auto cuGraphAddKernelNode = reinterpret_cast<CUresult (*)(P*, P, const P*, size_t, const NodeParams*)>(get("cuGraphAddKernelNode_v2"));
  auto cuGraphInstantiate = reinterpret_cast<CUresult (*)(P*, P, unsigned long long)>(get("cuGraphInstantiateWithFlags"));
  cuGraphLaunch = reinterpret_cast<CUresult (*)(P, P)>(get("cuGraphLaunch"));
  P ctx; CK(cuCtxGetCurrent(&ctx));
  if (!ctx) TVM_FFI_THROW(RuntimeError) << "no current CUDA context (touch the device from torch first)";
  std::ifstream f(std::string(cubin_path), std::ios::binary);
  std::string bin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  P mod, fn; CK(cuModuleLoadData(&mod, bin.data())); CK(cuModuleGetFunction(&fn, mod, "empty_kernel"));
  NodeParams np{fn, {1, 1, 1}, {32, 1, 1}, 0, g_args, nullptr, nullptr, nullptr};
  P g, n0, n1;
  CK(cuGraphCreate(&g, 0)); CK(cuGraphAddKernelNode(&n0, g, nullptr, 0, &np)); CK(cuGraphAddKernelNode(&n1, g, &n0, 1, &np));
  CK(cuGraphInstantiate(&g_exec, g, 0));
}

// The floor of one call: the tensors cross TVM-FFI, one graph launch on the caller's stream.
void floor_call(ffi::TensorView q, ffi::TensorView k, ffi::TensorView v, ffi::TensorView g, ffi::TensorView beta,
                ffi::TensorView A_log, ffi::TensorView dt_bias, ffi::TensorView o) {
  P stream = TVMFFIEnvGetStream(kDLCUDA, q.device().device_id);
  CK(cuGraphLaunch(g_exec, stream));
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(setup, setup);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(floor_call, floor_call);
'''


def summarize(ours, floor):
    """Block medians of the two kinds, interleaved in pairs: medians of each kind and the median of
    their differences pair by pair (us)."""
    assert len(ours) == len(floor) and ours
    return dict(ours_us=round(statistics.median(ours), 3), floor_us=round(statistics.median(floor), 3),
                above_floor_us=round(statistics.median(a - b for a, b in zip(ours, floor)), 3),
                ours_blocks_us=[round(x, 3) for x in ours], floor_blocks_us=[round(x, 3) for x in floor])


def build_floor():
    import tvm_ffi
    import tvm_ffi.cpp
    from launch_floor import empty_cubin
    d = Path(tempfile.mkdtemp(prefix="host_interleaved_"))
    cubin = empty_cubin(d)
    (d / "floor.cc").write_text(SOURCE)
    so = tvm_ffi.cpp.build("host_interleaved_floor", cpp_files=[str(d / "floor.cc")],
                           build_directory=str(d / "build"), extra_cflags=["-O2", "-std=c++17"],
                           extra_ldflags=["-ldl"])
    mod = tvm_ffi.load_module(so)
    mod["setup"](str(cubin))
    return mod["floor_call"]


def main():
    import torch
    from results_io import results_dir
    from host_overhead import time_calls
    from kda_kernels.reference import random_inputs
    from kda_tile import kda_prefill
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--decode", action="store_true")
    ap.add_argument("--out", action="store_true", help="with --decode: kda_decode(..., out=o)")
    args = ap.parse_args()
    torch.zeros(1, device="cuda")   # the floor's setup needs a current CUDA context
    floor_call = build_floor()
    if args.decode:
        import kda_tile
        gen = torch.Generator(device="cuda").manual_seed(3)
        rn = lambda *sh: torch.randn(*sh, generator=gen, device="cuda").to(torch.bfloat16)  # noqa: E731
        a = [rn(1, 32, 128) for _ in range(4)] + [rn(1, 32)]
        kw = dict(A_log=torch.rand(32, device="cuda", generator=gen) * 2.7,
                  dt_bias=torch.randn(32, 128, device="cuda", generator=gen) * 0.5,
                  state_pool=torch.randn(2, 32, 128, 128, device="cuda", generator=gen) * 0.5,
                  state_indices=torch.tensor([1], device="cuda"))
        o = torch.empty_like(a[2])
        if args.out:
            ours = lambda: kda_tile.kda_decode(*a, **kw, out=o)  # noqa: E731
        else:
            ours = lambda: kda_tile.kda_decode(*a, **kw)  # noqa: E731
        floor = lambda: floor_call(*a, kw["A_log"], kw["dt_bias"], kw["state_pool"])  # noqa: E731
        call = "kda_decode" + ("(out=o)" if args.out else "") + ", N=1, H32, fp32 pool"
        name = "host-interleaved-decode" + ("-out" if args.out else "") + ".json"
        ours()
        torch.cuda.synchronize()
    else:
        x = random_inputs(1, 64, 1, device="cuda", seed=2)
        a = [x[n] for n in ("q", "k", "v", "g", "beta")]
        o = torch.empty_like(x["v"])
        ours = lambda: kda_prefill(*a, A_log=x["A_log"], dt_bias=x["dt_bias"], out=o)  # noqa: E731
        floor = lambda: floor_call(*a, x["A_log"], x["dt_bias"], o)  # noqa: E731
        call, name = "kda_prefill(out=o), T=64, H=1", "host-interleaved.json"
        ref = kda_prefill(*a, A_log=x["A_log"], dt_bias=x["dt_bias"])[0]
        o.fill_(float("nan"))
        ours()
        torch.cuda.synchronize()
        assert torch.equal(o, ref), "out= disagrees with the fresh-output call"
    ob, fb = [], []
    with torch.inference_mode():
        for _ in range(args.blocks):
            ob.append(time_calls(ours, args.calls, 20)["median_us"])
            fb.append(time_calls(floor, args.calls, 20)["median_us"])
    r = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, call=call,
             blocks=args.blocks, calls=args.calls, **summarize(ob, fb))
    out = results_dir()
    (out / name).write_text(json.dumps(r, indent=1))
    print(f"{call:30s} {r['ours_us']:7.2f} us (median of {args.blocks} block medians)")
    print(f"{'floor (FFI, 8 tensors, graph)':30s} {r['floor_us']:7.2f} us")
    print(f"{'above the floor':30s} {r['above_floor_us']:7.2f} us (median of the pairs' differences)")


if __name__ == "__main__":
    sys.exit(main())
