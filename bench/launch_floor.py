"""The host's floor for submitting GPU work: CPU time of single driver calls, timed inside C++.

Run on the H200:  python bench/launch_floor.py   (needs nvcc and a GPU)
Writes <out>/launch-floor.json (<out> = $OUT, else bench/results/) and prints a table.

An empty kernel's cuLaunchKernel (on the legacy default stream and on a non-blocking stream),
a 4-byte cuMemsetD32Async, cuEventRecord, and a two-node graph of empty kernels (its
cuGraphLaunch, and the cuGraphExecKernelNodeSetParams a per-call update needs). Each call is
timed alone with steady_clock; the stream is drained every 32 calls outside the timed region.
kda_prefill needs at least one submission per call, so these bound what any host entry can reach.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

KERNEL = r'''
extern "C" __global__ void empty_kernel(int x) {}
'''

SOURCE = r'''
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

namespace ffi = tvm::ffi;
typedef int CUresult;
typedef void* P;
struct NodeParams { P func; unsigned grid[3], block[3], smem; void** params; void** extra; P kern; P ctx; };

static int64_t now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename T> T sym(void* lib, const char* n) {
  T f = reinterpret_cast<T>(dlsym(lib, n));
  if (!f) TVM_FFI_THROW(RuntimeError) << "missing " << n;
  return f;
}

#define CK(x) do { CUresult r_ = (x); if (r_) TVM_FFI_THROW(RuntimeError) << #x << " = " << r_; } while (0)

ffi::Array<double> floor_us(ffi::String cubin_path, int64_t iters) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  auto cuInit = sym<CUresult (*)(unsigned)>(lib, "cuInit");
  auto cuDevicePrimaryCtxRetain = sym<CUresult (*)(P*, int)>(lib, "cuDevicePrimaryCtxRetain");
  auto cuCtxSetCurrent = sym<CUresult (*)(P)>(lib, "cuCtxSetCurrent");
  auto cuModuleLoadData = sym<CUresult (*)(P*, const void*)>(lib, "cuModuleLoadData");
  auto cuModuleGetFunction = sym<CUresult (*)(P*, P, const char*)>(lib, "cuModuleGetFunction");
  auto cuLaunchKernel = sym<CUresult (*)(P, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, P, void**, void**)>(lib, "cuLaunchKernel");
  auto cuStreamCreate = sym<CUresult (*)(P*, unsigned)>(lib, "cuStreamCreate");
  auto cuStreamSynchronize = sym<CUresult (*)(P)>(lib, "cuStreamSynchronize");
  auto cuMemAlloc = sym<CUresult (*)(uint64_t*, size_t)>(lib, "cuMemAlloc_v2");
  auto cuMemsetD32Async = sym<CUresult (*)(uint64_t, unsigned, size_t, P)>(lib, "cuMemsetD32Async");
  auto cuEventCreate = sym<CUresult (*)(P*, unsigned)>(lib, "cuEventCreate");
  auto cuEventRecord = sym<CUresult (*)(P, P)>(lib, "cuEventRecord");
  auto cuGraphCreate = sym<CUresult (*)(P*, unsigned)>(lib, "cuGraphCreate");
  auto cuGraphAddKernelNode = sym<CUresult (*)(P*, P, const P*, size_t, const NodeParams*)>(lib, "cuGraphAddKernelNode_v2");
  auto cuGraphInstantiate = sym<CUresult (*)(P*, P, unsigned long long)>(lib, "cuGraphInstantiateWithFlags");
  auto cuGraphExecKernelNodeSetParams = sym<CUresult (*)(P, P, const NodeParams*)>(lib, "cuGraphExecKernelNodeSetParams_v2");
  auto cuGraphLaunch = sym<CUresult (*)(P, P)>(lib, "cuGraphLaunch");

  CK(cuInit(0));
  P ctx; CK(cuDevicePrimaryCtxRetain(&ctx, 0)); CK(cuCtxSetCurrent(ctx));
  std::ifstream f(std::string(cubin_path), std::ios::binary);
  std::string bin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  P mod, fn; CK(cuModuleLoadData(&mod, bin.data())); CK(cuModuleGetFunction(&fn, mod, "empty_kernel"));
  P nb; CK(cuStreamCreate(&nb, 1 /*CU_STREAM_NON_BLOCKING*/));
  uint64_t buf; CK(cuMemAlloc(&buf, 4));
  P ev; CK(cuEventCreate(&ev, 2 /*CU_EVENT_DISABLE_TIMING*/));
  int x = 0; void* args[] = {&x};
  NodeParams np{fn, {1, 1, 1}, {32, 1, 1}, 0, args, nullptr, nullptr, nullptr};
  P g, n0, n1, exec;
  CK(cuGraphCreate(&g, 0)); CK(cuGraphAddKernelNode(&n0, g, nullptr, 0, &np)); CK(cuGraphAddKernelNode(&n1, g, &n0, 1, &np));
  CK(cuGraphInstantiate(&exec, g, 0));

  auto median = [&](auto op, P stream) {
    std::vector<int64_t> ts;
    for (int64_t i = 0; i < iters + 100; ++i) {
      int64_t t0 = now(); op(); int64_t t1 = now();
      if (i >= 100) ts.push_back(t1 - t0);
      if (i % 32 == 31) CK(cuStreamSynchronize(stream));
    }
    CK(cuStreamSynchronize(stream));
    std::nth_element(ts.begin(), ts.begin() + ts.size() / 2, ts.end());
    return ts[ts.size() / 2] / 1e3;
  };
  P legacy = nullptr;
  std::vector<double> r;
  r.push_back(median([&] { CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, legacy, args, nullptr)); }, legacy));
  r.push_back(median([&] { CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nb, args, nullptr)); }, nb));
  r.push_back(median([&] { CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, legacy, args, nullptr));
                           CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, legacy, args, nullptr)); }, legacy));
  r.push_back(median([&] { CK(cuMemsetD32Async(buf, 0, 1, legacy)); }, legacy));
  r.push_back(median([&] { CK(cuEventRecord(ev, legacy)); }, legacy));
  r.push_back(median([&] { CK(cuGraphLaunch(exec, legacy)); }, legacy));
  r.push_back(median([&] { CK(cuGraphExecKernelNodeSetParams(exec, n0, &np)); CK(cuGraphExecKernelNodeSetParams(exec, n1, &np)); }, legacy));
  r.push_back(median([&] { CK(cuGraphExecKernelNodeSetParams(exec, n0, &np)); CK(cuGraphExecKernelNodeSetParams(exec, n1, &np));
                           CK(cuGraphLaunch(exec, legacy)); }, legacy));
  r.push_back(median([&] { CK(cuGraphLaunch(exec, nb)); }, nb));
  return ffi::Array<double>(r.begin(), r.end());
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(floor_us, floor_us);
'''

NAMES = ["cuLaunchKernel, empty kernel, legacy default stream",
         "cuLaunchKernel, empty kernel, non-blocking stream",
         "two cuLaunchKernel, empty kernels, legacy default stream",
         "cuMemsetD32Async, 4 bytes, legacy default stream",
         "cuEventRecord, legacy default stream",
         "cuGraphLaunch, two-node graph of empty kernels, legacy default stream",
         "cuGraphExecKernelNodeSetParams x2",
         "cuGraphExecKernelNodeSetParams x2 + cuGraphLaunch, legacy default stream",
         "cuGraphLaunch, two-node graph, non-blocking stream"]


def empty_cubin(d: Path) -> Path:
    """KERNEL compiled for sm_90a into d/k.cubin (the empty kernel the floors launch)."""
    (d / "k.cu").write_text(KERNEL)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90a", "-o", str(d / "k.cubin"), str(d / "k.cu")], check=True)
    return d / "k.cubin"


def main():
    import torch
    import tvm_ffi
    import tvm_ffi.cpp
    from results_io import write_rows
    torch.zeros(1, device="cuda")  # the primary context, as in a torch process
    d = Path(tempfile.mkdtemp(prefix="launch_floor_"))
    empty_cubin(d)
    (d / "floor.cc").write_text(SOURCE)
    so = tvm_ffi.cpp.build("launch_floor", cpp_files=[str(d / "floor.cc")], build_directory=str(d / "build"),
                           extra_cflags=["-O2", "-std=c++17"], extra_ldflags=["-ldl"])
    fn = tvm_ffi.load_module(so)["floor_us"]
    rows = [{"op": n, "median_us": round(float(v), 3)} for n, v in zip(NAMES, fn(str(d / "k.cubin"), 3000))]
    write_rows("launch-floor.json", rows, device_key="gpu")
    for r in rows:
        print(f"{r['median_us']:8.2f} us  {r['op']}")


if __name__ == "__main__":
    sys.exit(main())
