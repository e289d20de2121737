"""Lower a TileLang prim_func for sm_90a and capture what the final IR no longer shows.

The lowering is exactly `tilelang.lower(func, target)` under the build's pass configs
(the same call as kda_kernels.registry.lower, so the IR hash agrees); pass instruments
only observe:
  - before tl.LowerTileOp: the layout_map of every block (shared swizzles, fragments);
  - before tl.MergeSharedMemoryAllocations: each shared buffer's dtype and size, which
    the merged IR keeps only for buffers that are also accessed by BufferLoad/Store.
The host module supplies TMA descriptor arguments (global shape, box, swizzle).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .tir import tirx

TARGET = {"kind": "cuda", "arch": "sm_90a"}


@dataclass
class LayoutInfo:
    buffer: str
    scope: str
    kind: str            # "layout" | "fragment"
    input_shape: list
    output_shape: list
    forward_vars: list
    forward_index: list
    forward_thread: object = None
    replicate: int = 1
    thread_range: tuple = None


@dataclass
class TmaDesc:
    name: str
    kind: str            # "tiled" | other (unsupported)
    dtype_code: int
    rank: int
    tensor: str          # host-side pointer name
    global_dims: list    # innermost first
    global_strides: list  # bytes, innermost first (entry 0 is the element size)
    box: list
    elem_strides: list
    interleave: int
    swizzle: int         # 0 none, 1: 32B, 2: 64B, 3: 128B
    raw: list = field(default_factory=list)


@dataclass
class Lowered:
    name: str
    artifact: object
    device_func: object          # the device PrimFunc
    device_script: str
    shared_allocs: dict          # buffer var name -> (dtype, elements)
    layouts: dict                # buffer name -> LayoutInfo
    tma_descs: dict              # device param name -> TmaDesc
    source_func: object          # the prim_func before lowering
    pass_configs: dict
    seconds: float
    legalize_changed: bool = False   # TileLang's safe-memory legalization added guards


class _Capture:
    def __init__(self):
        self.shared_allocs = {}
        self.layouts = {}
        self.before_legalize = None
        self.legalize_changed = False


def _make_instrument(cap: _Capture):
    from tilelang import tvm

    @tvm.instrument.pass_instrument
    class VerifyCapture:
        def run_before_pass(self, mod, info):
            if info.name == "tl.LowerTileOp":
                _capture_layouts(mod, cap)
            elif info.name == "tl.MergeSharedMemoryAllocations":
                _capture_shared(mod, cap)
            elif info.name == "tl.LegalizeSafeMemoryAccess":
                cap.before_legalize = mod

        def run_after_pass(self, mod, info):
            if info.name == "tl.LegalizeSafeMemoryAccess" and cap.before_legalize is not None:
                # did TileLang guard an access it could not prove in bounds?
                cap.legalize_changed = not tvm.ir.structural_equal(cap.before_legalize, mod)
                cap.before_legalize = None

    return VerifyCapture()


def _capture_layouts(mod, cap):
    from tvm.tirx.stmt_functor import post_order_visit

    for _, fn in mod.functions.items():
        if not isinstance(fn, tirx.PrimFunc):
            continue

        def visit(n):
            if isinstance(n, tirx.SBlock) and "layout_map" in n.annotations:
                for buf, lay in n.annotations["layout_map"].items():
                    name = str(buf.name)
                    if name in cap.layouts:
                        continue
                    cap.layouts[name] = _layout_info(name, buf.scope(), lay)

        post_order_visit(fn.body, visit)


def _layout_info(name, scope, lay):
    from tilelang.layout import Fragment

    info = LayoutInfo(
        buffer=name, scope=str(scope),
        kind="fragment" if isinstance(lay, Fragment) else "layout",
        input_shape=list(lay.get_input_shape()), output_shape=list(lay.get_output_shape()),
        forward_vars=list(lay.get_forward_vars()), forward_index=list(lay.get_forward_index()),
    )
    if info.kind == "fragment":
        info.forward_thread = lay.forward_thread
        info.replicate = int(lay.replicate_size)
        rng = lay.thread_range
        info.thread_range = (rng.min, rng.extent) if rng is not None else None
    return info


def _capture_shared(mod, cap):
    from tvm.tirx.stmt_functor import post_order_visit

    for _, fn in mod.functions.items():
        if not isinstance(fn, tirx.PrimFunc):
            continue

        def visit(n):
            if isinstance(n, tirx.AllocBuffer):
                b = n.buffer
                if str(b.scope()).startswith("shared") and str(b.scope()) not in (
                        "shared.barrier", "shared.cluster_barrier"):
                    elems = 1
                    for s in b.shape:
                        elems = elems * s
                    cap.shared_allocs[str(b.data.name)] = (str(b.dtype), elems)

        post_order_visit(fn.body, visit)


def _tma_descs(host_mod) -> dict:
    out = {}
    for _, fn in host_mod.functions.items():
        attrs = getattr(fn, "attrs", None)
        if attrs is None or "tma_descriptor_args" not in attrs:
            continue
        for var, args in attrs["tma_descriptor_args"].items():
            args = list(args)
            kind = str(args[0].value) if isinstance(args[0], tirx.StringImm) else str(args[0])
            name = str(var.name)
            if "tiled" not in kind:
                out[name] = TmaDesc(name, kind, 0, 0, "", [], [], [], [], 0, 0, raw=args)
                continue
            dtype_code, rank = int(args[2]), int(args[3])
            tensor = str(args[4].name) if hasattr(args[4], "name") else str(args[4])
            rest = args[5:]
            dims, strides = rest[:rank], rest[rank:2 * rank]
            box, estr = rest[2 * rank:3 * rank], rest[3 * rank:4 * rank]
            tail = rest[4 * rank:]
            out[name] = TmaDesc(name, "tiled", dtype_code, rank, tensor, list(dims), list(strides),
                                [int(b) for b in box], [int(e) for e in estr], int(tail[0]), int(tail[1]),
                                raw=args)
    return out


@dataclass
class IRArtifact:
    """The split IR of a lowered kernel: what tilelang.lower returns minus the CUDA source."""
    device_mod: object
    host_mod: object
    params: object = None


def _lower_ir(func):
    """tilelang.lower up to the host/device IR split, skipping CUDA source generation (about
    a fifth of the time). The device IR, and so its hash, is the same as tilelang.lower's."""
    import tilelang
    try:
        from tilelang.backend.module import create_backend_context
        from tilelang.engine.lower import lower_to_host_device_ir
    except ImportError:  # another TileLang: the public entry point
        return tilelang.lower(func, target=TARGET)
    ctx = create_backend_context(TARGET, None, "auto")
    host, dev, params, _, _ = lower_to_host_device_ir(func, ctx)
    return IRArtifact(device_mod=dev, host_mod=host, params=params)


def lower(func, pass_configs: dict | None = None, name: str | None = None) -> Lowered:
    import tilelang
    from tilelang import tvm

    pass_configs = dict(pass_configs or {})
    cap = _Capture()
    t0 = time.perf_counter()
    with tvm.transform.PassContext(config=pass_configs, instruments=[_make_instrument(cap)]), \
            tvm.target.Target(TARGET):
        art = _lower_ir(func)
    secs = time.perf_counter() - t0
    dev = [f for _, f in art.device_mod.functions.items() if isinstance(f, tirx.PrimFunc)]
    if len(dev) != 1:
        raise ValueError(f"expected one device kernel, found {len(dev)}")
    return Lowered(
        name=name or str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else name,
        artifact=art, device_func=dev[0], device_script=art.device_mod.script(),
        shared_allocs=cap.shared_allocs, layouts=cap.layouts, tma_descs=_tma_descs(art.host_mod),
        source_func=func, pass_configs=pass_configs, seconds=secs, legalize_changed=cap.legalize_changed)
