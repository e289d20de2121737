"""Renders an EntrySpec into the C++ source of one TVM-FFI host entry (stage B).

The argument order is the entry's contract (spec.Contract: args, scalars, outputs, then flags);
for prefill:

Exports (TVM-FFI packed functions):
  entry(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale
        [, o, final_state, flags]) -> (o or None if the caller passed o, final_state or None)
      validates, allocates workspace and outputs, encodes the TMA descriptors, launches K1
      then K2 on the caller's current stream. flags: bit 0 full validation (cu_seqlens
      contents); bit 2 dry run on CPU tensors (no driver calls); bit 3 return o alone;
      bit 4 record phase timestamps; bit 5 skip the launches; bit 6 fresh workspace (no cache);
      bits 8, 9 skip K1, and K2 with any later kernel (one kernel alone: kda_tile.slabs'
      pipeline, diagnostics; a call that skips K1 leaves the workspace unpoisoned, it reads an
      earlier K1's); bit 10
      rewrite the graph nodes' parameters even when unchanged (diagnostics);
      bit 7 submit the kernels as one graph launch instead of kernel launches (not while capturing).
      The workspace is kept across calls per (device, stream), except while capturing a graph.
      An argument after flags, a contiguous 1-D uint8 tensor on the call's device, is the workspace
      instead (at least the call's workspace bytes + 256; checked): how the slab pipeline of
      kda_tile.slabs runs one slab's K1 and K2 on two streams.
  validate_only(<same 11>, o, final_state, flags, expect_device_type) -> [shape vars..., lower_bound, scale]
  load_cubins(k1_path, k2_path)
  bench_validate(<same 11>, iters) -> ns per validation, timed inside C++.
  last_profile() -> steady-clock ns at each phase boundary of this thread's last flagged call
  release_workspaces() -> bytes of cached workspace dropped (freed in stream order by the allocator)
The CUDA driver is opened with dlopen("libcuda.so.1") at the first launch, so the module
builds and validates on a machine without a GPU.

A one-kernel entry (decode) takes (q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices,
lower_bound, scale[, o, flags]), returns o (None when the caller passed o), launches its kernel
with one cuLaunchKernel, or with flag bit 7 as a one-node graph (bits 8, 9 do nothing), and
allocates nothing but o: it has no workspace. load_cubins takes one path per kernel.
"""
from __future__ import annotations

from . import expr as X
from . import rules as R
from .spec import DTYPE_BYTES, Contract, EntrySpec


def arg_index(contract: Contract) -> dict:
    return {n: i for i, n in enumerate(contract.positional)}


# DLDataType (code, bits) per dtype name; codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
DL_DTYPE = {"bfloat16": (4, 16), "float16": (2, 16), "float32": (2, 32), "float64": (2, 64),
            "int32": (0, 32), "int64": (0, 64), "int8": (0, 8), "uint8": (1, 8), "bool": (6, 8)}

WS_ALIGN = 256


def _v(name):
    return f"v_{name}"


def _s(name):
    return f"s_{name}"


def _c(e):
    return X.to_c(e, _v)


def _lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


_PRELUDE = r'''
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

namespace ffi = tvm::ffi;

namespace {

constexpr int kNumKernels = @NUM_KERNELS@;
// what a failing driver call names, per kernel
struct KernelWhat { const char* add; const char* set; const char* launch; };
const KernelWhat kWhat[kNumKernels] = {@KERNEL_WHAT@};

struct ArgError {
  const char* kind;
  std::string msg;
};

[[noreturn]] void fail(const char* kind, std::string msg) { throw ArgError{kind, std::move(msg)}; }

inline int64_t kda_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t kda_floormod(int64_t a, int64_t b) { return a - kda_floordiv(a, b) * b; }

std::string S(int64_t x) { return std::to_string(x); }

// Python's repr of a float: shortest round-trip digits, ".0" on integral values.
std::string F(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), x);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

DLTensor* as_dl(const TVMFFIAny& a) {
  if (a.type_index == kTVMFFIDLTensorPtr) return static_cast<DLTensor*>(a.v_ptr);
  if (a.type_index == kTVMFFITensor) return TVMFFITensorGetDLTensorPtr(a.v_obj);
  return nullptr;
}
bool is_none(const TVMFFIAny& a) { return a.type_index == kTVMFFINone; }

std::string type_name(const TVMFFIAny& a) {
  switch (a.type_index) {
    case kTVMFFINone: return "NoneType";
    case kTVMFFIInt: return "int";
    case kTVMFFIBool: return "bool";
    case kTVMFFIFloat: return "float";
    case kTVMFFIDLTensorPtr:
    case kTVMFFITensor: return "Tensor";
    case kTVMFFIRawStr:
    case kTVMFFISmallStr:
    case kTVMFFIStr: return "str";
    default: {
      const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(a.type_index);
      if (info != nullptr) return std::string(info->type_key.data, info->type_key.size);
      return "type index " + std::to_string(a.type_index);
    }
  }
}

std::string dtype_name(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLBfloat && t.bits == 16) return "bfloat16";
    if (t.code == kDLFloat) return "float" + std::to_string(t.bits);
    if (t.code == kDLInt) return "int" + std::to_string(t.bits);
    if (t.code == kDLUInt) return "uint" + std::to_string(t.bits);
    if (t.code == kDLBool) return "bool";
  }
  return "dtype(code=" + std::to_string(t.code) + ", bits=" + std::to_string(t.bits) +
         ", lanes=" + std::to_string(t.lanes) + ")";
}

std::string device_str(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(d.device_id);
    default: return "device_type " + std::to_string(d.device_type) + ":" + std::to_string(d.device_id);
  }
}
std::string device_type_str(int t) {
  switch (t) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    default: return "device_type " + std::to_string(t);
  }
}
bool same_device(DLDevice a, DLDevice b) {
  if (a.device_type != b.device_type) return false;
  return a.device_type == kDLCPU || a.device_id == b.device_id;
}

void* data_ptr(const DLTensor* t) { return static_cast<char*>(t->data) + t->byte_offset; }

int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

bool overlap(const DLTensor* a, const DLTensor* b) {
  int64_t na = numel(a), nb = numel(b);
  if (na == 0 || nb == 0) return false;
  uintptr_t a0 = reinterpret_cast<uintptr_t>(data_ptr(a));
  uintptr_t b0 = reinterpret_cast<uintptr_t>(data_ptr(b));
  uintptr_t a1 = a0 + na * ((a->dtype.bits * a->dtype.lanes + 7) / 8);
  uintptr_t b1 = b0 + nb * ((b->dtype.bits * b->dtype.lanes + 7) / 8);
  return a0 < b1 && b0 < a1;
}

double scalar_arg(const TVMFFIAny& a, const char* name) {
  if (a.type_index == kTVMFFIFloat) return a.v_float64;
  if (a.type_index == kTVMFFIInt) return static_cast<double>(a.v_int64);
  fail("TypeError", std::string(name) + ": expected a float, got " + type_name(a));
}

// ---- CUDA driver API, opened at run time -------------------------------------------------
typedef int CUresult;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUcontext;
typedef int CUdevice;
struct alignas(64) CUtensorMap {
  uint64_t opaque[16];
};
typedef void* CUgraph;
typedef void* CUgraphNode;
typedef void* CUgraphExec;
struct KernelNodeParams {  // CUDA_KERNEL_NODE_PARAMS_v2
  CUfunction func;
  unsigned grid[3];
  unsigned block[3];
  unsigned smem;
  void** params;
  void** extra;
  void* kern;
  CUcontext ctx;
};

struct Driver {
  bool ok = false;
  std::string error;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, int, uint32_t, void*, const uint64_t*,
                                     const uint64_t*, const uint32_t*, const uint32_t*, int, int,
                                     int, int);
  CUresult (*cuMemcpyDtoHAsync)(void*, uint64_t, size_t, CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemsetD16Async)(uint64_t, unsigned short, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(uint64_t, unsigned int, size_t, CUstream);
  CUresult (*cuStreamIsCapturing)(CUstream, int*);
  CUresult (*cuGraphCreate)(CUgraph*, unsigned);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const KernelNodeParams*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const KernelNodeParams*);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
};

template <typename T>
bool sym(void* lib, const char* name, T* out, std::string* err) {
  *out = reinterpret_cast<T>(dlsym(lib, name));
  if (*out == nullptr) *err = std::string("libcuda.so.1 lacks ") + name;
  return *out != nullptr;
}

Driver* driver() {
  static Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      d.error = std::string("cannot open libcuda.so.1: ") + dlerror();
      return d;
    }
    d.ok = sym(lib, "cuInit", &d.cuInit, &d.error) && sym(lib, "cuGetErrorString", &d.cuGetErrorString, &d.error) &&
           sym(lib, "cuDeviceGet", &d.cuDeviceGet, &d.error) &&
           sym(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, &d.error) &&
           sym(lib, "cuCtxGetCurrent", &d.cuCtxGetCurrent, &d.error) &&
           sym(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent, &d.error) &&
           sym(lib, "cuModuleLoadData", &d.cuModuleLoadData, &d.error) &&
           sym(lib, "cuModuleGetFunction", &d.cuModuleGetFunction, &d.error) &&
           sym(lib, "cuFuncSetAttribute", &d.cuFuncSetAttribute, &d.error) &&
           sym(lib, "cuLaunchKernel", &d.cuLaunchKernel, &d.error) &&
           sym(lib, "cuTensorMapEncodeTiled", &d.cuTensorMapEncodeTiled, &d.error) &&
           sym(lib, "cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync, &d.error) &&
           sym(lib, "cuStreamSynchronize", &d.cuStreamSynchronize, &d.error) &&
           sym(lib, "cuMemsetD16Async", &d.cuMemsetD16Async, &d.error) &&
           sym(lib, "cuMemsetD32Async", &d.cuMemsetD32Async, &d.error) &&
           sym(lib, "cuStreamIsCapturing", &d.cuStreamIsCapturing, &d.error) &&
           sym(lib, "cuGraphCreate", &d.cuGraphCreate, &d.error) &&
           sym(lib, "cuGraphAddKernelNode_v2", &d.cuGraphAddKernelNode, &d.error) &&
           sym(lib, "cuGraphInstantiateWithFlags", &d.cuGraphInstantiateWithFlags, &d.error) &&
           sym(lib, "cuGraphExecKernelNodeSetParams_v2", &d.cuGraphExecKernelNodeSetParams, &d.error) &&
           sym(lib, "cuGraphLaunch", &d.cuGraphLaunch, &d.error);
    if (d.ok && d.cuInit(0) != 0) {
      d.ok = false;
      d.error = "cuInit failed";
    }
    return d;
  }();
  if (!d.ok) fail("RuntimeError", "CUDA driver unavailable: " + d.error);
  return &d;
}

void check_cu(CUresult r, const char* what) {
  if (r == 0) return;
  const char* s = nullptr;
  driver()->cuGetErrorString(r, &s);
  fail("RuntimeError", std::string(what) + " failed: " + (s ? s : "unknown CUDA error") + " (" + std::to_string(r) + ")");
}

struct Kernel {
  CUfunction fn = nullptr;
  int smem_set = 48 * 1024;
};

constexpr int kMaxDevices = 64;
std::string g_cubin[kNumKernels];
std::mutex g_mu;
struct DeviceKernels {
  std::atomic<bool> ready{false};
  CUcontext ctx = nullptr;
  Kernel k[kNumKernels];
};
DeviceKernels g_dev[kMaxDevices];

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("RuntimeError", "cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Makes the primary context of `dev` current (returns the previous one) and loads the kernels once.
DeviceKernels* kernels_for(int dev, CUcontext* prev, const char* const* symbols) {
  Driver* d = driver();
  if (dev < 0 || dev >= kMaxDevices) fail("RuntimeError", "device id out of range");
  DeviceKernels* dk = &g_dev[dev];
  if (!dk->ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!dk->ready.load(std::memory_order_relaxed)) {
      for (int i = 0; i < kNumKernels; ++i)
        if (g_cubin[i].empty()) fail("RuntimeError", "kernel cubins not loaded (call load_cubins)");
      CUdevice cd;
      check_cu(d->cuDeviceGet(&cd, dev), "cuDeviceGet");
      check_cu(d->cuDevicePrimaryCtxRetain(&dk->ctx, cd), "cuDevicePrimaryCtxRetain");
      CUcontext old = nullptr;
      check_cu(d->cuCtxGetCurrent(&old), "cuCtxGetCurrent");
      check_cu(d->cuCtxSetCurrent(dk->ctx), "cuCtxSetCurrent");
      for (int i = 0; i < kNumKernels; ++i) {
        CUmodule m;
        check_cu(d->cuModuleLoadData(&m, g_cubin[i].data()), "cuModuleLoadData");
        check_cu(d->cuModuleGetFunction(&dk->k[i].fn, m, symbols[i]), "cuModuleGetFunction");
      }
      if (old != dk->ctx) d->cuCtxSetCurrent(old);
      dk->ready.store(true, std::memory_order_release);
    }
  }
  check_cu(d->cuCtxGetCurrent(prev), "cuCtxGetCurrent");
  if (*prev != dk->ctx) check_cu(d->cuCtxSetCurrent(dk->ctx), "cuCtxSetCurrent");
  return dk;
}

void check_grid(int64_t gx, int64_t gy, int64_t gz) {
  if (gx < 1 || gy < 1 || gz < 1 || gx > 2147483647LL || gy > 65535 || gz > 65535)
    fail("ValueError", "shapes: launch grid (" + S(gx) + ", " + S(gy) + ", " + S(gz) + ") outside the CUDA limits");
}

// Phase timestamps of the last entry call on this thread (flags bit 4), for bench/host_overhead.py.
struct Profile {
  int n = 0;
  int64_t t[24];
};
thread_local Profile g_prof;
inline void mark(bool on) {
  if (on && g_prof.n < 24)
    g_prof.t[g_prof.n++] = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Launch {
  Kernel* k;
  int64_t grid[3], block[3], smem;
  void** args;
  const uint16_t* sizes;   // the byte size of each argument
  int nargs;
};

void ensure_smem(Kernel& k, int64_t smem) {
  if (smem > k.smem_set) {
    check_cu(driver()->cuFuncSetAttribute(k.fn, 8 /*MAX_DYNAMIC_SHARED_SIZE_BYTES*/, static_cast<int>(smem)),
             "cuFuncSetAttribute");
    k.smem_set = static_cast<int>(smem);
  }
}

KernelNodeParams node_params(const Launch& l) {
  KernelNodeParams p{};
  p.func = l.k->fn;
  for (int i = 0; i < 3; ++i) {
    p.grid[i] = static_cast<unsigned>(l.grid[i]);
    p.block[i] = static_cast<unsigned>(l.block[i]);
  }
  p.smem = static_cast<unsigned>(l.smem);
  p.params = l.args;
  return p;
}

// Graph launch mode: one graph of the entry's kernels in a chain (one node, or K1 -> K2) per
// thread and device, instantiated at the first call, and submitted with one cuGraphLaunch, which
// costs less host time than one cuLaunchKernel. A node's parameters are rewritten (copied by the
// driver) only when they differ from the last ones it was given, byte for byte: a call on the same
// buffers and shapes as the one before (the steady state of a serving loop) submits the graph
// alone. Flags bit 10 rewrites them always (diagnostics). Launches of one executable graph run in
// submission order.
struct KernelGraph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUgraphNode node[kNumKernels] = {};
  std::string last[kNumKernels];   // each node's launch bytes as last set
};
thread_local KernelGraph* g_graph[kMaxDevices] = {};

// Everything a node's launch depends on, as bytes: function, grid, block, shared memory and each
// argument's value.
void launch_bytes(const Launch& l, std::string* out) {
  out->clear();
  const void* fn = l.k->fn;
  out->append(reinterpret_cast<const char*>(&fn), sizeof(fn));
  out->append(reinterpret_cast<const char*>(l.grid), sizeof(l.grid));
  out->append(reinterpret_cast<const char*>(l.block), sizeof(l.block));
  out->append(reinterpret_cast<const char*>(&l.smem), sizeof(l.smem));
  for (int j = 0; j < l.nargs; ++j) out->append(static_cast<const char*>(l.args[j]), l.sizes[j]);
}

void launch_graph(const Launch* L, int dev, CUstream stream, bool always_set) {
  Driver* d = driver();
  KernelNodeParams p[kNumKernels];
  for (int i = 0; i < kNumKernels; ++i) p[i] = node_params(L[i]);
  KernelGraph* kg = g_graph[dev];
  thread_local std::string now;
  if (kg == nullptr) {
    KernelGraph* n = new KernelGraph();
    check_cu(d->cuGraphCreate(&n->graph, 0), "cuGraphCreate");
    for (int i = 0; i < kNumKernels; ++i) {
      check_cu(d->cuGraphAddKernelNode(&n->node[i], n->graph, i ? &n->node[i - 1] : nullptr, i ? 1 : 0, &p[i]),
               kWhat[i].add);
      launch_bytes(L[i], &n->last[i]);
    }
    check_cu(d->cuGraphInstantiateWithFlags(&n->exec, n->graph, 0), "cuGraphInstantiateWithFlags");
    kg = g_graph[dev] = n;
  } else {
    for (int i = 0; i < kNumKernels; ++i) {
      launch_bytes(L[i], &now);
      if (always_set || now != kg->last[i]) {
        // forget the old bytes first: a failed rewrite leaves the node's parameters unknown
        kg->last[i].clear();
        check_cu(d->cuGraphExecKernelNodeSetParams(kg->exec, kg->node[i], &p[i]), kWhat[i].set);
        kg->last[i].swap(now);
      }
    }
  }
  check_cu(d->cuGraphLaunch(kg->exec, stream), "cuGraphLaunch");
}

// The kernels in order on `stream`: one cuLaunchKernel each, or one graph launch (`graph`; never
// while the stream is capturing, where the kernels are captured as they are).
void launch_pair(Launch* L, int dev, CUstream stream, bool graph, bool prof, int skip, bool always_set) {
  Driver* d = driver();
  for (int i = 0; i < kNumKernels; ++i) ensure_smem(*L[i].k, L[i].smem);
  if (graph && !skip) {
    launch_graph(L, dev, stream, always_set);
    mark(prof);
    return;
  }
  for (int i = 0; i < kNumKernels; ++i) {
    const Launch& l = L[i];
    if (skip & (1 << i)) continue;
    check_cu(d->cuLaunchKernel(l.k->fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                               static_cast<unsigned>(l.smem), stream, l.args, nullptr),
             kWhat[i].launch);
    mark(prof);
  }
}

// The last descriptor encoded for one call site on this thread; a call with the same address,
// dims and strides (the common steady state: the caching allocator hands back the same block)
// reuses it instead of encoding again.
struct TmaCache {
  void* addr = nullptr;
  uint64_t dims[5] = {0, 0, 0, 0, 0};
  uint64_t strides[5] = {0, 0, 0, 0, 0};
  CUtensorMap map;
};

void encode_tma(CUtensorMap* m, int dtype, uint32_t rank, void* addr, const uint64_t* dims,
                const uint64_t* strides_bytes, const uint32_t* box, const uint32_t* estr, int il, int sw,
                int l2, int oob, const char* what);

void encode_tma_cached(TmaCache* c, CUtensorMap* m, int dtype, uint32_t rank, void* addr, const uint64_t* dims,
                       const uint64_t* strides_bytes, const uint32_t* box, const uint32_t* estr, int il, int sw,
                       int l2, int oob, const char* what) {
  if (c->addr == addr && std::memcmp(c->dims, dims, rank * sizeof(uint64_t)) == 0 &&
      std::memcmp(c->strides, strides_bytes, rank * sizeof(uint64_t)) == 0) {
    *m = c->map;
    return;
  }
  c->addr = nullptr;
  encode_tma(m, dtype, rank, addr, dims, strides_bytes, box, estr, il, sw, l2, oob, what);
  std::memcpy(c->dims, dims, rank * sizeof(uint64_t));
  std::memcpy(c->strides, strides_bytes, rank * sizeof(uint64_t));
  c->map = *m;
  c->addr = addr;
}

void encode_tma(CUtensorMap* m, int dtype, uint32_t rank, void* addr, const uint64_t* dims,
                const uint64_t* strides_bytes, const uint32_t* box, const uint32_t* estr, int il, int sw,
                int l2, int oob, const char* what) {
  // strides_bytes[0] is the element size; the driver takes the rank-1 outer strides.
  for (uint32_t i = 0; i < rank; ++i)
    if (dims[i] == 0 || dims[i] > (uint64_t(1) << 32))
      fail("RuntimeError", std::string(what) + ": TMA globalDim[" + S(i) + "] = " + S(dims[i]) + " out of range");
  for (uint32_t i = 1; i < rank; ++i)
    if (strides_bytes[i] % 16 != 0 || strides_bytes[i] >= (uint64_t(1) << 40))
      fail("RuntimeError", std::string(what) + ": TMA globalStride[" + S(i) + "] = " + S(strides_bytes[i]) +
                               " is not a multiple of 16 below 2^40");
  if (reinterpret_cast<uintptr_t>(addr) % 16 != 0)
    fail("RuntimeError", std::string(what) + ": TMA global address not 16-byte aligned");
  check_cu(driver()->cuTensorMapEncodeTiled(m, dtype, rank, addr, dims, strides_bytes + 1, box, estr, il, sw,
                                           l2, oob),
           what);
}

// Restores the caller's current context when the entry leaves, on success or error.
struct CtxGuard {
  CUcontext prev = nullptr;
  CUcontext cur = nullptr;
  ~CtxGuard() {
    if (prev != cur) driver()->cuCtxSetCurrent(prev);
  }
};

ffi::Tensor alloc(std::initializer_list<int64_t> shape, DLDataType dt, DLDevice dev) {
  std::vector<int64_t> s(shape);
  return ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, ffi::ShapeView(s.data(), s.size()), dt, dev);
}

// The workspace, kept across calls per (device, stream). Work on one stream runs in order, so
// consecutive calls on a stream can share a workspace; calls on other streams get their own.
// While the stream is capturing a CUDA graph the call allocates a fresh one instead (the graph's
// private pool owns it), so a replay never shares memory with eager calls. A call holds a
// reference to the block it launched with, so a concurrent call that grows the slot cannot free
// the block before this call's kernels are queued; the caching allocator then frees it in stream
// order. The table is never destroyed: no tensor deleter runs during process exit.
struct WsSlot {
  int device_id = -1;
  CUstream stream = nullptr;
  int64_t bytes = 0;
  ffi::Optional<ffi::Tensor> t;
  uint64_t last_use = 0;
};
constexpr int kWsSlots = 8;
struct WsTable {
  std::mutex mu;
  WsSlot slot[kWsSlots];
  uint64_t tick = 0;
};
WsTable* ws_table() {
  static WsTable* t = new WsTable();
  return t;
}

ffi::Tensor alloc(std::initializer_list<int64_t> shape, DLDataType dt, DLDevice dev);

ffi::Tensor cached_workspace(DLDevice dev, CUstream stream, int64_t bytes) {
  WsTable* w = ws_table();
  std::lock_guard<std::mutex> lock(w->mu);
  WsSlot* hit = nullptr;
  WsSlot* victim = &w->slot[0];
  for (WsSlot& s : w->slot) {
    if (s.device_id == dev.device_id && s.stream == stream) { hit = &s; break; }
    if (s.last_use < victim->last_use) victim = &s;
  }
  if (hit == nullptr) {
    hit = victim;
    hit->t = ffi::Optional<ffi::Tensor>();
    hit->bytes = 0;
    hit->device_id = dev.device_id;
    hit->stream = stream;
  }
  hit->last_use = ++w->tick;
  if (hit->bytes < bytes) {
    int64_t want = std::max(bytes, hit->bytes + hit->bytes / 2);
    hit->t = ffi::Optional<ffi::Tensor>();
    hit->t = alloc({want}, DLDataType{kDLUInt, 8, 1}, dev);
    hit->bytes = want;
  }
  return hit->t.value();
}

int64_t release_workspaces() {
  WsTable* w = ws_table();
  std::lock_guard<std::mutex> lock(w->mu);
  int64_t freed = 0;
  for (WsSlot& s : w->slot) {
    freed += s.bytes;
    s = WsSlot();
  }
  return freed;
}

bool stream_capturing(CUstream stream) {
  int status = 0;
  check_cu(driver()->cuStreamIsCapturing(stream, &status), "cuStreamIsCapturing");
  return status != 0;
}

// KDA_TILE_POISON=1: fill the workspace and fresh outputs with NaN before the launch.
bool poison_requested() {
  const char* p = std::getenv("KDA_TILE_POISON");
  return p != nullptr && p[0] == '1' && p[1] == 0;
}

void poison(void* ptr, int64_t numel, DLDataType dt, bool dry, CUstream stream) {
  if (numel == 0) return;
  if (dt.bits == 16) {
    unsigned short nan = dt.code == kDLBfloat ? 0x7FC0 : 0x7E00;
    if (dry) { std::fill_n(static_cast<unsigned short*>(ptr), numel, nan); return; }
    check_cu(driver()->cuMemsetD16Async(reinterpret_cast<uint64_t>(ptr), nan, numel, stream), "cuMemsetD16Async");
  } else if (dt.bits == 32) {
    unsigned int nan = 0x7FC00000u;
    if (dry) { std::fill_n(static_cast<unsigned int*>(ptr), numel, nan); return; }
    check_cu(driver()->cuMemsetD32Async(reinterpret_cast<uint64_t>(ptr), nan, numel, stream), "cuMemsetD32Async");
  }
}

// validate="full": the n int64 entries of an index tensor (cu_seqlens, state_indices) on the host.
void read_int64s(const DLTensor* t, int64_t n, std::vector<int64_t>* out, CUstream stream, const char* copy_name) {
  out->resize(n);
  if (n == 0) return;
  if (t->device.device_type == kDLCPU) {
    std::memcpy(out->data(), data_ptr(t), n * sizeof(int64_t));
    return;
  }
  Driver* d = driver();
  check_cu(d->cuMemcpyDtoHAsync(out->data(), reinterpret_cast<uint64_t>(data_ptr(t)), n * sizeof(int64_t), stream),
           copy_name);
  check_cu(d->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

// A state pool: every index is -1 or a row in [0, P), and no row is used twice.
void check_state_indices(const std::vector<int64_t>& idx, int64_t P) {
  std::vector<int64_t> owner(static_cast<size_t>(P), -1);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t x = idx[i];
    if (x != -1 && (x < 0 || x >= P))
      fail("ValueError", "state_indices[" + S(i) + "]: expected -1 (padding) or a pool row in [0, " + S(P) +
                             ") (P = state_pool.shape[0]), got " + S(x));
    if (x >= 0) {
      if (owner[x] >= 0)
        fail("ValueError", "state_indices[" + S(i) + "]: expected a pool row no other sequence updates, got " + S(x) +
                               " (also state_indices[" + S(owner[x]) + "])");
      owner[x] = static_cast<int64_t>(i);
    }
  }
}

void check_cu_contents(const std::vector<int64_t>& c, int64_t T) {
  if (c[0] != 0) fail("ValueError", "cu_seqlens[0]: expected 0, got " + S(c[0]));
  for (size_t i = 1; i < c.size(); ++i)
    if (c[i] < c[i - 1])
      fail("ValueError", "cu_seqlens[" + S(i) + "]: expected >= " + S(c[i - 1]) + " (cu_seqlens[" + S(i - 1) +
                             "], non-decreasing), got " + S(c[i]));
  if (c.back() != T)
    fail("ValueError", "cu_seqlens[" + S(c.size() - 1) + "]: expected " + S(T) + " (T), got " + S(c.back()));
}

'''


def generate(spec: EntrySpec) -> str:
    rules = R.build_rules(spec)
    contract = spec.contract
    index = arg_index(contract)
    n_pos = len(contract.args) + len(contract.scalars)
    flags_index = len(contract.positional)
    nk = len(spec.kernels)
    out_names = [p.name for p in spec.outputs]
    shape_vars = sorted({r.var for r in rules if isinstance(r, (R.Bind, R.Derive))})
    contents = next((r for r in rules if isinstance(r, R.Contents)), None)
    L: list[str] = [f"// Generated by host_codegen.gen_cpp for {spec.name}. Do not edit.",
                    f"// key {spec.key}"]
    L += [f"// k{i + 1} ir_hash {ks.ir_hash}" for i, ks in enumerate(spec.kernels)]
    what = ", ".join(f'{{"cuGraphAddKernelNode(K{i + 1})", "cuGraphExecKernelNodeSetParams(K{i + 1})", '
                     f'"cuLaunchKernel(K{i + 1})"}}' for i in range(nk))
    L.append(_PRELUDE.replace("@NUM_KERNELS@", str(nk)).replace("@KERNEL_WHAT@", what))

    # ---- validation, shared by every export ----
    L.append("struct Env {")
    for v in shape_vars:
        L.append(f"  int64_t {_v(v)} = 0;")
    for s in spec.scalars:
        L.append(f"  double {_s(s.name)} = 0;")
    for n in index:
        if n not in contract.scalars:
            L.append(f"  DLTensor* t_{n} = nullptr;")
    L.append("};")
    L.append("")
    L.append("void validate(const TVMFFIAny* A, int32_t num_args, int expect_device, bool full, Env* E, CUstream stream) {")
    L.append(f'  if (num_args < {n_pos}) fail("TypeError", "entry: expected at least {n_pos} arguments, got " + S(num_args));')
    L.append("  const TVMFFIAny none_arg{};")
    for o in contract.outputs:
        L.append(f"  const TVMFFIAny& a_{o} = num_args > {index[o]} ? A[{index[o]}] : none_arg;")
    for v in shape_vars:
        L.append(f"  int64_t& {_v(v)} = E->{_v(v)};")
    for s in spec.scalars:
        L.append(f"  double& {_s(s.name)} = E->{_s(s.name)};")

    def arg_ref(name):
        i = index[name]
        return f"a_{name}" if i >= n_pos else f"A[{i}]"

    declared = set()

    def tref(name):
        return f"E->t_{name}"

    for r in rules:
        arg = getattr(r, "arg", None) or getattr(r, "out", None)
        is_out = arg in out_names
        guard = f"if ({tref(arg)}) " if is_out else ""
        if isinstance(r, R.Presence):
            if r.required:
                L.append(f"  if (is_none({arg_ref(r.arg)})) fail(\"TypeError\", {_lit(r.arg + ': expected a tensor (' + r.why + '), got None')});")
            else:
                L.append(f"  if (!is_none({arg_ref(r.arg)})) fail(\"ValueError\", std::string({_lit(r.arg + ': expected None (' + r.why + '), got ')}) + type_name({arg_ref(r.arg)}));")
        elif isinstance(r, R.IsTensor):
            if arg not in declared:
                declared.add(arg)
                if is_out:
                    L.append(f"  if (!is_none({arg_ref(arg)})) {{")
                    L.append(f"    {tref(arg)} = as_dl({arg_ref(arg)});")
                    L.append(f"    if (!{tref(arg)}) fail(\"TypeError\", std::string({_lit(arg + ': expected a torch.Tensor, got ')}) + type_name({arg_ref(arg)}));")
                    L.append("  }")
                else:
                    L.append(f"  {tref(arg)} = as_dl({arg_ref(arg)});")
                    L.append(f"  if (!{tref(arg)}) fail(\"TypeError\", std::string({_lit(arg + ': expected a torch.Tensor, got ')}) + type_name({arg_ref(arg)}));")
        elif isinstance(r, R.DType):
            code, bits = DL_DTYPE[r.dtype]
            t = tref(arg)
            L.append(f"  {guard}if ({t}->dtype.code != {code} || {t}->dtype.bits != {bits} || {t}->dtype.lanes != 1) "
                     f"fail(\"TypeError\", std::string({_lit(arg + ': expected dtype ' + r.dtype + ', got ')}) + dtype_name({t}->dtype));")
        elif isinstance(r, R.NDim):
            t = tref(arg)
            L.append(f"  {guard}if ({t}->ndim != {r.ndim}) fail(\"ValueError\", std::string({_lit(arg + ': expected ' + str(r.ndim) + ' dimensions ' + r.labels + ', got ')}) + S({t}->ndim));")
        elif isinstance(r, R.Device):
            t = tref(arg)
            if r.ref is None:
                L.append(f"  if ({t}->device.device_type != expect_device) fail(\"ValueError\", std::string({_lit(arg + ': expected a ')}) + device_type_str(expect_device) + \" tensor, got device \" + device_str({t}->device));")
            else:
                L.append(f"  {guard}if (!same_device({t}->device, {tref(r.ref)}->device)) fail(\"ValueError\", std::string({_lit(arg + ': expected device ')}) + device_str({tref(r.ref)}->device) + {_lit(' (the device of ' + r.ref + '), got ')} + device_str({t}->device));")
        elif isinstance(r, R.Bind):
            L.append(f"  {_v(r.var)} = {tref(arg)}->shape[{r.dim}];")
        elif isinstance(r, R.Dim):
            t = tref(arg)
            L.append(f"  {guard}{{ int64_t want = {_c(r.expr)}; if ({t}->shape[{r.dim}] != want) fail(\"ValueError\", "
                     f"std::string({_lit(arg + '.shape[' + str(r.dim) + ']: expected ')}) + S(want) + {_lit(' ' + r.note + ', got ')} + S({t}->shape[{r.dim}])); }}")
        elif isinstance(r, R.Derive):
            L.append(f"  {_v(r.var)} = {_c(r.expr)};")
        elif isinstance(r, R.Pre):
            got = ' + ", " + '.join(f'{_lit(v + " = ")} + S({_v(v)})' for v in r.vars)
            L.append(f"  if (!({_c(r.expr)})) fail(\"ValueError\", std::string({_lit(r.arg + ': expected ' + r.src + r.when + ', got ')}) + {got});")
        elif isinstance(r, R.Stride):
            t = tref(arg)
            L.append(f"  {guard}if ({t}->strides && {t}->shape[{r.dim}] != 1) {{ int64_t want = {_c(r.expr)}; if ({t}->strides[{r.dim}] != want) "
                     f"fail(\"ValueError\", std::string({_lit(arg + '.stride(' + str(r.dim) + '): expected ')}) + S(want) + \" (contiguous), got \" + S({t}->strides[{r.dim}])); }}")
        elif isinstance(r, R.Align):
            t = tref(arg)
            n = r.nbytes
            L.append(f"  {guard}{{ int64_t rem = static_cast<int64_t>(reinterpret_cast<uintptr_t>(data_ptr({t})) % {n}); if (rem) "
                     f"fail(\"ValueError\", std::string({_lit(arg + ': expected data_ptr % ' + str(n) + ' == 0 (' + r.why + '), got data_ptr % ' + str(n) + ' == ')}) + S(rem)); }}")
        elif isinstance(r, R.NoAlias):
            L.append(f"  if ({tref(r.out)} && {tref(r.other)} && overlap({tref(r.out)}, {tref(r.other)})) fail(\"ValueError\", "
                     f"{_lit(r.out + ': expected no overlap with ' + r.other + ' (' + r.why + '), got overlapping memory')});")
        elif isinstance(r, R.Scalar):
            i = index[r.arg]
            if r.arg == "scale":
                L.append(f"  {_s('scale')} = is_none(A[{i}]) ? {float(spec.head_dim) ** -0.5!r} : scalar_arg(A[{i}], \"scale\");")
            else:
                L.append(f"  {_s(r.arg)} = scalar_arg(A[{i}], {_lit(r.arg)});")
        elif isinstance(r, R.ScalarPre):
            e = X.to_c(r.expr, _s)
            L.append(f"  if (!({e})) fail(\"ValueError\", std::string({_lit(r.arg + ': expected ' + r.src + ', got ' + r.arg + ' = ')}) + F({_s(r.arg)}));")
        elif isinstance(r, R.Contents):
            pass  # rendered below: validate_only reads here, run() after validate() (it needs the stream)
        else:
            raise TypeError(r)

    def render_contents(full, ref):
        if contents is None:
            return
        check = "check_cu_contents" if contents.arg == "cu_seqlens" else "check_state_indices"
        L.append(f"  if ({full}) {{")
        L.append("    std::vector<int64_t> c;")
        L.append(f"    read_int64s(E->t_{contents.arg}, {ref(contents.length)}, &c, stream, "
                 f"{_lit('cuMemcpyDtoHAsync(' + contents.arg + ')')});")
        L.append(f"    {check}(c, {ref(contents.bound)});")
        L.append("  }")
    render_contents("full", _v)
    L.append("}")
    L.append("")

    # ---- launch ----
    symbols = "{" + ", ".join(_lit(ks.symbol) for ks in spec.kernels) + "}"
    L.append(f"const char* const kSymbols[{nk}] = {symbols};")
    L.append("")
    L.append("ffi::Any run(const TVMFFIAny* A, int32_t num_args) {")
    L.append(f"  int64_t flags = num_args > {flags_index} ? A[{flags_index}].v_int64 : 0;")
    L.append("  // flags bit 0: full validation; bit 2: dry run on CPU tensors (everything but the driver calls);")
    L.append("  // bit 4: record phase timestamps (last_profile); bit 5: skip both launches; bit 6: fresh workspace;")
    L.append("  // bit 7: one graph launch for K1+K2; bits 8, 9: skip K1, K2 (one kernel alone).")
    L.append("  const bool dry = (flags & 4) != 0;")
    L.append("  const bool prof = (flags & 16) != 0;")
    L.append("  if (prof) g_prof.n = 0;")
    L.append("  mark(prof);")
    L.append("  Env env;")
    L.append("  Env* E = &env;")
    L.append("  validate(A, num_args, dry ? kDLCPU : kDLCUDA, false, E, nullptr);")
    L.append("  mark(prof);")
    L.append("  DLDevice dev = E->t_q->device;")
    L.append("  CUstream stream = dry ? nullptr : static_cast<CUstream>(TVMFFIEnvGetStream(kDLCUDA, dev.device_id));")
    render_contents("flags & 1", lambda v: f"E->{_v(v)}")
    for v in shape_vars:
        L.append(f"  const int64_t {_v(v)} = E->{_v(v)};")
    for s in spec.scalars:
        L.append(f"  const double {_s(s.name)} = E->{_s(s.name)};")
    L.append("  CtxGuard ctx_guard;")
    L.append("  DeviceKernels* dk = nullptr;")
    L.append("  if (!dry) {")
    L.append("    dk = kernels_for(dev.device_id, &ctx_guard.prev, kSymbols);")
    L.append("    ctx_guard.cur = dk->ctx;")
    L.append("  }")
    L.append("  const bool poison_on = poison_requested();")
    L.append("  mark(prof);")

    # workspace: one allocation, buffers at WS_ALIGN-aligned offsets
    if spec.workspace:
        _render_workspace(spec, L, flags_index)
    ptr = {w.name: f"p_{w.name}" for w in spec.workspace}
    for p in spec.inputs:
        L.append(f"  void* p_{p.name} = E->t_{p.name} ? data_ptr(E->t_{p.name}) : nullptr;")
        ptr[p.name] = f"p_{p.name}"
    return _render_launch(spec, L, ptr, out_names, shape_vars, nk, flags_index)


def _render_workspace(spec: EntrySpec, L: list, flags_index: int) -> None:
    L.append("  int64_t ws_total = 0;")
    for w in spec.workspace:
        numel = " * ".join(f"({_c(s)})" for s in w.shape)
        L.append(f"  const int64_t off_{w.name} = ws_total; ws_total += (({numel}) * {DTYPE_BYTES[w.dtype]} + {WS_ALIGN - 1}) / {WS_ALIGN} * {WS_ALIGN};")
    L.append(f"  // Over-allocated by {WS_ALIGN} bytes so the base can be rounded up whatever the allocator gives.")
    L.append("  const bool capturing = !dry && stream_capturing(stream);")
    # the argument after flags: a caller's workspace (kda_tile.slabs' pipeline: K1 of one slab and
    # K2 of another run on two streams, each slab's K1 and K2 on one workspace of the caller's)
    wi = flags_index + 1
    L.append(f"  const TVMFFIAny* ws_arg = num_args > {wi} && !is_none(A[{wi}]) ? &A[{wi}] : nullptr;")
    L.append("  const bool fresh_ws = !ws_arg && (dry || capturing || (flags & 64) != 0);")
    L.append("  ffi::Optional<ffi::Tensor> ws;")
    L.append("  uintptr_t ws_raw;")
    L.append("  if (ws_arg) {")
    L.append("    const DLTensor* wt = as_dl(*ws_arg);")
    L.append('    if (!wt) fail("TypeError", std::string("workspace: expected a torch.Tensor or None, got ") + type_name(*ws_arg));')
    L.append(f"    const int64_t need = ws_total + {WS_ALIGN};")
    L.append("    if (wt->dtype.code != kDLUInt || wt->dtype.bits != 8 || wt->dtype.lanes != 1 || wt->ndim != 1 ||")
    L.append("        (wt->strides && wt->strides[0] != 1) || wt->shape[0] < need || !same_device(wt->device, dev))")
    L.append('      fail("ValueError", "workspace: expected a contiguous 1-D uint8 tensor of at least " + S(need) + " bytes on " +')
    L.append('           device_str(dev) + ", got " + dtype_name(wt->dtype) + " of " + S(wt->ndim) + " dimensions, " + S(numel(wt)) +')
    L.append('           " elements on " + device_str(wt->device));')
    L.append("    ws_raw = reinterpret_cast<uintptr_t>(data_ptr(wt));")
    L.append("  } else {")
    L.append(f"    ws = fresh_ws ? alloc({{ws_total + {WS_ALIGN}}}, DLDataType{{kDLUInt, 8, 1}}, dev)")
    L.append(f"                  : cached_workspace(dev, stream, ws_total + {WS_ALIGN});")
    L.append("    ws_raw = reinterpret_cast<uintptr_t>(ws.value().GetDLTensorPtr()->data) + ws.value().GetDLTensorPtr()->byte_offset;")
    L.append("  }")
    L.append("  mark(prof);")
    L.append(f"  char* ws_base = reinterpret_cast<char*>((ws_raw + {WS_ALIGN - 1}) / {WS_ALIGN} * {WS_ALIGN});")
    for w in spec.workspace:
        L.append(f"  void* p_{w.name} = ws_base + off_{w.name};")
    # a call that skips K1 (flags bit 8) reads a workspace an earlier call's K1 wrote: not poisoned
    L.append("  if (poison_on && !(flags & 256)) {")
    for w in spec.workspace:
        code, bits = DL_DTYPE[w.dtype]
        numel = " * ".join(f"({_c(s)})" for s in w.shape)
        L.append(f"    poison(p_{w.name}, {numel}, DLDataType{{{code}, {bits}, 1}}, dry, stream);")
    L.append("  }")


def _render_launch(spec: EntrySpec, L: list, ptr: dict, out_names, shape_vars, nk: int, flags_index: int) -> str:
    contract = spec.contract
    for p in spec.outputs:
        code, bits = DL_DTYPE[p.dtype]
        shape = ", ".join(_c(s) for s in p.shape)
        L.append(f"  ffi::Optional<ffi::Tensor> new_{p.name};")
        L.append(f"  void* p_{p.name};")
        L.append(f"  if (E->t_{p.name}) {{ p_{p.name} = data_ptr(E->t_{p.name}); }} else {{")
        L.append(f"    ffi::Tensor t = alloc({{{shape}}}, DLDataType{{{code}, {bits}, 1}}, dev);")
        L.append(f"    p_{p.name} = static_cast<char*>(t.GetDLTensorPtr()->data) + t.GetDLTensorPtr()->byte_offset;")
        numel = " * ".join(f"({_c(x)})" for x in p.shape)
        L.append(f"    if (poison_on) poison(p_{p.name}, {numel}, DLDataType{{{code}, {bits}, 1}}, dry, stream);")
        L.append(f"    new_{p.name} = std::move(t);")
        L.append("  }")
        ptr[p.name] = f"p_{p.name}"

    L.append("  mark(prof);")

    def ir_ptr(ir_name):
        return ptr[contract.public(ir_name)]

    L.append(f"  Launch launches[{nk}];")
    derived = {v for v, _ in spec.derived_vars}   # scalar parameters the entry computes
    for ki, ks in enumerate(spec.kernels):
        tag = f"k{ki + 1}"
        for d in ks.tma:
            L.append(f"  CUtensorMap {tag}_{d.desc};")
            L.append("  {")
            L.append(f"    const uint64_t dims[{d.rank}] = {{{', '.join(f'uint64_t({_c(x)})' for x in d.global_dim)}}};")
            L.append(f"    const uint64_t strides[{d.rank}] = {{{', '.join(f'uint64_t({_c(x)})' for x in d.global_stride)}}};")
            L.append(f"    const uint32_t box[{d.rank}] = {{{', '.join(str(x) for x in d.box_dim)}}};")
            L.append(f"    const uint32_t estr[{d.rank}] = {{{', '.join(str(x) for x in d.elem_strides)}}};")
            L.append("    static thread_local TmaCache cache;")
            L.append(f"    if (!dry) encode_tma_cached(&cache, &{tag}_{d.desc}, {d.dtype_code}, {d.rank}, {ir_ptr(d.tensor)}, dims, strides, box, estr, "
                     f"{d.interleave}, {d.swizzle}, {d.l2_promotion}, {d.oob_fill}, {_lit(ks.symbol + ' ' + d.desc)});")
            L.append("  }")
        slots = []
        for j, a in enumerate(ks.kernel_args):
            if a.kind == "desc":
                slots.append(f"&{tag}_{a.name}")
            elif a.kind == "ptr":
                slots.append(f"&{ir_ptr(a.name)}")
            else:
                src = _v(a.name) if a.name in derived else _s(a.name) if a.name else _c(a.expr)
                L.append(f"  {a.ctype} {tag}_a{j} = static_cast<{a.ctype}>({src});")
                if a.ctype == "int32_t":
                    L.append(f"  if (static_cast<int64_t>({tag}_a{j}) != static_cast<int64_t>({src})) fail(\"ValueError\", \"shapes: kernel argument {X.to_text(a.expr) if a.expr else a.name} does not fit int32\");")
                slots.append(f"&{tag}_a{j}")
        L.append(f"  void* {tag}_args[] = {{{', '.join(slots)}}};")
        L.append(f"  static const uint16_t {tag}_sizes[] = {{{', '.join(f'sizeof({x[1:]})' for x in slots)}}};")
        g = [_c(x) for x in ks.grid]
        b = [_c(x) for x in ks.block]
        L.append(f"  check_grid({g[0]}, {g[1]}, {g[2]});")
        L.append(f"  launches[{ki}] = Launch{{dk ? &dk->k[{ki}] : nullptr, {{{g[0]}, {g[1]}, {g[2]}}}, {{{b[0]}, {b[1]}, {b[2]}}}, {_c(ks.smem)}, {tag}_args, {tag}_sizes, {len(slots)}}};")
        L.append("  mark(prof);")
    if nk >= 2:
        # bit 8 skips the first kernel (K1), bit 9 every later one (K2, or the split's passes); the
        # mask stops below bit 10, which is not a skip bit
        L.append("  const int skip = ((flags & 256) ? 1 : 0) | ((flags & 512) ? "
                 f"{((1 << nk) - 1) & ~1} : 0);")
        L.append("  if (!dry && !(flags & 32)) launch_pair(launches, dev.device_id, stream, (flags & 128) && !capturing, prof, "
                 "skip, flags & 1024);")
    else:
        L.append("  // bit 7: a one-node graph launch (less host time than cuLaunchKernel), not while capturing")
        L.append("  const bool graph = !dry && (flags & 128) && !stream_capturing(stream);")
        L.append("  if (!dry && !(flags & 32)) launch_pair(launches, dev.device_id, stream, graph, prof, 0, flags & 1024);")
    rets = [f"new_{o}" if o in out_names else "ffi::Optional<ffi::Tensor>()" for o in contract.outputs]
    if len(rets) == 1:
        L.append(f"  return ffi::Any({rets[0]});")
    else:
        L.append("  // flags bit 3: return o alone (a Tensor, or None when the caller passed o); a single return")
        L.append("  // converts back to torch much faster than a tuple does.")
        L.append(f"  if (flags & 8) return ffi::Any({rets[0]});")
        L.append(f"  return ffi::Tuple<{', '.join(['ffi::Optional<ffi::Tensor>'] * len(rets))}>({', '.join(rets)});")
    L.append("}")
    L.append("")

    # validate_only result: shape variables (sorted by name), then the scalars.
    L.append("ffi::Any run_validate_only(const TVMFFIAny* A, int32_t num_args) {")
    L.append(f"  if (num_args != {flags_index + 2}) fail(\"TypeError\", \"validate_only: expected {flags_index + 2} arguments\");")
    L.append("  Env env;")
    L.append(f"  validate(A, num_args, static_cast<int>(A[{flags_index + 1}].v_int64), (A[{flags_index}].v_int64 & 1) != 0, &env, nullptr);")
    items = [f"ffi::Any(env.{_v(v)})" for v in shape_vars] + [f"ffi::Any(env.{_s(s.name)})" for s in spec.scalars]
    L.append(f"  return ffi::Array<ffi::Any>({{{', '.join(items)}}});")
    L.append("}")
    L.append("")
    L.append("ffi::Any run_bench_validate(const TVMFFIAny* A, int32_t num_args) {")
    L.append("  int64_t iters = A[num_args - 1].v_int64;")
    L.append("  Env env;")
    L.append("  auto t0 = std::chrono::steady_clock::now();")
    L.append("  for (int64_t i = 0; i < iters; ++i) validate(A, num_args - 2, static_cast<int>(A[num_args - 2].v_int64), false, &env, nullptr);")
    L.append("  auto t1 = std::chrono::steady_clock::now();")
    L.append("  return ffi::Any(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters));")
    L.append("}")
    L.append("")
    L.append("ffi::Any run_last_profile(const TVMFFIAny*, int32_t) {")
    L.append("  std::vector<int64_t> t(g_prof.t, g_prof.t + g_prof.n);")
    L.append("  return ffi::Array<int64_t>(t.begin(), t.end());")
    L.append("}")
    L.append("")
    L.append("ffi::Any run_release_workspaces(const TVMFFIAny*, int32_t) { return ffi::Any(release_workspaces()); }")
    L.append("")
    L.append("ffi::Any run_load_cubins(const TVMFFIAny* A, int32_t num_args) {")
    L.append(f'  if (num_args != {nk}) fail("TypeError", "load_cubins: expected {nk} paths");')
    L.append("  std::lock_guard<std::mutex> lock(g_mu);")
    L.append("  for (int i = 0; i < kNumKernels; ++i) g_cubin[i] = read_file(ffi::AnyView::CopyFromTVMFFIAny(A[i]).cast<ffi::String>().operator std::string());")
    L.append("  return ffi::Any(nullptr);")
    L.append("}")
    L.append("")
    L.append("template <ffi::Any (*F)(const TVMFFIAny*, int32_t)>")
    L.append("int safe_call(const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {")
    L.append("  try {")
    L.append("    *result = ffi::details::AnyUnsafe::MoveAnyToTVMFFIAny(F(args, num_args));")
    L.append("    return 0;")
    L.append("  } catch (const ArgError& e) {")
    L.append("    TVMFFIErrorSetRaisedFromCStr(e.kind, e.msg.c_str());")
    L.append("    return -1;")
    L.append("  } catch (const ffi::Error& e) {")
    L.append("    ffi::details::SetSafeCallRaised(e);")
    L.append("    return -1;")
    L.append("  } catch (const std::exception& e) {")
    L.append('    TVMFFIErrorSetRaisedFromCStr("RuntimeError", e.what());')
    L.append("    return -1;")
    L.append("  }")
    L.append("}")
    L.append("")
    L.append("}  // namespace")
    L.append("")
    for name, fn in (("entry", "run"), ("validate_only", "run_validate_only"),
                     ("bench_validate", "run_bench_validate"), ("load_cubins", "run_load_cubins"),
                     ("last_profile", "run_last_profile"), ("release_workspaces", "run_release_workspaces")):
        L.append(f'extern "C" TVM_FFI_DLL_EXPORT int __tvm_ffi_{name}(void*, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {{')
        L.append(f"  return safe_call<{fn}>(args, num_args, result);")
        L.append("}")
    L.append("")
    return "\n".join(L)


def shape_var_order(spec: EntrySpec) -> list[str]:
    rules = R.build_rules(spec)
    return sorted({r.var for r in rules if isinstance(r, (R.Bind, R.Derive))})
