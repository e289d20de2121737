"""Generated host entries for kda_tile: one per released (K1, K2) configuration.

    from host_codegen import get_entry
    entry = get_entry(k1_build, k2_build)            # backend="py" (stage A) or "cpp" (stage B)
    o, final_state = entry(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state,
                           lower_bound, scale)          # optional: o=..., final_state=..., validate="full"
    env = entry.validate_only(..., expect_device="cpu")  # checks only; no GPU, no launch

Every check comes from the lowered IR of the two builds (host_codegen.spec / .rules).

validate="fast" (the default) reads only tensor metadata: no device synchronization, safe
inside CUDA-graph capture. The kernels clamp cu_seqlens values, so any contents stay inside
the buffers. validate="full" also checks the contents of cu_seqlens (starts at 0,
non-decreasing, ends at T): it copies N+1 int64 to the host and synchronizes the caller's
current stream, so the call waits for all work queued on that stream (plus a ~10 us copy);
it cannot be used while capturing a CUDA graph.
The C++ entry keeps the K1->K2 workspace between calls, one per (device, stream), and submits
K1 and K2 as one launch of a two-node CUDA graph whose node parameters it rewrites per call
(KDA_TILE_LAUNCH=kernels: two cuLaunchKernel calls). While the caller's stream is capturing a
graph it allocates a fresh workspace and launches the kernels plainly, so they are captured.
The generated source is deterministic and cached on disk under the entry's key, a hash of
both IR hashes and both extracted specs (see cache_dir()).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import threading

from .spec import EntrySpec, read_entry  # noqa: F401

GENERATOR_VERSION = "2"

_lock = threading.Lock()


def cache_dir() -> str:
    root = os.environ.get("KDA_TILE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kda_tile")
    return os.path.join(root, "host_codegen")


def _write_if_changed(path: str, text: str) -> None:
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


@functools.lru_cache(maxsize=None)
def entry_spec(k1_build, k2_build) -> EntrySpec:
    return read_entry(k1_build, k2_build)


def entry_key(spec: EntrySpec) -> str:
    return hashlib.sha256((GENERATOR_VERSION + spec.key).encode()).hexdigest()[:32]


def python_source(spec: EntrySpec) -> str:
    from . import gen_py
    return gen_py.generate(spec)


def _load_module(path: str, name: str):
    mod_spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod


def entry_dir(k1_build, k2_build):
    """(spec, key, directory) of one entry's generated sources and builds, created on demand."""
    spec = entry_spec(k1_build, k2_build)
    key = entry_key(spec)
    d = os.path.join(cache_dir(), key)
    os.makedirs(d, exist_ok=True)
    return spec, key, d


@functools.lru_cache(maxsize=None)
def _py_module(k1_build, k2_build):
    spec, key, d = entry_dir(k1_build, k2_build)
    path = os.path.join(d, "entry.py")
    with _lock:
        _write_if_changed(path, python_source(spec))
    return _load_module(path, f"_kda_host_entry_{key}")


class PyEntry:
    """Stage A: generated Python validator + launch through tilelang-compiled kernels."""

    backend = "py"

    def __init__(self, k1_build, k2_build):
        self.k1_build, self.k2_build = k1_build, k2_build
        self.spec = entry_spec(k1_build, k2_build)
        self.module = _py_module(k1_build, k2_build)
        self.validate_only = self.module.validate
        self._kernels = None

    def kernels(self):
        if self._kernels is None:
            self._kernels = (_jit(self.k1_build), _jit(self.k2_build))
        return self._kernels

    def __call__(self, q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
                 o=None, final_state=None, validate="fast"):
        k1, k2 = self._kernels or self.kernels()
        return self.module.launch(k1, k2, q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state,
                                  lower_bound, scale, o, final_state, validate=validate)


@functools.lru_cache(maxsize=None)
def _jit(build):
    import tilelang
    from kda_tile import registry
    return tilelang.compile(build.prim_func(), target=registry.TARGET, pass_configs=build.config.pass_configs())


@functools.lru_cache(maxsize=None)
def get_entry(k1_build, k2_build, backend: str = None):
    """The host entry of one released configuration. backend: "cpp" (the generated C++
    entry through TVM-FFI), "py" (generated Python, launches tilelang JIT kernels), or None:
    the environment variable KDA_TILE_HOST_BACKEND, else "cpp"."""
    backend = backend or os.environ.get("KDA_TILE_HOST_BACKEND", "cpp")
    if backend == "py":
        return PyEntry(k1_build, k2_build)
    if backend == "cpp":
        from .cpp_entry import CppEntry
        return CppEntry(k1_build, k2_build)
    raise ValueError(f"backend: expected 'py' or 'cpp', got {backend!r}")


def released_pairs():
    """Every released configuration: (K1 build, K2 build) with the same varlen."""
    from kda_tile import registry
    k1s = [b for b in registry.RELEASED if b.stage == "k1"]
    k2s = [b for b in registry.RELEASED if b.stage == "k2"]
    return [(a, b) for a in k1s for b in k2s if a.config.varlen == b.config.varlen]
