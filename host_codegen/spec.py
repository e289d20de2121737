"""The IR reader: everything the host entry needs, read from a build's lowered IR.

For one kernel build it extracts
- the parameters in order, with buffer shapes and strides as expressions of the shape
  variables, dtypes, and whether the kernel writes the buffer (device IR stores / TMA stores);
- the widest vector access each global buffer gets in the device IR, and which buffers are
  reached through TMA (the alignment the host must check);
- the device kernel's symbol and argument list, and the grid, block and dynamic shared
  memory of the launch, from the launch call in the host IR;
- the arguments of every TMA descriptor the host IR creates;
- the config's derived shape variables and preconditions, and the scalar ranges.

Names and shapes come from the IR; a family's `Contract` (PREFILL, DECODE) only names and orders
the public arguments. `EntrySpec` is one host entry: a single kernel (`single`), or a K1 spec and
a K2 spec joined (`join`; workspace = buffers K1 writes and K2 reads).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Optional, Union

from . import expr as X

Expr = tuple

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int32": 4, "int64": 8,
               "int8": 1, "uint8": 1, "bool": 1}


@dataclass(frozen=True)
class TensorParam:
    name: str
    dtype: str
    shape: tuple           # of Expr
    strides: tuple         # of Expr (row-major strides of a dense tensor, in elements)
    written: bool
    vec_bytes: int         # widest vector access on this buffer in the device IR (elem size if none)
    tma: bool              # reached through a TMA descriptor

    kind: str = "tensor"

    @property
    def align(self) -> int:
        """Byte alignment the data pointer needs."""
        return max(self.vec_bytes, 16 if self.tma else 1)


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str
    kind: str = "scalar"


Param = Union[TensorParam, ScalarParam]


@dataclass(frozen=True)
class KernelArg:
    kind: str              # "ptr" (tensor data pointer), "desc" (CUtensorMap by value), "scalar"
    name: str              # tensor / descriptor / scalar-param name, or "" for a computed int
    ctype: str             # C type the device kernel takes
    expr: Optional[Expr] = None  # for computed scalars (shape variables)


@dataclass(frozen=True)
class TmaDesc:
    desc: str
    tensor: str
    dtype_code: int
    rank: int
    global_dim: tuple      # Expr per dim, innermost first
    global_stride: tuple   # Expr per dim in bytes; [0] is the element size, the driver takes [1:]
    box_dim: tuple
    elem_strides: tuple
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


@dataclass(frozen=True)
class KernelSpec:
    stage: str
    build_name: str
    func_name: str
    symbol: str
    ir_hash: str
    params: tuple
    kernel_args: tuple
    grid: tuple            # 3 Exprs
    block: tuple           # 3 Exprs
    smem: Expr
    tma: tuple
    derived_vars: tuple    # ((var, Expr), ...)
    preconditions: tuple   # ((source string, Expr), ...)
    scalar_preconditions: tuple
    kernel_source_sha: str = ""

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _call_name(call) -> str:
    op = call.op
    return getattr(op, "name", str(op))


def _launch_call(host_func, symbol):
    from tilelang import tvm
    from tvm import tirx

    found = []

    def visit(n):
        if isinstance(n, tirx.Call) and _call_name(n).endswith("tvm_call_packed") and n.args \
                and isinstance(n.args[0], tirx.StringImm) and n.args[0].value == symbol:
            found.append(n)
    tirx.stmt_functor.post_order_visit(host_func.body, visit)
    if len(found) != 1:
        raise ValueError(f"expected exactly one launch of {symbol} in the host IR, found {len(found)}")
    return found[0]


def _device_accesses(dev_func):
    """Per global-buffer data var name: (written, widest vector bytes) from the device IR;
    and the set of descriptor params used by TMA stores."""
    from tilelang import tvm
    from tvm import tirx

    param_names = {p.name for p in dev_func.params}
    info: dict[str, dict] = {}
    tma_store_descs: set[str] = set()

    def note(buf, dtype, write):
        name = buf.data.name
        if name not in param_names:
            return
        d = info.setdefault(name, {"written": False, "vec": 0})
        d["written"] |= write
        d["vec"] = max(d["vec"], dtype.lanes * dtype.bits // 8)

    def visit(n):
        if isinstance(n, tirx.BufferLoad):
            note(n.buffer, n.dtype, False)
        elif isinstance(n, tirx.BufferStore):
            note(n.buffer, n.value.dtype, True)
        elif isinstance(n, tirx.Call):
            nm = _call_name(n)
            if "tma_store" in nm:
                for a in n.args:
                    if isinstance(a, tirx.Var) and a.name in param_names:
                        tma_store_descs.add(a.name)
                        break
            elif "cp_async" in nm:
                for a in n.args:
                    for v in _global_vars_in(a, param_names):
                        d = info.setdefault(v, {"written": False, "vec": 0})
                        d["vec"] = max(d["vec"], 16)
    tirx.stmt_functor.post_order_visit(dev_func.body, visit)
    return info, tma_store_descs


def _global_vars_in(e, names):
    from tilelang import tvm
    from tvm import tirx
    out = []

    def visit(n):
        if isinstance(n, tirx.Var) and n.name in names:
            out.append(n.name)
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(e), visit)
    return out


def _single_func(mod, want_attr=None):
    funcs = [(gv.name_hint, f) for gv, f in mod.functions.items()]
    if want_attr is not None:
        funcs = [(n, f) for n, f in funcs if f.attrs is not None and want_attr in f.attrs]
    if len(funcs) != 1:
        raise ValueError(f"expected one function, got {[n for n, _ in funcs]}")
    return funcs[0]


def read_kernel(build, artifact=None, prim_func=None) -> KernelSpec:
    """Build the KernelSpec of one registry Build from its lowered artifact."""
    from kda_kernels import registry
    from tilelang import tvm
    from tvm import tirx

    art = artifact if artifact is not None else registry.lower(build)
    pf = prim_func if prim_func is not None else build.prim_func()

    host_name, host_func = _single_func(art.host_mod)
    dev_symbol, dev_func = _single_func(art.device_mod, "tirx.kernel_launch_params")
    dev_symbol = str(dev_func.attrs.get("global_symbol", dev_symbol))
    launch_tags = [str(t) for t in dev_func.attrs["tirx.kernel_launch_params"]]

    # TMA descriptors, from the host entry's attribute.
    tma_descs: dict[str, TmaDesc] = {}
    tma_attr = host_func.attrs.get("tma_descriptor_args") if host_func.attrs else None
    for dvar, args in (tma_attr.items() if tma_attr is not None else []):
        a = list(args)
        if str(a[0].value if hasattr(a[0], "value") else a[0]) != "__tvm_tensormap_create_tiled":
            raise ValueError(f"unsupported TMA descriptor kind {a[0]}")
        dtype_code, rank = int(a[2]), int(a[3])
        tensor = a[4].name
        rest = a[5:]
        assert len(rest) == 4 * rank + 4, (dvar.name, len(rest))
        dims = tuple(X.simplify(X.from_tir(x)) for x in rest[0:rank])
        strides = tuple(X.simplify(X.from_tir(x)) for x in rest[rank:2 * rank])
        box = tuple(int(x) for x in rest[2 * rank:3 * rank])
        estr = tuple(int(x) for x in rest[3 * rank:4 * rank])
        il, sw, l2, oob = (int(x) for x in rest[4 * rank:])
        tma_descs[dvar.name] = TmaDesc(dvar.name, tensor, dtype_code, rank, dims, strides, box, estr,
                                       il, sw, l2, oob)

    access, tma_store = _device_accesses(dev_func)
    tma_tensors = {d.tensor for d in tma_descs.values()}
    tma_written = {tma_descs[d].tensor for d in tma_store if d in tma_descs}

    # Parameters: names and buffers from the PrimFunc, cross-checked with the artifact.
    params: list[Param] = []
    if len(pf.params) != len(art.params):
        raise ValueError("prim_func and lowered artifact disagree on the parameter count")
    for i, p in enumerate(pf.params):
        buf = pf.buffer_map.get(p)
        kp = art.params[i]
        if buf is None:
            name = p.name
            params.append(ScalarParam(name, str(p.dtype)))
            continue
        name = buf.name
        shape = tuple(X.simplify(X.from_tir(s)) for s in buf.shape)
        kshape = tuple(X.simplify(X.from_tir(s)) for s in kp.shape)
        if len(kshape) != len(shape) or str(kp.dtype) != str(buf.dtype):
            raise ValueError(f"{name}: prim_func and lowered artifact disagree ({kp} vs {buf})")
        if buf.strides:
            strides = tuple(X.simplify(X.from_tir(s)) for s in buf.strides)
        else:
            acc, st = ("int", 1), []
            for s in reversed(shape):
                st.append(acc)
                acc = X.simplify(("mul", acc, s))
            strides = tuple(reversed(st))
        eo = buf.elem_offset
        if not (isinstance(eo, (int, tirx.IntImm)) and int(eo) == 0):
            raise ValueError(f"{name}: non-zero elem_offset not supported")
        acc_info = access.get(name, {"written": False, "vec": 0})
        elem = DTYPE_BYTES[str(buf.dtype)]
        params.append(TensorParam(
            name=name, dtype=str(buf.dtype), shape=shape, strides=strides,
            written=bool(acc_info["written"]) or name in tma_written,
            vec_bytes=max(acc_info["vec"], elem), tma=name in tma_tensors))

    # The launch: kernel args then launch params, in the order the device func declares.
    call = _launch_call(host_func, dev_symbol)
    n_dev = len(dev_func.params)
    cargs = list(call.args[1:1 + n_dev])
    lparams = list(call.args[1 + n_dev:])
    if len(lparams) != len(launch_tags):
        raise ValueError(f"launch params {len(lparams)} vs tags {launch_tags}")
    tensor_names = {p.name for p in params if p.kind == "tensor"}
    scalar_names = {p.name for p in params if p.kind == "scalar"}
    kargs = []
    for dp, a in zip(dev_func.params, cargs):
        ann = str(dp.type_annotation) if dp.type_annotation is not None else ""
        if isinstance(a, tirx.Var) and a.name in tma_descs:
            kargs.append(KernelArg("desc", a.name, "CUtensorMap"))
        elif isinstance(a, tirx.Var) and a.name in tensor_names and str(a.dtype) == "handle":
            kargs.append(KernelArg("ptr", a.name, "void*"))
        elif isinstance(a, tirx.Var) and a.name in scalar_names:
            kargs.append(KernelArg("scalar", a.name, _ctype(str(dp.dtype))))
        else:
            if str(dp.dtype) == "handle":
                raise ValueError(f"unrecognised pointer kernel arg {a} ({ann})")
            kargs.append(KernelArg("scalar", "", _ctype(str(dp.dtype)), X.simplify(X.from_tir(a))))
    launch = {t: X.simplify(X.from_tir(v)) for t, v in zip(launch_tags, lparams)}
    one = ("int", 1)
    grid = tuple(launch.get(f"blockIdx.{c}", one) for c in "xyz")
    block = tuple(launch.get(f"threadIdx.{c}", one) for c in "xyz")
    smem = launch.get("tirx.use_dyn_shared_memory", ("int", 0))

    cfg = build.config
    derived = tuple((v, X.simplify(X.from_py(e))) for v, e in cfg.derived_vars().items())
    pre = tuple((s, X.simplify(X.from_py(s))) for s in cfg.preconditions())
    spre = tuple((s, X.simplify(X.from_py(s))) for s in getattr(cfg, "scalar_preconditions", lambda: [])())
    return KernelSpec(
        stage=build.stage, build_name=build.name, func_name=host_name, symbol=dev_symbol,
        ir_hash=registry.ir_hash(art), params=tuple(params), kernel_args=tuple(kargs),
        grid=grid, block=block, smem=smem, tma=tuple(tma_descs[k] for k in sorted(tma_descs)),
        derived_vars=derived, preconditions=pre, scalar_preconditions=spre,
        kernel_source_sha=hashlib.sha256((art.kernel_source or "").encode()).hexdigest())


def _ctype(dtype: str) -> str:
    return {"int32": "int32_t", "int64": "int64_t", "float32": "float", "float64": "double",
            "uint32": "uint32_t", "bool": "bool"}[dtype]


# ---------------------------------------------------------------------------------------------
# Entries: one kernel, or a K1 and a K2 joined (workspace = buffers K1 writes and K2 reads).


@dataclass(frozen=True)
class Contract:
    """What one family of entries promises its callers beyond what the IR says. Every check on
    these arguments still comes from the IR; the contract only names and orders them.

    args: public tensor arguments in call order (inputs and in-place tensors); the scalars
    follow, then the fresh outputs, then the entry's flags. optional: args a build may lack
    (then they must be None) and must otherwise be given. inplace: tensors the kernel writes that
    the caller owns: checked like inputs, never allocated, and overlapping no other argument.
    no_output: fresh output -> what the message says a build without it does not write.
    contents: the index buffer validate="full" reads ("cu_seqlens", "state_indices" or "")."""
    family: str
    args: tuple
    scalars: tuple
    outputs: tuple
    ir_to_public: tuple = ()     # ((IR name, public name), ...)
    dim_labels: tuple = ()       # ((public name, labels), ...); labels only, values come from the IR
    optional: tuple = ()
    inplace: tuple = ()
    no_output: tuple = ()        # ((output, phrase), ...)
    contents: str = ""

    def public(self, ir_name: str) -> str:
        return dict(self.ir_to_public).get(ir_name, ir_name)

    def labels(self, name: str):
        return dict(self.dim_labels).get(name)

    @property
    def positional(self) -> tuple:
        """The entry's argument names in order, up to (not including) the flags."""
        return self.args + self.scalars + self.outputs


PREFILL = Contract(
    family="prefill",
    args=("q", "k", "v", "g", "beta", "A_log", "dt_bias", "cu_seqlens", "initial_state"),
    scalars=("lower_bound", "scale"),
    outputs=("o", "final_state"),
    ir_to_public=(("h0", "initial_state"), ("ht", "final_state")),
    dim_labels=(
        ("q", ("B", "T", "H", "K")), ("k", ("B", "T", "H", "K")), ("g", ("B", "T", "HV", "K")),
        ("v", ("B", "T", "HV", "V")), ("o", ("B", "T", "HV", "V")), ("beta", ("B", "T", "HV")),
        ("A_log", ("HV",)), ("dt_bias", ("HV", "K")), ("cu_seqlens", ("N + 1",)),
        ("initial_state", ("N", "HV", "V", "K")), ("final_state", ("N", "HV", "V", "K"))),
    optional=("cu_seqlens", "initial_state"),
    no_output=(("final_state", "final state"),),
    contents="cu_seqlens",
)

DECODE = Contract(
    family="decode",
    args=("q", "k", "v", "g", "beta", "A_log", "dt_bias", "state_pool", "state_indices"),
    scalars=("lower_bound", "scale"),
    outputs=("o",),
    ir_to_public=(("pool", "state_pool"),),
    dim_labels=(
        ("q", ("N", "S", "H", "K")), ("k", ("N", "S", "H", "K")), ("g", ("N", "S", "HV", "K")),
        ("v", ("N", "S", "HV", "V")), ("o", ("N", "S", "HV", "V")), ("beta", ("N", "S", "HV")),
        ("A_log", ("HV",)), ("dt_bias", ("HV", "K")), ("state_indices", ("N",)),
        ("state_pool", ("P", "HV", "V", "K"))),
    inplace=("state_pool",),
    contents="state_indices",
)

# The one-token decode builds (DecodeConfig.token_axis False): the same arguments, no token axis.
DECODE_ONE_TOKEN = Contract(
    family="decode",
    args=DECODE.args,
    scalars=DECODE.scalars,
    outputs=DECODE.outputs,
    ir_to_public=DECODE.ir_to_public,
    dim_labels=tuple((name, tuple(d for d in labels if d != "S")) for name, labels in DECODE.dim_labels),
    inplace=DECODE.inplace,
    contents=DECODE.contents,
)

CONTRACTS = {"prefill": PREFILL, "decode": DECODE}

# The prefill contract's tables under their old names.
PUBLIC_INPUTS = PREFILL.args
PUBLIC_SCALARS = PREFILL.scalars
PUBLIC_OUTPUTS = PREFILL.outputs
IR_TO_PUBLIC = dict(PREFILL.ir_to_public)
DIM_LABELS = dict(PREFILL.dim_labels)


@dataclass(frozen=True)
class EntrySpec:
    k1: KernelSpec
    k2: Optional[KernelSpec]   # None: a one-kernel entry
    varlen: bool
    inputs: tuple        # TensorParam with public names, in the contract's args order (present ones)
    outputs: tuple       # TensorParam, public names (fresh unless the caller passes them)
    workspace: tuple     # TensorParam (IR names)
    scalars: tuple       # ScalarParam
    derived_vars: tuple
    preconditions: tuple     # ((source, Expr, varlen_only: bool), ...)
    scalar_preconditions: tuple
    head_dim: int
    contract: Contract = PREFILL
    rest: tuple = ()           # KernelSpecs after K2, in launch order (the sequence split's chain)

    @property
    def kernels(self) -> tuple:
        return (self.k1,) if self.k2 is None else (self.k1, self.k2) + self.rest

    @property
    def key(self) -> str:
        h = hashlib.sha256()
        if self.contract.family != "prefill":
            h.update(self.contract.family.encode())
        for ks in self.kernels:
            h.update(ks.ir_hash.encode())
        for ks in self.kernels:
            h.update(ks.to_json().encode())
        return h.hexdigest()

    @property
    def name(self) -> str:
        return "__".join(ks.build_name for ks in self.kernels)

    def tensor(self, public: str) -> Optional[TensorParam]:
        for p in self.inputs + self.outputs:
            if p.name == public:
                return p
        return None


def _rename(p: TensorParam, name: str) -> TensorParam:
    return TensorParam(name, p.dtype, p.shape, p.strides, p.written, p.vec_bytes, p.tma)


def _merge(a: TensorParam, b: TensorParam) -> TensorParam:
    if a.dtype != b.dtype or a.shape != b.shape or a.strides != b.strides:
        raise ValueError(f"K1 and K2 disagree on buffer {a.name}: {a} vs {b}")
    return TensorParam(a.name, a.dtype, a.shape, a.strides, a.written or b.written,
                       max(a.vec_bytes, b.vec_bytes), a.tma or b.tma)


def _public_params(kspecs, contract: Contract, skip=frozenset()):
    """(inputs, outputs, scalars) of the kernels' parameters under their public names; `skip`
    names workspace buffers and scalar parameters the entry derives from the shapes."""
    merged: dict[str, TensorParam] = {}
    for ks in kspecs:
        for p in ks.params:
            if p.kind == "tensor" and p.name not in skip:
                merged[p.name] = _merge(merged[p.name], p) if p.name in merged else p
    inputs, outputs = [], []
    for n, p in merged.items():
        pub = contract.public(n)
        (outputs if p.written and pub not in contract.inplace else inputs).append(_rename(p, pub))
    for p in inputs:
        if p.name not in contract.args:
            raise ValueError(f"IR input {p.name} has no public argument")
    for p in outputs:
        if p.name not in contract.outputs:
            raise ValueError(f"IR output {p.name} has no public output")
    inputs.sort(key=lambda p: contract.args.index(p.name))
    outputs.sort(key=lambda p: contract.outputs.index(p.name))
    scalars = {}
    for ks in kspecs:
        for p in ks.params:
            if p.kind == "scalar" and p.name not in skip:
                scalars.setdefault(p.name, p)
    for n in scalars:
        if n not in contract.scalars:
            raise ValueError(f"IR scalar {n} has no public argument")
    return inputs, outputs, tuple(scalars[n] for n in contract.scalars if n in scalars)


def _dedup(items):
    out, seen = [], set()
    for src, e in items:
        if src not in seen:
            seen.add(src)
            out.append((src, e))
    return out


def _head_dim(inputs) -> Optional[int]:
    q = next(p for p in inputs if p.name == "q")
    return X.evaluate(q.shape[-1], {}) if q.shape[-1][0] == "int" else None


def join(k1: KernelSpec, k2: KernelSpec, k1_build, k2_build, contract: Contract = PREFILL) -> EntrySpec:
    return chain((k1, k2), (k1_build, k2_build), contract)


def chain(kspecs, builds, contract: Contract = PREFILL, derived: tuple = ()) -> EntrySpec:
    """The entry of kernels launched in order on one stream: K1 and K2, or K1 and the sequence
    split's passes. A buffer one kernel writes and a later one reads is workspace; `derived`
    adds shape variables no kernel derives ((var, Python expression), ...: the split's L and G)."""
    varlen = bool(getattr(builds[0].config, "varlen"))
    if any(bool(getattr(b.config, "varlen")) != varlen for b in builds):
        raise ValueError("the builds of one entry must agree on varlen")
    derived_vars: dict = {}
    for ks in kspecs:
        for v, e in ks.derived_vars:
            if derived_vars.setdefault(v, e) != e:
                raise ValueError(f"{ks.build_name} derives {v} differently: {X.to_text(e)} vs "
                                 f"{X.to_text(derived_vars[v])}")
    for v, e in derived:
        derived_vars[v] = X.simplify(X.from_py(e))

    tensors = [{p.name: p for p in ks.params if p.kind == "tensor"} for ks in kspecs]
    workspace: dict[str, TensorParam] = {}
    for i, ti in enumerate(tensors):
        for n, p in ti.items():
            if not p.written or n in workspace:
                continue
            readers = [t[n] for t in tensors[i + 1:] if n in t]
            if any(r.written for r in readers):
                raise ValueError(f"{kspecs[i].build_name} output {n} is written again by a later kernel")
            if not readers:
                if i + 1 < len(kspecs) and contract.public(n) not in contract.outputs:
                    raise ValueError(f"{kspecs[i].build_name} output {n} is read by no later kernel")
                continue
            w = p
            for r in readers:
                w = _merge(w, r)
            workspace[n] = w
    inputs, outputs, scalars = _public_params(kspecs, contract, skip=set(workspace) | set(derived_vars))

    # Preconditions that only a varlen build states are attributed to cu_seqlens in messages.
    fixed_pre = set()
    for b in builds:
        fixed_pre |= set(type(b.config)(**{**b.config_dict(), "varlen": False}).preconditions())
    pre = [(src, e, varlen and src not in fixed_pre)
           for src, e in _dedup(sum((tuple(ks.preconditions) for ks in kspecs), ()))]
    k1, k2, *rest = kspecs
    return EntrySpec(k1=k1, k2=k2, varlen=varlen, inputs=tuple(inputs), outputs=tuple(outputs),
                     workspace=tuple(workspace.values()), scalars=scalars, derived_vars=tuple(derived_vars.items()),
                     preconditions=tuple(pre),
                     scalar_preconditions=tuple(_dedup(sum((tuple(ks.scalar_preconditions) for ks in kspecs), ()))),
                     head_dim=_head_dim(inputs), contract=contract, rest=tuple(rest))


def single(ks: KernelSpec, contract: Contract) -> EntrySpec:
    """The entry of one kernel."""
    inputs, outputs, scalars = _public_params((ks,), contract)
    return EntrySpec(k1=ks, k2=None, varlen=False, inputs=tuple(inputs), outputs=tuple(outputs), workspace=(),
                     scalars=scalars, derived_vars=ks.derived_vars,
                     preconditions=tuple((src, e, False) for src, e in _dedup(ks.preconditions)),
                     scalar_preconditions=tuple(_dedup(ks.scalar_preconditions)), head_dim=_head_dim(inputs),
                     contract=contract)


def contract_of(build) -> Contract:
    if build.stage != "decode":
        return PREFILL
    return DECODE if build.config.token_axis else DECODE_ONE_TOKEN


def read_entry(*builds) -> EntrySpec:
    if len(builds) == 1:
        return single(read_kernel(builds[0]), contract_of(builds[0]))
    return chain(tuple(read_kernel(b) for b in builds), builds, derived=chain_derived(builds))


def chain_derived(builds) -> tuple:
    """Shape variables an entry of these builds derives beyond its kernels' own: the sequence
    split's segment length L (a scalar parameter of its passes) and count G
    (kda_kernels.configs.split_plan_exprs)."""
    if not any(b.stage == "k2_map" for b in builds):
        return ()
    from kda_kernels.configs import split_plan_exprs
    return split_plan_exprs(next(b.config.chunk for b in builds if b.stage == "k2_map"))
