"""Generated host entries for kda_tile: one per released (K1, K2) prefill configuration and
one per released decode build.

    from host_codegen import get_entry
    entry = get_entry(k1_build, k2_build)            # backend="py" (stage A) or "cpp" (stage B)
    o, final_state = entry(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state,
                           lower_bound, scale)          # optional: o=..., final_state=..., validate="full"
    env = entry.validate_only(..., expect_device="cpu")  # checks only; no GPU, no launch
    dec = get_entry(decode_build)                    # one kernel
    o = dec(q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices, lower_bound, scale)

Every check comes from the lowered IR of the builds (host_codegen.spec / .rules); the family's
contract (spec.PREFILL, spec.DECODE) names and orders the public arguments.

validate="fast" (the default) reads only tensor metadata: no device synchronization, safe
inside CUDA-graph capture. The kernels clamp cu_seqlens values, so any contents stay inside
the buffers. validate="full" also checks the contents of cu_seqlens (starts at 0,
non-decreasing, ends at T) or of state_indices (each -1 or a pool row, no row twice): it
copies them to the host and synchronizes the caller's current stream, so the call waits for all work queued on that stream (plus a ~10 us copy);
it cannot be used while capturing a CUDA graph.
The C++ entry keeps the K1->K2 workspace between calls, one per (device, stream), and submits
K1 and K2 as one launch of a two-node CUDA graph whose node parameters it rewrites per call
(KDA_TILE_LAUNCH=kernels: two cuLaunchKernel calls). While the caller's stream is capturing a
graph it allocates a fresh workspace and launches the kernels plainly, so they are captured.
Caches (under cache_dir(), $KDA_TILE_CACHE/host_codegen, default ~/.cache/kda_tile/host_codegen):
  kernels/<sha(generator, gate key)>/  one per build: the KernelSpec read from its lowered IR
      (spec.pickle), its CUDA source, its sm_90a cubin and meta.json (name, IR hash, gate key,
      shared memory). Keyed by the build's gate key (kda_kernels.buildkey), so a warm process
      reads the spec without lowering; a changed source, config or TileLang gets a fresh one.
  <entry key>/  one per (K1, K2) pair or decode build: the generated C++ (entry.cc), its TVM-FFI module, the
      Python front (fast.py) and binding.json, written last, naming the generator and the IR
      hash of each kernel the entry was generated from. The entry key hashes the generator
      (GENERATOR_VERSION and host_codegen's own sources) and both KernelSpecs (IR hashes
      included), so the release gate checks binding.json against the manifest's proved hashes.
A warm get_entry (both kernel dirs and the entry's binding present) lowers nothing, generates
nothing and runs no compiler: it loads the pickled specs and the built module.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import pickle
import threading
from pathlib import Path

from .spec import (EntrySpec, KernelSpec, chain, chain_derived, contract_of, join, read_entry, read_kernel,  # noqa: F401
                   single)

GENERATOR_VERSION = "4"

_lock = threading.Lock()


def cache_dir() -> str:
    root = os.environ.get("KDA_TILE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kda_tile")
    return os.path.join(root, "host_codegen")


def _write_if_changed(path: str, text: str) -> None:
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    _write_atomic(path, text.encode())


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _read_json(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=None)
def generator_id() -> str:
    """GENERATOR_VERSION and a hash of host_codegen's own sources: every cached spec and entry
    is keyed by it, so an edited generator never serves what the old one generated."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    for f in sorted(Path(__file__).resolve().parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


# -- per-build cache: the KernelSpec, CUDA source and cubin of one build ----------------------

def kernel_dir(build) -> str:
    """The cache folder of one build, keyed by its gate key (not created)."""
    from kda_kernels import buildkey
    key = hashlib.sha256((generator_id() + buildkey.gate_key(build)).encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), "kernels", key)


def _load_kernel_spec(build):
    d = kernel_dir(build)
    meta = _read_json(os.path.join(d, "meta.json"))
    if not meta or meta.get("name") != build.name:
        return None
    try:
        with open(os.path.join(d, "spec.pickle"), "rb") as f:
            ks = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None
    return ks if isinstance(ks, KernelSpec) and ks.ir_hash == meta.get("ir_hash") else None


def _plain(x):
    """x with every str/int/float subclass (TVM-FFI strings and integers from the IR) made the
    builtin type, so that unpickling a spec imports nothing."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x)(**{f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)})
    if x is None or type(x) in (bool, int, float, str):
        return x
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(v) for v in x) if type(x) in (tuple, list) else tuple(_plain(v) for v in x)
    if isinstance(x, dict):
        return {_plain(k): _plain(v) for k, v in x.items()}
    raise TypeError(f"unexpected {type(x).__name__} in a kernel spec: {x!r}")


def prepare_kernel(build, lowered=None) -> KernelSpec:
    """Lower the build (unless given its artifact), read its KernelSpec and write the build's
    cache folder: kernel.cu, spec.pickle, then meta.json (its presence marks the folder complete)."""
    from kda_kernels import buildkey, registry
    d = kernel_dir(build)
    os.makedirs(d, exist_ok=True)
    art = lowered if lowered is not None else registry.lower(build)
    ks = _plain(read_kernel(build, art))
    _write_atomic(os.path.join(d, "kernel.cu"), (art.kernel_source or "").encode())
    _write_atomic(os.path.join(d, "spec.pickle"), pickle.dumps(ks, protocol=4))
    smem = ks.smem[1] if ks.smem[0] == "int" else None
    meta = {"name": build.name, "stage": build.stage, "ir_hash": ks.ir_hash, "gate_key": buildkey.gate_key(build),
            "generator": generator_id(), "dynamic_smem_bytes": smem, "kernel_source_sha": ks.kernel_source_sha}
    _write_atomic(os.path.join(d, "meta.json"), json.dumps(meta, indent=1, sort_keys=True).encode())
    return ks


@functools.lru_cache(maxsize=None)
def kernel_spec(build) -> KernelSpec:
    """The build's KernelSpec: from its cache folder when present, else read from its lowered IR
    (and cached)."""
    return _load_kernel_spec(build) or prepare_kernel(build)


def cubin_path(build, compile_missing: bool = True) -> str:
    """The build's sm_90a cubin in its cache folder, compiled by TileLang's CUDA backend from
    the cached CUDA source when missing (needs nvcc, not a GPU)."""
    kernel_spec(build)
    d = kernel_dir(build)
    path = os.path.join(d, "kernel.cubin")
    if compile_missing and not os.path.exists(path):
        with open(os.path.join(d, "kernel.cu")) as f:
            source = f.read()
        from .cpp_entry import compile_cuda
        _write_atomic(path, compile_cuda(source, build))
    return path


@functools.lru_cache(maxsize=None)
def entry_spec(*builds) -> EntrySpec:
    """The entry of a (K1, K2) pair, of K1 and the sequence split's passes, or of one kernel."""
    if len(builds) == 1:
        return single(kernel_spec(builds[0]), contract_of(builds[0]))
    return chain(tuple(kernel_spec(b) for b in builds), builds, derived=chain_derived(builds))


def entry_key(spec: EntrySpec) -> str:
    return hashlib.sha256((generator_id() + spec.key).encode()).hexdigest()[:32]


def python_source(spec: EntrySpec) -> str:
    from . import gen_py
    return gen_py.generate(spec)


def _load_module(path: str, name: str):
    mod_spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod


def entry_dir(*builds):
    """(spec, key, directory) of one entry's generated sources and builds, created on demand."""
    spec = entry_spec(*builds)
    key = entry_key(spec)
    d = os.path.join(cache_dir(), key)
    os.makedirs(d, exist_ok=True)
    return spec, key, d


@functools.lru_cache(maxsize=None)
def _py_module(*builds):
    spec, key, d = entry_dir(*builds)
    path = os.path.join(d, "entry.py")
    with _lock:
        _write_if_changed(path, python_source(spec))
    return _load_module(path, f"_kda_host_entry_{key}")


class PyEntry:
    """Stage A: generated Python validator + launch through tilelang-compiled kernels."""

    backend = "py"

    def __init__(self, *builds):
        self.builds = tuple(b for b in builds if b is not None)
        self.k1_build = self.builds[0]
        self.k2_build = self.builds[1] if len(self.builds) > 1 else None
        self.spec = entry_spec(*self.builds)
        self.module = _py_module(*self.builds)
        self.ir_hashes = {ks.build_name: ks.ir_hash for ks in self.spec.kernels}
        self.validate_only = self.module.validate
        self._kernels = None

    def kernels(self):
        if self._kernels is None:
            self._kernels = tuple(_jit(b) for b in self.builds)
        return self._kernels

    def __call__(self, *args, validate="fast", **outputs):
        """(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
        o=None, final_state=None) for prefill; the decode contract's arguments for decode."""
        return self.module.launch(*(self._kernels or self.kernels()), *args, validate=validate, **outputs)


@functools.lru_cache(maxsize=None)
def _jit(build):
    import tilelang
    from kda_kernels import registry
    return tilelang.compile(build.prim_func(), target=registry.TARGET, pass_configs=build.config.pass_configs())


@functools.lru_cache(maxsize=None)
def get_entry(*builds, backend: str = None):
    """The host entry of one released configuration: a (K1, K2) pair, K1 and the sequence split's
    three passes, or one decode build. backend: "cpp" (the generated C++
    entry through TVM-FFI), "py" (generated Python, launches tilelang JIT kernels), or None:
    the environment variable KDA_TILE_HOST_BACKEND, else "cpp"."""
    backend = backend or os.environ.get("KDA_TILE_HOST_BACKEND", "cpp")
    if backend == "py":
        return PyEntry(*builds)
    if backend == "cpp":
        from .cpp_entry import CppEntry
        return CppEntry(*builds)
    raise ValueError(f"backend: expected 'py' or 'cpp', got {backend!r}")


def _feeds(k1, k2) -> bool:
    """Whether K1's workspace is the one K2 (or a split pass) reads: the same varlen and chunk, and
    Ab in bf16 halves exactly where K2 takes v^T as a shared operand (K2Config.v_ss)."""
    return (k1.config.varlen == k2.config.varlen and k1.config.chunk == k2.config.chunk
            and k1.config.ab_halves == k2.config.v_ss)


def released_pairs():
    """Every released configuration: (K1 build, K2 build) that K1's workspace feeds."""
    from kda_kernels import registry
    k1s = [b for b in registry.RELEASED if b.stage == "k1"]
    k2s = [b for b in registry.RELEASED if b.stage == "k2" and not b.config.longest_first]
    return [(a, b) for a in k1s for b in k2s if _feeds(a, b)]


def released_longest_first():
    """Every released longest-first configuration: (K1, the order, K2 through the order), varlen,
    16-token chunks."""
    from kda_kernels import registry
    order = registry.find("k2_order")
    k2s = [b for b in registry.RELEASED if b.stage == "k2" and b.config.longest_first]
    return [(a, order, b) for a in registry.RELEASED if a.stage == "k1" for b in k2s if _feeds(a, b)]


def released_splits():
    """Every released split configuration: (K1, pass A, scan, pass C) with the same varlen; the
    scan reads the initial state and writes the final state."""
    from kda_kernels import registry
    out = []
    a = registry.find("k2_map", varlen=True)
    c = registry.find("k2_seg", varlen=True)
    for k1 in (b for b in registry.RELEASED if b.stage == "k1" and _feeds(b, a) and _feeds(b, c)):
        for s in (b for b in registry.RELEASED if b.stage == "k2_scan"):
            out.append((k1, a, s, c))
    return out


def released_entries():
    """Every released entry as a tuple of builds: the (K1, K2) pairs, the splits, the longest-first
    triples, each short-form build, then each decode build."""
    from kda_kernels import registry
    return ([tuple(p) for p in released_pairs()] + released_splits() + released_longest_first()
            + [(b,) for b in registry.RELEASED if b.stage == "k1_short"]
            + [(b,) for b in registry.RELEASED if b.stage == "decode"])
