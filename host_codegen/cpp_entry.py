"""Stage B: build, load and call the generated C++ entry through TVM-FFI.

The C++ source is generated once per entry key and compiled into <cache_dir>/<key>/build/
(the key covers both IR hashes, so a changed kernel gets a fresh module); binding.json, written
after the module is built, names the IR hash of each kernel (see host_codegen's docstring). A
later process finding binding.json loads the module as it is: no generation, no compiler run.
The kernels' cubins come from TileLang's own CUDA compile of each build's kernel source
(sm_90a), kept in each build's cache folder and handed to the module at the first launch.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os

from . import _lock, _load_module, _read_json, _write_atomic, _write_if_changed, cubin_path, entry_dir, \
    entry_spec, generator_id
from . import gen_cpp, gen_py


# How the entry submits K1 and K2: two cuLaunchKernel calls, or one launch of a two-node CUDA
# graph whose parameters are rewritten when they change (entry flags bit 7); "graph-rewrite"
# rewrites them at every call (bit 10; diagnostics). Env KDA_TILE_LAUNCH overrides.
LAUNCH_FLAGS = {"kernels": 0, "graph": 128, "graph-rewrite": 128 | 1024}
DEFAULT_LAUNCH = "graph"


def launch_flags() -> int:
    mode = os.environ.get("KDA_TILE_LAUNCH", DEFAULT_LAUNCH)
    if mode not in LAUNCH_FLAGS:
        raise ValueError(f"KDA_TILE_LAUNCH: expected one of {sorted(LAUNCH_FLAGS)}, got {mode!r}")
    return LAUNCH_FLAGS[mode]


def cpp_source(spec) -> str:
    return gen_cpp.generate(spec)


def read_binding(d: str):
    """The binding of a built entry folder, or None when the folder holds no complete build by
    this generator."""
    b = _read_json(os.path.join(d, "binding.json"))
    if not b or b.get("generator") != generator_id() or not os.path.exists(os.path.join(d, b.get("module", ""))):
        return None
    return b


@functools.lru_cache(maxsize=None)
def _module(*builds):
    """(loaded module, entry folder, binding)."""
    import tvm_ffi

    spec, key, d = entry_dir(*builds)
    binding = read_binding(d)
    if binding is None:
        import tvm_ffi.cpp
        src = os.path.join(d, "entry.cc")
        text = cpp_source(spec)
        with _lock:
            _write_if_changed(src, text)
            so = tvm_ffi.cpp.build(f"kda_host_{key[:16]}", cpp_files=[src], build_directory=os.path.join(d, "build"),
                                   extra_cflags=["-O2", "-std=c++17"], extra_ldflags=["-ldl"])
            _write_if_changed(os.path.join(d, "fast.py"), gen_py.generate_fast(spec))
        binding = {
            "generator": generator_id(), "entry_key": key, "name": spec.name,
            "module": os.path.relpath(so, d), "source_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "kernels": {ks.stage: {"name": ks.build_name, "ir_hash": ks.ir_hash,
                                   "kernel_source_sha": ks.kernel_source_sha} for ks in spec.kernels},
        }
        _write_atomic(os.path.join(d, "binding.json"), json.dumps(binding, indent=1, sort_keys=True).encode())
    return tvm_ffi.load_module(os.path.join(d, binding["module"])), d, binding


def compile_cuda(source: str, build) -> bytes:
    """CUDA source of one build compiled to an sm_90a cubin by TileLang's CUDA backend (which
    caches nvcc's output under TILELANG_CACHE_DIR)."""
    from kda_kernels import registry
    from tilelang import tvm
    from tilelang.cuda.backend import tilelang_callback_cuda_compile

    with tvm.target.Target(registry.TARGET) as target:
        return bytes(tilelang_callback_cuda_compile(source, target, build.config.pass_configs()))


class CppEntry:
    """entry(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
    o=None, final_state=None, validate="fast") -> (o, final_state or None) for a (K1, K2) pair;
    entry(q, k, v, g, beta, A_log, dt_bias, state_pool, state_indices, lower_bound, scale, o=None,
    validate="fast") -> o for a decode build. Outputs are keyword arguments named as in the
    contract (spec.Contract.outputs); with one output the entry returns it alone."""

    backend = "cpp"

    def __init__(self, *builds):
        self.builds = tuple(b for b in builds if b is not None)
        self.k1_build = self.builds[0]
        self.k2_build = self.builds[1] if len(self.builds) > 1 else None
        self.spec = entry_spec(*self.builds)
        self.contract = self.spec.contract
        self.module, self.dir, self.binding = _module(*self.builds)
        # build name -> the IR hash this entry was generated from (the release gate checks it)
        self.ir_hashes = {k["name"]: k["ir_hash"] for k in self.binding["kernels"].values()}
        self._entry = self.module["entry"]
        self._validate = self.module["validate_only"]
        self._bench = self.module["bench_validate"]
        self._vars = gen_cpp.shape_var_order(self.spec)
        self._names = self._vars + [s.name for s in self.spec.scalars]
        self._n_out = len(self.contract.outputs)
        self._loaded = False
        self._fast = None

    def _outputs(self, outputs: dict) -> list:
        unknown = sorted(set(outputs) - set(self.contract.outputs))
        if unknown:
            raise TypeError(f"{unknown[0]}: not an output of this entry (outputs: {', '.join(self.contract.outputs)})")
        return [outputs.get(o) for o in self.contract.outputs]

    def _result(self, r, given: list):
        """The entry's return value with each output the caller passed put back in its place."""
        if self._n_out == 1:
            return given[0] if r is None else r
        return tuple(g if x is None else x for g, x in zip(given, list(r)))

    def load_kernels(self):
        """Compile (or reuse) the cubins and hand them to the module. Needs nvcc, not a GPU."""
        if not self._loaded:
            self.module["load_cubins"](*(cubin_path(b) for b in self.builds))
            self._loaded = True
        return self

    def _fast_module(self):
        """The generated Python front of the C++ entry (gen_py.generate_fast), written and loaded."""
        path = os.path.join(self.dir, "fast.py")
        if not os.path.exists(path):
            with _lock:
                _write_if_changed(path, gen_py.generate_fast(self.spec))
        return _load_module(path, f"_kda_host_fast_{os.path.basename(self.dir)}")

    @property
    def fast(self):
        """The lowest-overhead call with default validation and fresh outputs: fast(q, k, v, g,
        beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale) -> (o, final_state or
        None) for prefill; fast(<the decode arguments>) -> o for decode."""
        if self._fast is None:
            self.load_kernels()
            mod = self._fast_module()
            entry = self._entry

            lf = launch_flags()
            n_out = self._n_out

            def slow(*a):
                r = entry(*a, *([None] * n_out), lf)
                return r if n_out == 1 else (r[0], r[1])
            self._fast = mod.make(entry, slow, 8 | lf)
        return self._fast

    @property
    def raw(self):
        """The TVM-FFI function itself, for the lowest call overhead:
        raw(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale
            [, o, final_state, flags]) -> (o or None when o was passed, final_state or None)
        (decode: raw(<its 11 arguments>[, o, flags]) -> o or None when o was passed).
        flags bit 0 = full validation."""
        self.load_kernels()
        return self._entry

    def _flags(self, validate) -> int:
        if validate == "fast":
            return 0
        if validate == "full":
            return 1
        raise ValueError("validate: expected 'fast' or 'full', got " + repr(validate))

    def __call__(self, *args, validate="fast", **outputs):
        if not self._loaded:
            self.load_kernels()
        flags = self._flags(validate)
        given = self._outputs(outputs)
        if flags == 0 and all(g is None for g in given):
            return (self._fast or self.fast)(*args)
        return self._result(self._entry(*args, *given, flags | launch_flags()), given)

    def dry_run(self, *args, validate="fast", **outputs):
        """The whole entry on CPU tensors except the driver calls (no cubins, descriptors or
        launches): validation, workspace and output allocation, kernel-argument packing."""
        given = self._outputs(outputs)
        return self._result(self._entry(*args, *given, 4 | (1 if validate == "full" else 0)), given)

    def dry_run_fast(self):
        """`fast` with the dry-run flag: the same Python front on CPU tensors, no driver calls."""
        mod = self._fast_module()
        entry = self._entry
        n_flags = len(self.contract.positional) + 1
        n_out = self._n_out

        def dry(*a):
            if len(a) == n_flags:
                a = a[:-1] + (a[-1] | 4,)
            r = entry(*a)
            if n_out == 1:
                return r
            return (r[0], r[1]) if len(a) != n_flags or not (a[-1] & 8) else r
        return mod.make(dry, lambda *a: dry(*a, *([None] * n_out), 4))

    def release_workspaces(self) -> int:
        """Drops this entry's cached workspaces; returns their bytes."""
        return int(self.module["release_workspaces"]())

    def last_profile(self) -> list:
        """Steady-clock ns at each phase boundary of this thread's last call made with flags bit 4."""
        return [int(x) for x in self.module["last_profile"]()]

    def validate_only(self, *args, expect_device="cuda", validate="fast", **outputs):
        if validate not in ("fast", "full"):
            raise ValueError("validate: expected 'fast' or 'full', got " + repr(validate))
        dev = {"cpu": 1, "cuda": 2}[expect_device]
        r = self._validate(*args, *self._outputs(outputs), 1 if validate == "full" else 0, dev)
        return dict(zip(self._names, list(r)))

    def bench_validate(self, *args, expect_device="cuda", iters=100000) -> float:
        """Nanoseconds per validation, timed inside C++ (no FFI call cost)."""
        dev = {"cpu": 1, "cuda": 2}[expect_device]
        return float(self._bench(*args, *([None] * self._n_out), 0, dev, iters))
