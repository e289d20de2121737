"""Walk a lowered device PrimFunc and build the explicit `model.Kernel`.

What is modeled:
  - launch extents (blockIdx.*, threadIdx.*), integer kernel parameters (shape vars);
  - every global/shared BufferLoad/BufferStore (vector Ramp indices included) and the
    shared/global operands of tvm_access_ptr-based intrinsics: TMA load/store,
    cp.async, ldmatrix, stmatrix, wgmma (through its descriptor), extern calls;
  - shared sub-buffers of the merged dynamic allocation (byte offset, size, dtype);
  - barriers: tvm_storage_sync (block-wide or named), mbarrier init/arrive/expect_tx/
    wait_parity, TMA completion, fence.proxy.async, mbarrier init fence.
Values read from memory are uninterpreted functions of (index, iterations of enclosing
loops that write the buffer, and for registers the thread id), versioned at every write
in program order; scalar registers written with known values are tracked exactly.
"""
from __future__ import annotations

import itertools
import re
import zlib

import z3

from . import model as M
from . import intrinsics
from .intrinsics import ATOMICS, VECTOR_MEMORY
from .tir import int_value, op_name, short, tirx
from .z3expr import (DTYPE_RANGE, BodyNames, Symbols, Translator, consts_of, eval_condition, is_int_dtype,
                     reads_memory, subterms)

THREAD_TAGS = M.THREAD_TAGS
BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


def dtype_bytes(dt) -> int:
    s = str(dt)
    m = re.match(r"^([a-z]+?)(\d+)?(?:_[a-z0-9]+)?(?:x(\d+))?$", s)
    if s.startswith("bool"):
        return 1
    if m is None:
        raise ValueError(f"unknown dtype {s}")
    bits = int(m.group(2) or 64)
    lanes = int(m.group(3) or 1)
    return max(1, bits * lanes // 8)


# What a helper in a kernel's imported source may contain to count as scalar arithmetic (no
# memory, no ordering): scalar parameters and locals, these functions, and asm statements of these
# PTX operations on register operands, neither volatile nor with a clobber list.
_SCALAR_TYPES = {"float", "double", "int", "unsigned", "uint32_t", "int32_t", "uint64_t", "int64_t"}
_ARITH_FUNCS = {"fmaf", "fminf", "fmaxf", "fabsf", "copysignf", "__fmul_rn", "__fadd_rn", "__fmaf_rn",
                "__int_as_float", "__float_as_int", "__float_as_uint", "__uint_as_float"}
_ARITH_PTX = {"ex2", "rcp", "rsqrt", "sqrt", "tanh", "lg2", "sin", "cos", "mul", "add", "sub", "fma",
              "mov", "cvt", "neg", "abs", "min", "max", "mad", "copysign"}
_C_WORDS = {"return", "const", "asm", "__device__", "__forceinline__", "inline", "static"} | _SCALAR_TYPES


def arithmetic_helpers(source: str) -> frozenset:
    """Names of the functions defined in `source` (a kernel's T.import_source text) that are
    scalar arithmetic: scalar parameters and result, no pointer, array or address, no name but
    their own parameters and locals and _ARITH_FUNCS, and asm only of _ARITH_PTX operations on
    register operands (not volatile, no clobbers). A call to one touches no memory and orders
    nothing; any other extern call may (a user's fence, a barrier in a helper)."""
    out = set()
    for m in re.finditer(r"__device__\s+(?:__forceinline__\s+|inline\s+|static\s+)*(\w+)\s+(\w+)\s*\(([^)]*)\)\s*\{",
                         source):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        depth, i = 1, m.end()
        while i < len(source) and depth:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        body = source[m.end():i - 1]
        names = set()
        ok = ret in _SCALAR_TYPES
        for prm in filter(None, (x.strip() for x in params.split(","))):
            words = prm.replace("const ", "").split()
            ok = ok and len(words) == 2 and words[0] in _SCALAR_TYPES
            names.add(words[-1])
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
        code = re.sub(r'"((?:[^"\\]|\\.)*)"', '""', body)
        code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", code, flags=re.S)
        for decl in re.finditer(r"(?:^|[;{}])\s*(?:const\s+)?(\w+)\s+([\w\s,=.+\-*/()]+?);", code):
            if decl.group(1) in _SCALAR_TYPES:
                names |= {v.split("=")[0].strip() for v in decl.group(2).split(",")}
        ok = ok and not re.search(r"[\[\]&]|->|\bvolatile\b|\b(?:float|int|double|unsigned)\s*\*", code)
        for asm in re.finditer(r"\basm\s*\(([^;]*)\)\s*;", code):
            ok = ok and asm.group(1).count(":") <= 2        # no clobber list
        idents = set(re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r"\b\d[\w.]*", " ", code)))
        ok = ok and idents <= names | _ARITH_FUNCS | _C_WORDS
        for text in strings:
            if text in ("=f", "f", "=r", "r", "=d", "d", "=l", "l"):
                continue
            ops = re.findall(r"(?:^|;)\s*([a-z][a-z0-9]*)(?:\.[\w.]+)?\s", text)
            ok = ok and bool(ops) and all(op in _ARITH_PTX for op in ops) and "%" in text
        if ok:
            out.add(name)
    return frozenset(out)


def _always_exits(stmt) -> bool:
    """Every path through stmt ends in thread_return."""
    if isinstance(stmt, tirx.Evaluate):
        return isinstance(stmt.value, tirx.Call) and op_name(stmt.value) == "tirx.thread_return"
    if isinstance(stmt, tirx.SeqStmt):
        return any(_always_exits(x) for x in stmt.seq)
    if isinstance(stmt, tirx.IfThenElse):
        return stmt.else_case is not None and _always_exits(stmt.then_case) and _always_exits(stmt.else_case)
    if isinstance(stmt, (tirx.AttrStmt, tirx.DeclBuffer)) and getattr(stmt, "body", None) is not None:
        return _always_exits(stmt.body)
    return False


def _scope_kind(scope: str) -> str:
    if scope in ("global", ""):
        return "global"
    if scope in ("shared.barrier", "shared.cluster_barrier"):
        return "barrier"
    if scope.startswith("shared"):
        return "shared"
    if scope.startswith("local.descriptor"):
        return "descriptor"
    return "local"


class Extractor:
    def __init__(self, lowered, preconditions=(), derived=None, monotone=None, name=None, distinct=()):
        self.L = lowered
        self.f = lowered.device_func
        self.syms = Symbols()
        self.env = {}
        self.bufs = {}            # data Var -> BufInfo
        self.by_name = {}         # name -> BufInfo
        self.versions = {}
        self.tracked = {}         # (buffer name, index) -> z3 value
        self.tracked_obl = {}     # (buffer name, index) -> overflow obligations of that value
        self.loops = []
        self.loop_stack = []
        self.cond_stack = []
        # not(c) of each `if c: thread_return()` met outside any loop: every later statement runs
        # only in threads that did not leave there (_if, _site)
        self.exit_conds = []
        self.sites = []
        self.root = M.Block()
        self.block = self.root
        self.unsupported = []
        self.opaque_calls = []
        self.pure_calls = set()   # callees of opaque_calls known pure (Kernel.pure_calls)
        self.import_sources = []  # the C source T.import_source put in the kernel (pragma_import_c)
        self.descs = {}           # descriptor data Var -> dict
        self.cur_text = ""
        self.cur_call = None
        self.reg_inits, self.reg_steps = {}, {}
        self.reg_reads, self.reg_incs, self.reg_init_value = {}, {}, {}
        self.loop_writes = {}
        self.loop_sigs = {}
        self.shape = {}
        self.shape_dtype = {}
        self.blocks = {}
        self.threads = {}
        self.regions = {}
        self.name = name or lowered.name
        self.pre_texts = list(preconditions)
        self.derived = dict(derived or {})
        self.monotone_spec = dict(monotone or {})
        self.distinct_spec = frozenset(distinct or ())
        self.tr = Translator(self.syms, self.env, self._load, self._elect)
        self.tr.ptr_fn = self._access_ptr_generic
        self.tr.addr_fn = self._address_of
        self.tr.call_fn = self._call_expr
        # a free integer variable in device code (a size the kernel never indexes with)
        # is the host-side shape variable of that name
        self.tr.free_fn = lambda v: self._shape_sym(str(v.name))

    # -- entry -----------------------------------------------------------------------
    def run(self) -> M.Kernel:
        f = self.f
        attrs = f.attrs
        for p in f.params:
            if is_int_dtype(p.dtype):
                self.env[p] = self._shape_sym(p.name)
                self.shape_dtype[str(p.name)] = str(p.dtype)
                self.tr.nonneg_vars.add(p)   # shape variables are >= 0 (a precondition fact)
        self._precompute_loop_writes(f.body)
        self._find_registers(f.body)
        self.uniform = _uniform_registers(f, self.readonly_names(f))
        # > 0 while translating a condition as a modeling term away from where the program
        # evaluates it (a uniform register's role tests): its loads are not accesses there
        self.modeling = 0
        readonly_idx = set(int(i) for i in attrs.get("tl.readonly_param_indices", [])) \
            if attrs is not None else set()
        self.readonly = {f.params[i].name for i in readonly_idx if i < len(f.params)}
        self._stmt(f.body)
        k = M.Kernel(
            name=self.name, func_name=str(attrs.get("global_symbol", "")) if attrs else "",
            syms=self.syms, shape=self.shape, blocks=self.blocks, threads=self.threads,
            bufs=self.by_name, root=self.root, sites=self.sites, loops=self.loops,
            unsupported=self.unsupported, opaque_calls=self.opaque_calls,
            pure_calls=frozenset(self.pure_calls | arithmetic_helpers("\n".join(self.import_sources))),
            readonly=self.readonly,
            tma_descs=self.L.tma_descs, layouts=self.L.layouts,
            script_lines=self.L.device_script.splitlines())
        k.dyn_shared_bytes = int(attrs.get("dyn_shared_memory_buf", 0)) if attrs else 0
        k.shared_regions = dict(self.regions)
        amap = attrs.get("tl.smem_alignment_map", None) if attrs else None
        k.alignment_map = {str(a): int(b) for a, b in amap.items()} if amap is not None else {}
        k.source_buffers = {str(b.data.name): b for b in self.L.source_func.buffer_map.values()}
        k.shared_params = self._shared_params()
        k.preconditions = self._preconditions()
        k.precondition_errors = sorted(set(self.precondition_errors))
        k.precondition_texts = list(self.pre_texts)
        k.kernel_variables = sorted(self.known_vars)
        k.monotone = self._monotone()
        k.distinct = self.distinct_spec
        for tag in THREAD_TAGS:
            if tag not in self.threads:
                self.threads[tag] = (self._tid_sym(tag), 1)
        _assign_top(self.root)
        k.extent_defs = _name_extents(k)
        self._resolve_registers(k)
        return k

    @staticmethod
    def readonly_names(f):
        attrs = f.attrs
        idx = set(int(i) for i in attrs.get("tl.readonly_param_indices", [])) if attrs is not None else set()
        return {f.params[i] for i in idx if i < len(f.params)}

    # -- induction registers ------------------------------------------------------------
    def _find_registers(self, body):
        """Scalar integer registers that are set once outside loops and otherwise only
        incremented by constants (TileLang's mbarrier phase counters): their value at a point is
        the initial value plus the increments the thread executed before it (verify.counting)."""
        from tvm.tirx.stmt_functor import post_order_visit
        stores, bad = {}, set()

        def visit(n):
            if isinstance(n, tirx.BufferStore):
                stores.setdefault(n.buffer.data, []).append(n)
            elif isinstance(n, tirx.Call) and op_name(n) in ("tirx.tvm_access_ptr", "tirx.address_of"):
                for x in n.args:
                    if isinstance(x, tirx.Var):
                        bad.add(x)
                    elif isinstance(x, tirx.BufferLoad):
                        bad.add(x.buffer.data)
        post_order_visit(body, visit)
        in_loop = set()

        def loops(n):
            if isinstance(n, (tirx.For, tirx.While)):
                post_order_visit(n.body, lambda m: in_loop.add(m) if isinstance(m, tirx.BufferStore) else None)
        post_order_visit(body, loops)
        self.reg_inits, self.reg_steps = {}, {}
        for data, sts in stores.items():
            b = sts[0].buffer
            if data in bad or not is_int_dtype(b.dtype) or not str(b.scope()).startswith("local") \
                    or str(b.scope()).startswith("local.descriptor"):
                continue
            inits, incs, ok = [], [], True
            for st in sts:
                if len(st.indices) != 1 or int_value(st.indices[0]) is None:
                    ok = False
                    break
                v = st.value
                if int_value(v) is not None and st not in in_loop:
                    inits.append(st)
                elif isinstance(v, tirx.Add) and isinstance(v.a, tirx.BufferLoad) and v.a.buffer.data.same_as(data) \
                        and len(v.a.indices) == 1 and int_value(v.a.indices[0]) == int_value(st.indices[0]) \
                        and int_value(v.b) is not None:
                    incs.append(st)
                else:
                    ok = False
                    break
            if ok and len(inits) == 1 and incs:
                self.reg_inits[data] = int_value(inits[0].value)
                for st in incs:
                    self.reg_steps[st] = int_value(st.value.b)

    def _register_read(self, info):
        """A placeholder for a register's value here; resolved once the program tree is built."""
        m = self._site("mark", "reg_read", extra={"reg": info.name})
        sym = self.syms.int_sym(f"reg:{info.name}@{m.id}", "induction", info.name)
        self.reg_reads[sym.decl().name()] = (info.name, m, sym)
        return sym

    def _resolve_registers(self, k):
        if not self.reg_reads:
            return
        from .counting import Counts
        counts = k.counts = Counts(k)
        pairs = []
        for name, (reg, m, sym) in self.reg_reads.items():
            total = z3.IntVal(self.reg_init_value[reg])
            for inc in self.reg_incs.get(reg, []):
                c = counts.before(inc, m)
                if c is None:
                    total = None
                    break
                total = total + inc.extra["step"] * c
            if total is None:
                self.unsupported.append((m.text, f"value of the counter register {reg}"))
                total = self.syms.fresh(f"{reg}?")
            pairs.append((sym, z3.simplify(total)))
        k.registers = {reg: {"init": v, "incs": self.reg_incs.get(reg, [])} for reg, v in self.reg_init_value.items()}
        k.register_values = {str(sym): val for sym, val in pairs}
        k.placeholders = {n: reg for n, (reg, _, _) in self.reg_reads.items()}
        _substitute_model(k, pairs)

    def _shape_sym(self, name):
        if name not in self.shape:
            self.shape[name] = self.syms.int_sym(name, "shape")
        return self.shape[name]

    def _tid_sym(self, tag):
        return self.syms.int_sym(tag, "thread")

    def _shared_params(self):
        """Groups of tensor parameters bound to one buffer (TileLang makes parameters annotated
        with one shared T.Tensor object a single buffer: the kernel then reads one of them for
        all, and the others are never passed to the device)."""
        src = self.L.source_func
        by_data = {}
        for p in src.params:
            b = src.buffer_map.get(p)
            if b is not None:
                by_data.setdefault(b.data, []).append(str(p.name).removesuffix("_handle"))
        return [names for names in by_data.values() if len(names) > 1]

    def kernel_variables(self):
        """Names a precondition may use: the kernel's integer arguments, the symbolic sizes and
        strides of its tensors in the source signature (B once the device code fixed it), its
        scalar arguments, and the derived variables of the configuration."""
        names = set(self.shape) | set(self.derived)
        src = self.L.source_func
        for p in src.params:
            if p not in src.buffer_map:   # a scalar argument (tensors are named by their shapes)
                names.add(str(p.name))
        for b in src.buffer_map.values():
            for e in list(b.shape) + list(b.strides or []) + [b.elem_offset]:
                if e is None:
                    continue
                from tvm.tirx.stmt_functor import post_order_visit
                post_order_visit(e, lambda n: names.add(str(n.name)) if isinstance(n, tirx.Var) else None)
        return names

    def _preconditions(self):
        ext = self
        known = self.known_vars = self.kernel_variables()
        self.precondition_errors = []

        class Names(dict):
            # a precondition may name a size the device code no longer has (B once it is
            # fixed to 1): it stays a constrained free symbol; any other name is an error
            def __missing__(self, key):
                if key not in known:
                    ext.precondition_errors.append(("name", key))
                return ext._shape_sym(key)

            def __contains__(self, key):
                return True

        names = Names(self.shape)
        out = []
        for text in self.pre_texts:
            try:
                out.append(eval_condition(text, names))
            except (ValueError, KeyError, SyntaxError, TypeError) as err:
                self.precondition_errors.append(("text", f"{text!r}: {err}"))
        for name, s in self.shape.items():
            out.append(s >= 0)
            # an integer kernel argument cannot exceed its type
            hi = DTYPE_RANGE.get(self.shape_dtype.get(name, "int32"))[1]
            out.append(s <= hi)
        return out

    def _monotone(self):
        """Buffers read as monotone sequences (cu_seqlens): uf prefix -> (len sym, last value)."""
        out = {}
        for buf, (length, last) in self.monotone_spec.items():
            if length in self.shape and last in self.shape:
                out[buf] = (self.shape[length], self.shape[last])
        return out

    # -- pre-pass: which buffers each loop writes -----------------------------------
    def _precompute_loop_writes(self, body):
        from tvm.tirx.stmt_functor import post_order_visit

        def writes_of(stmt):
            out = set()

            def v(n):
                if isinstance(n, tirx.BufferStore):
                    out.add(n.buffer.data)
                elif isinstance(n, tirx.Call):
                    name = op_name(n)
                    if name == "tirx.tvm_access_ptr":
                        mask = int_value(n.args[4])
                        if mask is None or mask & 2:
                            out.add(n.args[1])
                    elif name in ("tl.tma_load", "tirx.ptx_cp_async", "tl.ptx_cp_async", "tl.ptx_stmatrix"):
                        pass  # their pointers are tvm_access_ptr with the write bit
            post_order_visit(stmt, v)
            return out

        def visit(n):
            if isinstance(n, (tirx.For, tirx.While)):
                self.loop_writes[n] = writes_of(n)
        post_order_visit(body, visit)

    # -- statements -------------------------------------------------------------------
    def _stmt(self, s):
        if isinstance(s, tirx.SeqStmt):
            for c in s.seq:
                self._stmt(c)
        elif isinstance(s, tirx.AttrStmt):
            if s.attr_key == "thread_extent":
                self._launch(s)
            elif s.attr_key == "pragma_import_c" and isinstance(s.value, tirx.StringImm):
                self.import_sources.append(str(s.value.value))
            self._stmt(s.body)
        elif isinstance(s, tirx.Bind):
            self._guarded_stmt(self._bind, s)
        elif isinstance(s, tirx.DeclBuffer):
            self._buffer(s.buffer)
        elif isinstance(s, tirx.AllocBuffer):
            self._alloc(s.buffer)
        elif isinstance(s, tirx.For):
            self._for(s)
        elif isinstance(s, tirx.IfThenElse):
            self._if(s)
        elif isinstance(s, tirx.Evaluate):
            self.cur_text = short(s, None)
            self._evaluate(s.value)
        elif isinstance(s, tirx.BufferStore):
            self.cur_text = short(s, None)
            self._guarded_stmt(self._store, s)
        elif isinstance(s, tirx.AssertStmt):
            self.cur_text = short(s, None)
            self._guarded_stmt(lambda x: self.tr.expr(x.condition), s)
        elif isinstance(s, tirx.While):
            self.unsupported.append((short(s), "while loop"))
            self._havoc_loop_writes(s)
        else:
            self.unsupported.append((short(s), f"statement {type(s).__name__}"))

    def _guarded_stmt(self, fn, s):
        try:
            fn(s)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError, z3.Z3Exception) as err:
            self.unsupported.append((short(s), f"{type(s).__name__}: {type(err).__name__}: {err}"))
        finally:
            self.tr.guards = []

    def _launch(self, s):
        iv = s.node
        tag = str(iv.thread_tag)
        var = iv.var
        if tag in THREAD_TAGS:
            ext = int_value(s.value)
            if ext is None:
                self.unsupported.append((short(s), "symbolic thread extent"))
                ext = 1024
            if tag not in self.threads:
                self.threads[tag] = (self._tid_sym(tag), ext)
            self.env[var] = self.threads[tag][0]
            self.tr.nonneg_vars.add(var)
        elif tag in BLOCK_TAGS:
            if tag not in self.blocks:
                self.blocks[tag] = (self.syms.int_sym(tag, "block"), self.tr.int(s.value))
            self.env[var] = self.blocks[tag][0]
            self.tr.nonneg_vars.add(var)
        else:
            self.unsupported.append((short(s), f"launch tag {tag}"))

    def _bind(self, s):
        var, value = s.var, s.value
        if isinstance(value, tirx.Call) and op_name(value) == "tirx.handle_add_byte_offset":
            base = self.bufs.get(value.args[0])
            off = int_value(value.args[1])
            dtype = str(var.type_annotation.element_type.dtype)
            name = str(var.name)
            cap = self.L.shared_allocs.get(name)
            info = M.BufInfo(name=name, scope="shared", dtype=dtype, elem_bytes=dtype_bytes(dtype),
                             size=None, base_byte=off, region=base.name if base else "?")
            if cap is not None:
                info.size = z3.IntVal(int(cap[1])) if int_value(cap[1]) is not None else None
                info.size_source = "allocation"
                if cap[0] != dtype:
                    info.size = z3.IntVal(int(cap[1]) * dtype_bytes(cap[0]) // info.elem_bytes)
            if off is None:
                self.unsupported.append((short(s), "symbolic shared-memory offset"))
            self._register(var, info)
            return
        self.cur_text = short(s, None)
        if is_int_dtype(var.dtype) or str(var.dtype) == "bool":
            saved = self.tr.obligations
            self.tr.obligations = []
            self.env[var] = self.tr.expr(value)
            self.tr.var_obligations[var] = self.tr.obligations
            self.tr.obligations = saved
        else:
            self.tr.expr(value)  # record loads

    def _register(self, data_var, info):
        self.bufs[data_var] = info
        if info.name in self.by_name and self.by_name[info.name] is not info:
            info.name = f"{info.name}@{len(self.by_name)}"
        self.by_name[info.name] = info

    def _buffer(self, buf):
        """DeclBuffer / inline Buffer: fill in the size of the buffer its data points at. A
        kernel argument's size is its tensor's in the signature, in unbounded integers: a
        flattened declaration can overflow int32 in the IR, and a view (T.Tensor(shape, A.data))
        may claim more than the tensor behind it holds."""
        data = buf.data
        info = self.bufs.get(data)
        if info is None and str(_scope_kind(str(buf.scope()))) == "global":
            info = self._param_buffer(data)
        elems = 1
        for x in buf.shape:
            elems = elems * x
        if info is None:
            scope = str(buf.scope())
            kind = _scope_kind(scope)
            dt = str(buf.dtype)
            info = M.BufInfo(name=str(data.name), scope=kind, dtype=dt, elem_bytes=dtype_bytes(dt),
                             size=self.tr.int(elems), size_source="declaration")
            if kind == "global":
                info.readonly = str(data.name) in self.readonly
            self._register(data, info)
        elif info.size is None:
            sz = self.tr.int(elems)
            if dtype_bytes(buf.dtype) != info.elem_bytes:
                sz = sz * dtype_bytes(buf.dtype) / info.elem_bytes
            info.size = sz
            info.size_source = "declaration"
        return info

    def _alloc(self, buf):
        scope = str(buf.scope())
        kind = _scope_kind(scope)
        dt = str(buf.dtype)
        elems = 1
        for x in buf.shape:
            elems = elems * x
        name = str(buf.data.name)
        info = M.BufInfo(name=name, scope=kind, dtype=dt, elem_bytes=dtype_bytes(dt),
                         size=self.tr.int(elems), size_source="allocation")
        if kind == "shared":
            nbytes = int_value(elems)
            info.base_byte = 0
            info.region = name
            self.regions[name] = (nbytes * info.elem_bytes if nbytes is not None else None, scope)
        self._register(buf.data, info)

    def _param_buffer(self, data):
        """A global tensor the device code only reaches through pointers: its size comes
        from the kernel's signature (shape variables matched by name)."""
        if not any(data.same_as(p) for p in self.f.params):
            return None
        known = self.by_name.get(str(data.name))
        if known is not None and known.scope == "global" and known.size_source == "signature":
            self.bufs[data] = known      # first met as a TMA box's tensor (_global_by_name)
            return known
        return self._signature_buffer(str(data.name), data)

    def _signature_buffer(self, name, data=None):
        """A global BufInfo for the kernel's tensor `name`, sized from the signature and registered
        under `data` (the device variable; by default the signature's own); None if no such tensor."""
        src = {str(b.data.name): b for b in self.L.source_func.buffer_map.values()}.get(name)
        if src is None:
            return None
        elems = z3.IntVal(1)
        for x in src.shape:
            elems = elems * self._by_name_int(x)
        dt = str(src.dtype)
        info = M.BufInfo(name=name, scope="global", dtype=dt, elem_bytes=dtype_bytes(dt), size=elems,
                         size_source="signature", readonly=name in self.readonly)
        self._register(src.data if data is None else data, info)
        return info

    def _by_name_int(self, e):
        if isinstance(e, (tirx.IntImm, int)):
            return z3.IntVal(int_value(e))
        if isinstance(e, tirx.Var):
            return self._shape_sym(str(e.name))
        tr = Translator(self.syms, {}, lambda x: None, self._elect)
        tr.free_fn = lambda v: self._shape_sym(str(v.name))
        return tr.int(e)

    def _buf_of(self, buf):
        info = self.bufs.get(buf.data)
        if info is None:
            info = self._buffer(buf)
        return info

    # -- control flow ---------------------------------------------------------------
    def _push_item(self, item):
        item.parent = self.block
        item.pos = len(self.block.items)
        self.block.items.append(item)

    def _for(self, s):
        writes = self.loop_writes.get(s, set())
        lo = self.tr.int(s.min)
        ext = self.tr.int(s.extent)
        if s.step is not None and int_value(s.step) not in (None, 1):
            self.unsupported.append((short(s), "loop step != 1"))
        var = s.loop_var
        # names stable across builds that differ elsewhere, so the solver cache carries over
        sig = (str(var.name), str(s.min), str(s.extent), len(self.loop_stack))
        self.loop_sigs[sig] = self.loop_sigs.get(sig, -1) + 1
        uniq = f"{var.name}#{len(self.loop_stack)}.{zlib.crc32(repr(sig[1:3]).encode()) % 10**6}.{self.loop_sigs[sig]}"
        loop = M.Loop(id=len(self.loops), var=str(var.name),
                      sym=self.syms.int_sym(uniq, "loop", str(var.name)),
                      lo=lo, extent=ext, kind=str(s.kind), depth=len(self.loop_stack))
        self.loops.append(loop)
        self.env[var] = loop.sym
        if self.tr._sign(s.min) >= 0:
            self.tr.nonneg_vars.add(var)
        self._bump(writes)
        node = M.LoopNode(loop=loop, body=M.Block())
        node.body.owner = node
        self._push_item(node)
        outer = self.block
        self.block = node.body
        self.loop_stack.append((loop, writes))
        self._stmt(s.body)
        self.loop_stack.pop()
        self.block = outer
        self._bump(writes)

    def _havoc_loop_writes(self, s):
        self._bump(self.loop_writes.get(s, set()))

    def _bump(self, data_vars):
        for dv in data_vars:
            info = self.bufs.get(dv)
            name = info.name if info is not None else str(dv.name)
            self.versions[name] = self.versions.get(name, 0) + 1
            for key in [k for k in self.tracked if k[0] == name]:
                del self.tracked[key]

    def _if(self, s):
        self.cur_text = "if " + short(s.condition)
        self.tr.guards = []
        c = self.tr.bool(s.condition)
        node = M.IfNode(cond=c, then=M.Block(), else_=M.Block(), text=self.cur_text)
        node.then.owner = node
        node.then.branch = "then"
        node.else_.owner = node
        node.else_.branch = "else"
        self._push_item(node)
        outer = self.block
        before = dict(self.tracked)
        self.cond_stack.append((c, len(self.loop_stack)))
        self.block = node.then
        self._stmt(s.then_case)
        after_then = self.tracked
        self.cond_stack[-1] = (z3.Not(c), len(self.loop_stack))
        self.block = node.else_
        self.tracked = dict(before)
        if s.else_case is not None:
            self._stmt(s.else_case)
        after_else = self.tracked
        self.cond_stack.pop()
        if s.else_case is None and not self.loop_stack and _always_exits(s.then_case):
            # the threads that take the branch leave the kernel: what follows runs under not(c),
            # where c includes the conditions of the ifs around this one
            self.exit_conds.append(z3.Not(z3.And([cc for cc, _ in self.cond_stack] + [c])))
        self.block = outer
        merged = {}
        for key in set(after_then) & set(after_else):
            a, b = after_then[key], after_else[key]
            merged[key] = a if a.eq(b) else z3.If(c, a, b)
        self.tracked = merged

    # -- sites ------------------------------------------------------------------------
    def _site(self, kind, op, **kw) -> M.Site:
        guards = list(getattr(self.tr, "guards", []) or [])
        conds = list(self.exit_conds) + [c for c, _ in self.cond_stack] + guards
        depths = [0] * len(self.exit_conds) + [d for _, d in self.cond_stack] + [len(self.loop_stack)] * len(guards)
        site = M.Site(id=len(self.sites), kind=kind, op=op,
                      loops=tuple(l for l, _ in self.loop_stack), conds=tuple(conds),
                      cond_depths=tuple(depths),
                      text=self.cur_text, top=-1, **kw)
        self._push_item(site)
        self.sites.append(site)
        return site

    def _linear_tid(self):
        t, mul = z3.IntVal(0), 1
        for tag in THREAD_TAGS:
            if tag in self.threads:
                sym, ext = self.threads[tag]
                t = t + sym * mul
                mul *= ext
        return t

    def _elect(self, n):
        tx = self.threads.get("threadIdx.x", (None,))[0]
        if tx is None:
            return self.syms.fresh("elect", "bool")
        lin = tx
        if n in (None, 0):
            return lin == 0
        return lin % n == 0

    def _index_parts(self, idx):
        """(first element term, lanes, stride) of a flat index, Ramp included."""
        if isinstance(idx, tirx.Ramp):
            stride = int_value(idx.stride)
            lanes = int_value(idx.lanes)
            if stride is None or lanes is None:
                self.unsupported.append((self.cur_text, "symbolic ramp"))
                stride, lanes = 1, 1
            return self.tr.int(idx.base), lanes, stride
        return self.tr.int(idx), 1, 1

    def _access(self, info, idx_expr, write, op):
        """Record a BufferLoad/BufferStore on global/shared memory."""
        saved = self.tr.obligations
        self.tr.obligations = []
        first, lanes, stride = self._index_parts(idx_expr)
        obl = self.tr.obligations
        self.tr.obligations = saved
        count = (lanes - 1) * abs(stride) + 1
        if stride < 0:
            first = first - (lanes - 1) * abs(stride)
        return self._site("access", op, buf=info, index=first, count=z3.IntVal(count), lanes=lanes,
                          stride=stride, read=not write, write=write, obligations=obl,
                          extra={"elem_bytes": info.elem_bytes})

    def _load(self, e):
        info = self._buf_of(e.buffer)
        if len(e.indices) != 1:
            self.unsupported.append((self.cur_text, "multi-dimensional access"))
            return None
        idx = e.indices[0]
        scalar = (is_int_dtype(e.dtype) or str(e.dtype) == "bool") and e.dtype.lanes == 1 \
            and not isinstance(idx, tirx.Ramp)
        if info.scope in ("global", "shared") and self.modeling:
            saved = self.tr.obligations
            self.tr.obligations = None
            it = self._index_parts(idx)[0]   # a term of the model, not an access at this point
            self.tr.obligations = saved
        elif info.scope in ("global", "shared"):
            it = self._access(info, idx, False, "load").index
        elif info.scope == "barrier" or not scalar:
            if not scalar and info.scope not in ("barrier",):
                saved = self.tr.obligations
                self.tr.obligations = None
                self._index_parts(idx)   # loads inside the index
                self.tr.obligations = saved
            return None
        else:
            saved = self.tr.obligations
            self.tr.obligations = None
            it = self.tr.int(idx)
            self.tr.obligations = saved
        if not scalar:
            return None
        if e.buffer.data in self.reg_inits:
            return self._register_read(info)
        c = z3.simplify(it)
        if info.scope == "local" and z3.is_int_value(c):
            tv = self.tracked.get((info.name, c.as_long()))
            if tv is not None:
                # arithmetic that produced the value is part of any index computed from it
                if self.tr.obligations is not None:
                    self.tr.obligations.extend(self.tracked_obl.get((info.name, c.as_long()), []))
                return tv
        return self._uf_value(info, it, str(e.dtype))

    def _uf_value(self, info, idx, dtype):
        args = [idx]
        for loop, writes in self.loop_stack:
            if any(self.bufs.get(dv) is info for dv in writes):
                args.append(loop.sym)
        if info.scope == "local":
            role = next((c for dv, c in self.uniform.items() if self.bufs.get(dv) is info), None)
            if role is None:
                args += [self.threads[t][0] for t in THREAD_TAGS if t in self.threads]
            else:   # the same in threads that agree on the role tests around its stores
                saved = self.tr.obligations
                self.tr.obligations = None
                self.modeling += 1
                try:
                    args += [z3.If(self.tr.bool(c), 1, 0) for c in role]
                finally:
                    self.modeling -= 1
                    self.tr.obligations = saved
        ver = self.versions.get(info.name, 0)
        fname = f"{info.name}@v{ver}/{len(args)}"
        f = self.syms.uf(fname, len(args), dtype, info.scope)
        self.syms.uf_info[fname] = (dtype, info.scope, info.name)
        return f(*args)

    def _store(self, s):
        info = self._buf_of(s.buffer)
        if s.buffer.data in self.reg_inits:
            if s in self.reg_steps:
                inc = self._site("mark", "reg_inc", extra={"reg": info.name, "step": self.reg_steps[s]})
                self.reg_incs.setdefault(info.name, []).append(inc)
            else:
                self.reg_init_value[info.name] = self.reg_inits[s.buffer.data]
                self._site("mark", "reg_init", extra={"reg": info.name})
            return
        if len(s.indices) != 1:
            self.unsupported.append((self.cur_text, "multi-dimensional store"))
            return
        self.tr.guards = []
        if s.predicate is not None:
            if s.predicate.dtype.lanes == 1:
                self.tr.guards.append(self.tr.bool(s.predicate))
        saved = self.tr.obligations
        self.tr.obligations = []
        value = self.tr.expr(s.value)
        value_obl = self.tr.obligations
        self.tr.obligations = saved
        idx = s.indices[0]
        if info.scope in ("global", "shared"):
            self._access(info, idx, True, "store")
        self.tr.guards = []
        ci = None
        if info.scope == "local" and not isinstance(idx, tirx.Ramp):
            saved = self.tr.obligations
            self.tr.obligations = None
            ci = z3.simplify(self.tr.int(idx))
            self.tr.obligations = saved
        self.versions[info.name] = self.versions.get(info.name, 0) + 1
        for key in [k for k in self.tracked if k[0] == info.name]:
            del self.tracked[key]
        if info.scope == "local" and ci is not None and z3.is_int_value(ci) and \
                (is_int_dtype(s.value.dtype) or str(s.value.dtype) == "bool") and s.value.dtype.lanes == 1:
            self.tracked[(info.name, ci.as_long())] = value
            self.tracked_obl[(info.name, ci.as_long())] = value_obl

    # -- intrinsics ------------------------------------------------------------------
    # -- pointers ---------------------------------------------------------------------
    def _pointer(self, e, default_dtype=None):
        """(BufInfo, first element, extent in elements or None, rw mask, element bytes,
        overflow obligations) of a pointer expression; None if it is not one we model."""
        saved = self.tr.obligations
        self.tr.obligations = []
        try:
            r = self._pointer_parts(e, default_dtype)
            obl = self.tr.obligations
        finally:
            self.tr.obligations = saved
        if r is None:
            return None
        info, first, ext, mask, eb = r
        return info, first, ext, mask, eb, obl

    def _pointer_parts(self, e, default_dtype):
        if isinstance(e, tirx.Var):
            info = self.bufs.get(e) or self._param_buffer(e)
            if info is None:
                return None
            return info, z3.IntVal(0), info.size, 3, info.elem_bytes
        if not isinstance(e, tirx.Call):
            return None
        name = op_name(e)
        if name == "tirx.tvm_access_ptr":
            ann, data, off, ext, mask = e.args
            dtype = str(ann.dtype) if hasattr(ann, "dtype") else None
            info = self.bufs.get(data) or self._param_buffer(data)
            if info is None:
                self.unsupported.append((self.cur_text, f"pointer to unknown buffer {data}"))
                return None
            eb = dtype_bytes(dtype) if dtype and dtype != "handle" else info.elem_bytes
            return info, self.tr.int(off), self.tr.int(ext), int_value(mask) or 3, eb
        if name == "tirx.address_of" and e.args and isinstance(e.args[0], tirx.BufferLoad):
            ld = e.args[0]
            info = self._buf_of(ld.buffer)
            if len(ld.indices) != 1:
                return None
            first, _, _ = self._index_parts(ld.indices[0])
            return info, first, None, 3, dtype_bytes(ld.buffer.dtype)
        if name == "tirx.handle_add_byte_offset":
            base = self._pointer_parts(e.args[0], default_dtype)
            if base is None:
                return None
            info, first, ext, mask, eb = base
            off = self.tr.int(e.args[1])
            # count in bytes from here on
            first_b = first * eb + off
            ext_b = ext * eb - off if ext is not None else None
            return info, first_b, ext_b, mask, 1
        return None

    def _ptr(self, call):
        """(BufInfo, first element term, element count term, rw mask, elem bytes, obligations)."""
        p = self._pointer(call)
        if p is None and not (isinstance(call, tirx.Call) and op_name(call) == "tirx.tvm_access_ptr"):
            self.unsupported.append((self.cur_text, f"pointer operand {short(call, 80)}"))
        return p

    def _ptr_site(self, call, op, read, write, async_proxy=False, count=None, **kw):
        p = self._ptr(call)
        if p is None:
            return None
        info, o, ext, mask, eb, obl = p
        if info.scope not in ("global", "shared"):
            return None
        cnt = count if count is not None else ext
        if cnt is None:
            self.unsupported.append((self.cur_text, f"extent of the {op} operand on {info.name}"))
            return None
        return self._site("access", op, buf=info, index=o, count=cnt,
                          read=read, write=write, async_proxy=async_proxy, obligations=obl,
                          extra={"elem_bytes": eb, **kw.pop("extra", {})}, **kw)

    def _access_ptr_generic(self, call):
        """A tvm_access_ptr handed to an opaque call: the callee may touch the whole extent."""
        p = self._pointer(call)
        if p is None:
            return
        info, o, ext, mask, eb, obl = p
        if info.scope in ("global", "shared"):
            self._site("access", "pointer", buf=info, index=o, count=ext, read=bool(mask & 1),
                       write=bool(mask & 2), obligations=obl,
                       extra={"elem_bytes": eb, "opaque": self.cur_call or self.tr.cur_call or "an opaque call"})

    def _address_of(self, call):
        """address_of(buf[i]) handed to an opaque call: the callee may touch any element."""
        arg = call.args[0] if call.args else None
        if isinstance(arg, tirx.BufferLoad):
            info = self._buf_of(arg.buffer)
            if info.scope in ("global", "shared"):
                self.unsupported.append((self.cur_text, f"raw address of {info.name} passed to a call"))

    def _mbar(self, e):
        """(barrier buffer name, index term) of an mbarrier operand."""
        if isinstance(e, tirx.BufferLoad):
            info = self._buf_of(e.buffer)
            if info.scope == "barrier":
                saved = self.tr.obligations
                self.tr.obligations = None
                idx = self.tr.int(e.indices[0])
                self.tr.obligations = saved
                return (info.name, idx)
        self.unsupported.append((self.cur_text, f"mbarrier operand {short(e)}"))
        return None

    # -- calls ------------------------------------------------------------------------
    def _evaluate(self, v):
        self.tr.guards = []
        if not isinstance(v, tirx.Call):
            self.tr.expr(v)
            return
        name = op_name(v)
        try:
            self._call_stmt(name, v)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError, z3.Z3Exception) as err:
            # never crash on a form we do not know: the construct is reported (UNKNOWN)
            self.unsupported.append((self.cur_text, f"{name or 'call'}: {type(err).__name__}: {err}"))
        finally:
            self.tr.guards = []

    def _call_expr(self, e):
        """Translator hook for calls inside expressions; NotImplemented: generic handling."""
        name = op_name(e)
        if name == "tirx.call_extern" and e.args and isinstance(e.args[0], tirx.StringImm) \
                and str(e.args[0].value).startswith("tl::AllReduce<"):
            self._allreduce(str(e.args[0].value), list(e.args[1:]))
            return self.tr._unknown(e, "allreduce")
        if name in ATOMICS or name in VECTOR_MEMORY:
            self._call_stmt(name, e)
            return self.tr._unknown(e, name.split(".")[-1])
        if name in ("tirx.call_extern", "tirx.call_pure_extern") and e.args and isinstance(e.args[0], tirx.StringImm):
            # an extern call inside an expression is an opaque call as much as one in a statement
            callee = str(e.args[0].value)
            if name == "tirx.call_pure_extern":
                self.pure_calls.add(callee)
            self.opaque_calls.append((self.cur_text, callee))
        return NotImplemented

    def _call_stmt(self, name, v):
        a = list(v.args)
        sig = intrinsics.match(v) if name in intrinsics.SIGNATURES else None
        if name in intrinsics.SIGNATURES and sig is None:
            self.unsupported.append((self.cur_text, f"{name} with {len(a)} arguments: form not modelled"))
            for x in a:
                if isinstance(x, tirx.PrimExpr) and not isinstance(x, tirx.StringImm):
                    self.tr.expr(x)
            return
        form, r = sig if sig is not None else (None, None)
        if name == "tirx.tvm_storage_sync":
            scope = a[0].value if isinstance(a[0], tirx.StringImm) else ""
            if scope == "warp":
                return
            if scope not in ("shared", "shared.dyn"):
                self.unsupported.append((self.cur_text, f"sync scope {scope}"))
                return
            nthreads = 1
            for _, ext in self.threads.values():
                nthreads *= ext
            if form == "block":
                self._site("sync", "syncthreads", bar_key=("sync",), bar_count=z3.IntVal(nthreads))
                return
            bid = int_value(r["id"])
            cnt = self.tr.int(r["count"])
            if bid is None:
                self.unsupported.append((self.cur_text, "non-constant named barrier id"))
                return
            key = ("sync",) if bid == 0 else ("named", bid)
            self._site("sync", "named_sync" if bid else "syncthreads", bar_key=key, bar_count=cnt,
                       extra={"id": bid})
        elif name == "tl.named_barrier_arrive":
            bid = int_value(r["id"])
            if bid is None:
                self.unsupported.append((self.cur_text, "non-constant named barrier id"))
                return
            self._site("sync", "named_arrive", bar_key=("sync",) if bid == 0 else ("named", bid),
                       bar_count=self.tr.int(r["count"]), extra={"id": bid})
        elif name == "tirx.ptx_init_barrier_thread_count":
            mb = self._mbar(r["mbar"])
            if mb:
                self._site("mbar", "init", mbar=mb, bar_count=self.tr.int(r["count"]))
        elif name == "tl.ptx_fence_barrier_init":
            self._site("fence", "fence_init")
        elif name == "tirx.ptx_arrive_barrier":
            mb = self._mbar(r["mbar"])
            if mb:
                self._site("mbar", "arrive", mbar=mb)
        elif name == "tl.ptx_cp_async_barrier_noinc":
            # cp.async.mbarrier.arrive.noinc: one of the barrier's expected arrivals, made when
            # every cp.async this thread issued before it has completed
            mb = self._mbar(r["mbar"])
            if mb:
                self._site("mbar", "arrive", mbar=mb, extra={"cp_async": True})
        elif name == "tirx.ptx_arrive_barrier_expect_tx":
            if form != "arrive_tx":
                self.unsupported.append((self.cur_text, f"{name}: cluster form"))
                return
            mb = self._mbar(r["mbar"])
            if mb:
                self._site("mbar", "arrive_expect_tx", mbar=mb, tx_bytes=self.tr.int(r["bytes"]))
        elif name == "tl.mbarrier_expect_tx":
            mb = self._mbar(r["mbar"])
            if mb:
                self._site("mbar", "expect_tx", mbar=mb, tx_bytes=self.tr.int(r["bytes"]))
        elif name == "tl.mbarrier_wait_parity":
            mb = self._mbar(r["mbar"])
            if mb:
                self._site("mbar", "wait", mbar=mb, parity=self.tr.int(r["parity"]))
        elif name in ("tl.ptx_arrive_cluster_barrier", "tl.tma_load_2sm", "tl.tcgen05_mma_arrive",
                      "tirx.ptx_cp_async_barrier", "tl.tma_load_multicast",
                      "tl.tma_load_im2col", "tl.tma_load_gather4", "tl.tma_store_scatter4", "tl.ptx_st_bulk_shared",
                      "tl.tma_store_cluster", "tl.ptx_cluster_store", "tirx.ptx_cp_async_bulk"):
            self.unsupported.append((self.cur_text, f"{name}: not modelled"))
        elif name == "tl.fence_proxy_async":
            self._site("fence", "proxy_async")
        elif name == "tl.tma_load":
            self._tma_load(form, r)
        elif name == "tl.tma_store":
            self._tma_store(form, r)
        elif name in ("tl.ptx_ldmatrix", "tl.ptx_stmatrix"):
            num = int_value(r["num"]) or 1
            if name == "tl.ptx_stmatrix":
                for x in r["values"]:
                    if isinstance(x, tirx.PrimExpr) and not isinstance(x, tirx.StringImm):
                        self.tr.expr(x)
            # lanes 8j..8j+7 give the 16-byte row addresses of matrix j; the others are ignored
            lane = self._linear_tid() % 32
            self.tr.guards = [lane < 8 * num]
            op = "ldmatrix" if name == "tl.ptx_ldmatrix" else "stmatrix"
            self._ptr_site(r["smem"], op, op == "ldmatrix", op == "stmatrix",
                           count=z3.IntVal(16 // self._ptr_eb(r["smem"])),
                           extra={"num": num, "trans": int_value(r["trans"])})
            self.tr.guards = []
        elif name in ("tirx.ptx_cp_async", "tl.ptx_cp_async"):
            self._cp_async(form, r)
        elif name == "tl.initialize_wgmma_descriptor":
            self._wgmma_desc(r)
        elif name == "tl.increase_descriptor_offset":
            d = r["desc"].buffer.data if isinstance(r["desc"], tirx.BufferLoad) else None
            st = self.descs.get(d)
            if st is None:
                self.unsupported.append((self.cur_text, "descriptor offset before initialization"))
            else:
                st["inc"] = st["inc"] + self.tr.int(r["offset"])
        elif name in ("tl.ptx_wgmma_ss", "tl.ptx_wgmma_rs"):
            self._wgmma(form, r)
        elif name in VECTOR_MEMORY:
            width = VECTOR_MEMORY[name]
            write = ".st" in name
            if "pred" in r:
                self.tr.guards = [self.tr.bool(r["pred"])]
            if write:
                self.tr.expr(r["value"])
            eb = self._ptr_eb(r["ptr"])
            self._ptr_site(r["ptr"], "store" if write else "load", not write, write,
                           count=z3.IntVal(max(1, width // eb)), extra={"vector_bytes": width})
            self.tr.guards = []
        elif name in ATOMICS:
            for x in r.get("rest", []):
                if isinstance(x, tirx.PrimExpr) and not isinstance(x, tirx.StringImm):
                    self.tr.expr(x)
            if "value" in r:
                self.tr.expr(r["value"])
            p = self._pointer(r["ptr"])
            if p is None:
                self.unsupported.append((self.cur_text, f"{name} operand"))
                return
            info, o, _, _, eb, obl = p
            if info.scope in ("global", "shared"):
                load_only = name == "tl.atomic_load_elem_op"
                self._site("access", "atomic", buf=info, index=o, count=z3.IntVal(ATOMICS[name]), read=True,
                           write=not load_only, obligations=obl, extra={"elem_bytes": eb, "atomic": True})
        elif name == "tl.set_max_nreg":
            self._site("fence", "setmaxnreg", extra={"regs": int_value(r["regs"]), "inc": int_value(r["inc"])})
        elif name == "tl.no_set_max_nreg":
            self._site("fence", "setmaxnreg", extra={"regs": None, "inc": None})
        elif name in ("tl.warpgroup_arrive", "tl.warpgroup_commit_batch", "tl.warpgroup_wait", "tl.wait_wgmma",
                      "tl.warpgroup_fence_operand", "tl.prefetch_tma_descriptor",
                      "tl.tma_store_arrive", "tl.tma_store_wait", "tirx.ptx_commit_group",
                      "tirx.ptx_wait_group", "tl.sync_warp"):
            if name in ("tl.warpgroup_wait", "tl.wait_wgmma"):
                self._site("fence", "wgmma_wait", extra={"n": int_value(r["n"])})
            elif name == "tl.tma_store_wait":
                self._site("fence", "tma_store_wait", extra={"n": int_value(r["n"])})
            elif name == "tirx.ptx_wait_group":
                self._site("fence", "cp_async_wait", extra={"n": int_value(r["n"])})
            elif name == "tirx.ptx_commit_group":
                self._site("fence", "cp_async_commit")
            elif name == "tl.tma_store_arrive":
                self._site("fence", "tma_store_commit")
            elif name == "tl.warpgroup_commit_batch":
                self._site("fence", "wgmma_commit")
        elif name == "tirx.call_extern" and a and isinstance(a[0], tirx.StringImm) \
                and str(a[0].value).startswith("tl::AllReduce<"):
            self._allreduce(str(a[0].value), a[1:])
        elif name == "tirx.thread_return":
            # After `if c: thread_return()` outside loops, later statements carry not(c) (_if);
            # otherwise they are still modelled as reached by every thread (more executions than the
            # kernel has: sound for bounds and races). barriers.divergence requires the return to be
            # block-uniform, so that no later barrier waits for a thread that has left.
            self._site("exit", "thread_return")
        else:
            if name not in GENERIC_CALLS:
                # an intrinsic this model does not know may wait, fence or touch memory without a
                # pointer argument (tl.wait_wgmma was one until 2.11.0): not proved, UNKNOWN
                self.unsupported.append((self.cur_text, f"intrinsic {name}: its effect on memory and ordering "
                                                        f"is not modelled"))
            self.cur_call = name if name != "tirx.call_extern" or not a else str(getattr(a[0], "value", name))
            if name in ("tirx.call_extern", "tirx.call_pure_extern"):
                if name == "tirx.call_pure_extern" and a and isinstance(a[0], tirx.StringImm):
                    self.cur_call = str(a[0].value)
                    self.pure_calls.add(self.cur_call)
                self.opaque_calls.append((self.cur_text, self.cur_call))
            try:
                self.tr.expr(v)  # generic: loads and pointers inside the arguments
            finally:
                self.cur_call = None

    def _ptr_eb(self, ptr):
        if isinstance(ptr, tirx.Call) and op_name(ptr) == "tirx.tvm_access_ptr":
            ann = ptr.args[0]
            if hasattr(ann, "dtype"):
                return dtype_bytes(str(ann.dtype))
        p = self._pointer(ptr)
        return p[4] if p is not None else 2

    def _allreduce(self, name, args):
        """tl::AllReduce<Reducer, threads, scale, thread_offset, Barrier[, batch, stride]>::run(x, red_buf)
        (src/tl_templates/cuda/reduce.h): a butterfly over offsets threads/2 .. scale; a level with
        offset >= 32 goes through red_buf between two barriers (Barrier::sync<1>, sync<2>), the others
        are warp shuffles."""
        m = re.match(r"tl::AllReduce<(.*)>::(run|run_batch)$", name)
        parts = _template_args(m.group(1)) if m else None
        if not parts or len(parts) < 4:
            self.unsupported.append((self.cur_text, f"AllReduce form {name}"))
            return
        try:
            threads, scale, offset0 = int(parts[1]), int(parts[2]), int(parts[3])
            batch = int(parts[5]) if len(parts) > 5 else 1
            stride = int(parts[6]) if len(parts) > 6 else 0
        except ValueError:
            self.unsupported.append((self.cur_text, f"AllReduce parameters {name}"))
            return
        barrier = parts[4] if len(parts) > 4 else "tl::SyncThreadsBarrier"
        bm = re.match(r"tl::NamedBarrier<(\d+)>", barrier)
        for x in args[:1]:
            if isinstance(x, tirx.PrimExpr):
                self.tr.expr(x)
        ws = self._pointer(args[1]) if len(args) > 1 else None
        tid = self.threads.get("threadIdx.x", (z3.IntVal(0), 1))[0]
        lin = tid - offset0
        offset = threads // 2
        text = self.cur_text
        while offset >= scale and offset >= 1:
            if offset >= 32:
                if ws is None:
                    self.unsupported.append((text, f"{name} without a workspace"))
                    return
                info, base, _, _, eb, obl = ws
                for phase in (1, 2):
                    if bm:
                        self._site("sync", "named_sync", bar_key=("named", phase), bar_count=z3.IntVal(int(bm.group(1))),
                                   extra={"id": phase, "allreduce": True})
                    else:
                        self._site("sync", "syncthreads", bar_key=("sync",),
                                   bar_count=z3.IntVal(self._num_threads()), extra={"allreduce": True})
                    partner = z3.If((lin / offset) % 2 == 0, lin + offset, lin - offset)
                    for i in range(batch):
                        idx = base + (lin if phase == 1 else partner) + i * stride
                        self._site("access", "store" if phase == 1 else "load", buf=info, index=idx,
                                   count=z3.IntVal(1), read=phase == 2, write=phase == 1, obligations=list(obl),
                                   extra={"elem_bytes": eb, "allreduce": name})
            if offset == scale:
                break
            offset //= 2

    def _num_threads(self):
        n = 1
        for _, ext in self.threads.values():
            n *= ext
        return n

    def _tma_load(self, form, r):
        mb = self._mbar(r["mbar"]) if not (isinstance(r["mbar"], tirx.IntImm)) else None
        if form == "bulk":
            nbytes = int_value(r["bytes"])
            self.tr.expr(r["bytes"])
            g = self._pointer(r["gmem"])
            src = None
            if g is not None and g[0].scope == "global":
                info, o, _, _, eb, obl = g
                src = self._site("access", "tma_load_src", buf=info, index=o,
                                 count=self.tr.int(r["bytes"]) / eb, read=True, write=False, obligations=obl,
                                 extra={"elem_bytes": eb})
            eb = self._ptr_eb(r["smem"])
            s = self._ptr_site(r["smem"], "tma_load", False, True, async_proxy=True,
                               count=self.tr.int(r["bytes"]) / eb, extra={"desc": None, "bulk": True})
            if s is not None:
                s.mbar = mb
                s.tx_bytes = self.tr.int(r["bytes"])
                s.extra["tx_bytes"] = nbytes
                if src is not None:
                    src.extra["load_site"] = s.id
            return
        desc_var = r["desc"]
        desc = self.L.tma_descs.get(str(getattr(desc_var, "name", "")))
        for x in r["coords"] + [r["eviction"]]:
            if isinstance(x, tirx.PrimExpr) and not isinstance(x, tirx.StringImm):
                self.tr.expr(x)
        nbytes = None
        if desc is not None and desc.kind == "tiled":
            nbytes = 1
            for b in desc.box:
                nbytes *= b
            nbytes *= dtype_bytes_from_code(desc.dtype_code, desc.global_strides[0])
        else:
            self.unsupported.append((self.cur_text, "TMA load without a tiled descriptor"))
        s = self._ptr_site(r["smem"], "tma_load", False, True, async_proxy=True,
                           extra={"desc": desc, "desc_name": str(getattr(desc_var, "name", ""))})
        if s is not None:
            s.mbar = mb
            s.tx_bytes = z3.IntVal(nbytes) if nbytes is not None else None
            s.extra["tx_bytes"] = nbytes
        if desc is not None and desc.kind == "tiled":
            box = self._tma_box(desc, r["coords"], write=False)
            if box is not None and s is not None:
                box.extra["load_site"] = s.id

    def _tma_store(self, form, r):
        if form == "bulk":
            self.tr.expr(r["bytes"])
            g = self._pointer(r["gmem"])
            if g is not None and g[0].scope == "global":
                info, o, _, _, eb, obl = g
                self._site("access", "tma_store_dst", buf=info, index=o,
                           count=self.tr.int(r["bytes"]) / eb, read=False, write=True, obligations=obl,
                           extra={"elem_bytes": eb})
            eb = self._ptr_eb(r["smem"])
            self._ptr_site(r["smem"], "tma_store", True, False, async_proxy=True,
                           count=self.tr.int(r["bytes"]) / eb, extra={"desc": None, "bulk": True})
            return
        desc_var = r["desc"]
        desc = self.L.tma_descs.get(str(getattr(desc_var, "name", "")))
        for x in r["coords"]:
            if isinstance(x, tirx.PrimExpr) and not isinstance(x, tirx.StringImm):
                self.tr.expr(x)
        self._ptr_site(r["smem"], "tma_store", True, False, async_proxy=True,
                       extra={"desc": desc, "desc_name": str(getattr(desc_var, "name", ""))})
        if desc is not None and desc.kind == "tiled":
            self._tma_box(desc, r["coords"], write=True)

    def _tma_box(self, desc, coords, write):
        """The global side of a tiled TMA store or load: the box [coord_i, coord_i + box_i) of each
        dimension, clipped to [0, dim_i), of the descriptor's tensor (barriers.global_race compares
        it with other blocks' accesses; bounds.tma keeps the descriptor inside the tensor). Returns
        its site, or None where the tensor or coordinates are not known."""
        info = self._global_by_name(desc.tensor)
        what = "store into" if write else "load from"
        if info is None or len(coords) < desc.rank:
            self.unsupported.append((self.cur_text, f"TMA {what} {desc.tensor}: its tensor or coordinates"))
            return
        eb = dtype_bytes_from_code(desc.dtype_code, desc.global_strides[0])
        return self._site("access", "tma_store_box" if write else "tma_load_box", buf=info, index=z3.IntVal(0),
                   count=z3.IntVal(0), read=not write, write=write, extra={"box_coords": [self.tr.int(c) for c in coords[:desc.rank]],
                                      "box_dims": [self._by_name_int(x) for x in desc.global_dims],
                                      "box_strides": [z3.IntVal(eb)] + [self._by_name_int(x)
                                                                         for x in desc.global_strides[1:]],
                                      "box": [int(b) for b in desc.box], "elem_bytes": eb, "desc": desc})

    def _global_by_name(self, name):
        """The global buffer of the kernel's tensor `name` (its signature), registered once."""
        known = self.by_name.get(name)
        if known is not None and known.scope == "global":
            return known
        return self._signature_buffer(name)

    def _cp_async(self, form, r):
        if "pred" in r:
            self.tr.guards = [self.tr.bool(r["pred"])]
        n = int_value(r.get("bytes", r.get("elems")))
        src = self._ptr(r["src"])
        dst = self._ptr(r["dst"])
        if n is None or src is None or dst is None:
            self.unsupported.append((self.cur_text, "cp.async operands"))
            return
        if form.startswith("elems"):
            dcount, scount = z3.IntVal(n), z3.IntVal(n)
        else:  # builtin form: byte count
            dcount, scount = z3.IntVal(n // dst[4]), z3.IntVal(n // src[4])
        for (info, o, _, _, eb, obl), cnt, write in ((src, scount, False), (dst, dcount, True)):
            if info.scope in ("global", "shared"):
                self._site("access", "cp_async", buf=info, index=o, count=cnt, read=not write, write=write,
                           obligations=obl, async_proxy=write and info.scope == "shared",
                           extra={"elem_bytes": eb})
        self.tr.guards = []

    def _wgmma_desc(self, r):
        d = r["desc"].buffer.data if isinstance(r["desc"], tirx.BufferLoad) else None
        p = self._ptr(r["ptr"])
        if d is None or p is None:
            self.unsupported.append((self.cur_text, "wgmma descriptor"))
            return
        info, o, ext, mask, eb, obl = p
        self.descs[d] = {"buf": info, "off": o, "ext": ext, "eb": eb, "layout": int_value(r["layout"]),
                         "lbo": int_value(r["lbo"]), "sbo": int_value(r["sbo"]), "inc": z3.IntVal(0),
                         "text": self.cur_text, "obl": obl}

    def _wgmma(self, form, r):
        shape = r["shape"].value if isinstance(r["shape"], tirx.StringImm) else ""
        m = re.match(r"m(\d+)n(\d+)k(\d+)", shape)
        if not m:
            self.unsupported.append((self.cur_text, f"wgmma shape {shape}"))
            return
        M_, N_, K_ = (int(x) for x in m.groups())
        b_kmajor = bool(int_value(r["b_kmajor"]))
        ops = [("B", r["b_desc"], r["b_off"], N_, b_kmajor)]
        if form == "ss":
            ops.insert(0, ("A", r["a_desc"], r["a_off"], M_, bool(int_value(r["a_kmajor"]))))
        # the accumulator (and an A operand in registers) are registers: no shared access
        for x in (r["c_off"], r.get("a_off")):
            if isinstance(x, tirx.PrimExpr):
                self.tr.expr(x)
        for which, dvar, off, rows, kmajor in ops:
            st = self.descs.get(dvar)
            if st is None:
                self.unsupported.append((self.cur_text, f"wgmma operand {which} without descriptor"))
                continue
            info = st["buf"]
            start = st["off"] * st["eb"] + st["inc"] + self.tr.int(off) * 16  # bytes from buffer start
            lo, span, note = wgmma_footprint(start, rows, st["eb"], K_, kmajor, st["layout"], st["lbo"], st["sbo"])
            if lo is None:
                self.unsupported.append((self.cur_text, note))
                continue
            s = self._site("access", "wgmma", buf=info, index=lo, count=z3.IntVal(span), read=True,
                           write=False, async_proxy=True, obligations=list(st["obl"]),
                           extra={"elem_bytes": 1, "operand": which, "layout": st["layout"],
                                  "desc_start": start, "kmajor": kmajor, "rows": rows,
                                  "desc_text": st["text"], "form": form})
            s.extra["byte_addressed"] = True


def _template_args(text):
    """Split the top-level comma-separated arguments of a C++ template argument list."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def dtype_bytes_from_code(code: int, elem_stride) -> int:
    """Element size of a CUtensorMap data type; falls back to the descriptor's innermost stride."""
    table = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}
    v = int_value(elem_stride)
    if v is not None:
        return v
    return table.get(int(code), 1)


SWIZZLE_BYTES = {1: 128, 2: 64, 3: 32}


def wgmma_footprint(start, rows, eb, k, kmajor, layout, lbo, sbo):
    """Byte range [lo, lo+span) that one wgmma reads through a shared-memory descriptor.

    start is the descriptor's start address (bytes from the buffer), rows the operand's
    M or N extent, k the instruction K. Returns (lo term, span int, note).
    """
    if layout is None or lbo is None or sbo is None:
        return None, 0, "non-constant wgmma descriptor fields"
    kbytes = k * eb
    if layout in SWIZZLE_BYTES:
        W = SWIZZLE_BYTES[layout]
        if kmajor:
            # rows in 8-row atoms of W-byte lines at stride SBO; the k slice stays in its line
            lo = start - (start % W)
            span = (rows // 8 - 1) * sbo * 16 + 8 * W
            return lo, span, ""
        # MN-major: W-byte atoms along MN at stride LBO, 8-row K groups at stride SBO
        n_mn = max(1, rows * eb // W)
        k_groups = max(1, k // 8)
        span = (n_mn - 1) * lbo * 16 + (k_groups - 1) * sbo * 16 + 8 * W
        return start, span, ""
    if layout == 0:
        if kmajor:
            span = (rows // 8 - 1) * sbo * 16 + (max(1, kbytes // 16) - 1) * lbo * 16 + 128
            return start, span, ""
        step = max(lbo, sbo) * 16
        span = (max(1, rows * eb // 16) - 1) * step + (max(1, k // 8) - 1) * step + 128
        return start, span, ""
    return None, 0, f"wgmma layout type {layout}"


def _assign_top(root: M.Block):
    for i, item in enumerate(root.items):
        _set_top(item, i)


def _set_top(item, i):
    if isinstance(item, M.Site):
        item.top = i
    elif isinstance(item, M.LoopNode):
        for x in item.body.items:
            _set_top(x, i)
    elif isinstance(item, M.IfNode):
        for x in itertools.chain(item.then.items, item.else_.items):
            _set_top(x, i)


_PURE_THREAD = ("tl.tl_shuffle_elect", "tl.shfl_sync", "tl.shfl_xor_sync", "tl.shfl_down_sync",
                "tl.shfl_up_sync", "tl.get_lane_idx", "tl.get_warp_idx", "tl.get_warp_idx_sync",
                "tl.get_warp_group_idx", "tl.ballot_sync", "tl.ballot", "tl.activemask", "tirx.tvm_warp_shuffle")


def _uniform_registers(f, readonly):
    """Local registers whose value depends on the thread at most through role tests: every
    store writes a value computed from constants, block ids, kernel arguments, uniform loop
    indices, read-only global memory at uniform indices and other such registers, under
    conditions that are either uniform or tests of the thread id alone (`tx < 128`).
    Returns {register data var: [role tests enclosing its stores]} (a fixed point over the
    kernel); two threads that agree on those tests hold the same value."""
    from tvm.tirx.stmt_functor import post_order_visit
    thread_vars, dep_vars, dep_bufs = set(), set(), set()
    roles = {}
    changed = [True]

    def refs(e):
        out = {"thread": False, "dep": False}

        def v(n):
            if isinstance(n, tirx.Var):
                if n in thread_vars:
                    out["thread"] = True
                elif n in dep_vars:
                    out["dep"] = True
            elif isinstance(n, tirx.BufferLoad):
                sc = str(n.buffer.scope())
                if n.buffer.data in dep_bufs or sc.startswith("shared") \
                        or (sc in ("global", "") and n.buffer.data not in readonly):
                    out["dep"] = True
                elif sc.startswith("local"):
                    out["dep"] = out["dep"] or n.buffer.data in dep_bufs
            elif isinstance(n, tirx.Call) and op_name(n) in _PURE_THREAD:
                out["thread"] = True
        post_order_visit(e, v)
        return out

    def dependent(e):
        r = refs(e)
        return r["thread"] or r["dep"]

    def mark(coll, x):
        if x not in coll:
            coll.add(x)
            changed[0] = True

    def walk(s, conds, bad):
        if isinstance(s, tirx.SeqStmt):
            for c in s.seq:
                walk(c, conds, bad)
        elif isinstance(s, tirx.AttrStmt):
            if s.attr_key == "thread_extent" and str(s.node.thread_tag).startswith("threadIdx"):
                thread_vars.add(s.node.var)
            walk(s.body, conds, bad)
        elif isinstance(s, tirx.Bind):
            if dependent(s.value):
                mark(dep_vars, s.var)
        elif isinstance(s, tirx.For):
            d = bad or dependent(s.min) or dependent(s.extent)
            if d:
                mark(dep_vars, s.loop_var)
            walk(s.body, conds, d)
        elif isinstance(s, tirx.While):
            walk(s.body, conds, True)
        elif isinstance(s, tirx.IfThenElse):
            r = refs(s.condition)
            if r["dep"]:
                walk(s.then_case, conds, True)
                if s.else_case is not None:
                    walk(s.else_case, conds, True)
            elif r["thread"]:
                walk(s.then_case, conds + [s.condition], bad)
                if s.else_case is not None:
                    walk(s.else_case, conds + [s.condition], bad)
            else:
                walk(s.then_case, conds, bad)
                if s.else_case is not None:
                    walk(s.else_case, conds, bad)
        elif isinstance(s, tirx.BufferStore):
            if str(s.buffer.scope()).startswith("local"):
                if bad or dependent(s.value) or any(dependent(i) for i in s.indices):
                    mark(dep_bufs, s.buffer.data)
                else:
                    known = roles.setdefault(s.buffer.data, [])
                    for c in conds:
                        if not any(c.same_as(x) for x in known):
                            known.append(c)
        elif isinstance(s, tirx.Evaluate):
            # a register handed to a call by pointer may be written with anything
            def v(n):
                if isinstance(n, tirx.Call) and op_name(n) in ("tirx.tvm_access_ptr", "tirx.address_of"):
                    for x in n.args:
                        if isinstance(x, tirx.Var):
                            mark(dep_bufs, x)
                        elif isinstance(x, tirx.BufferLoad):
                            mark(dep_bufs, x.buffer.data)
            post_order_visit(s.value, v)
    while changed[0]:
        changed[0] = False
        walk(f.body, [], False)
    return {b: c for b, c in roles.items() if b not in dep_bufs}


def _name_extents(k):
    """A loop whose trip count is read from memory inside a small constant loop (the sequences a
    program walks: `for q in range(4): for c in range(chunks(cu_seqlens, q))`) gets its trip
    count as an uninterpreted function of the enclosing loop indices, one function for each
    body up to those indices: loop facts (`c < f(q)`) and counts summed over q term by term
    (`f(0) + f(1) + ...`, verify.counting) then name the same values, in every role that walks
    the same sequences, and a query that needs no more than that never sees the loads and their
    clamps. Returns the definitions (name -> (body over ~extent.argI, [~extent.argI])), which
    verify.solver.Ctx.definitions adds to a query that is not UNSAT without them."""
    from .counting import ENUM_LIMIT
    enclosing = {}
    for s in k.sites:
        for i, lp in enumerate(s.loops):
            enclosing.setdefault(lp.id, s.loops[:i])
    defs, names = {}, BodyNames("~extent", simplify=True)
    for lp in k.loops:
        outer = enclosing.get(lp.id, ())
        small = any(z3.is_int_value(e) and e.as_long() <= ENUM_LIMIT for e in (z3.simplify(o.extent) for o in outer))
        if not small or not any(reads_memory(x, k.syms.uf_info) for x in subterms(lp.extent, set())):
            continue
        free = consts_of(lp.extent)
        # every symbol a query may rename (block, thread and loop indices) is an argument:
        # the enclosing loops' indices by depth, then the others by name
        args = [o.sym for o in outer if o.sym.decl().name() in free]
        taken = {a.decl().name() for a in args}
        args += [c for n, c in sorted(free.items()) if n not in taken and k.syms.role.get(n) not in GLOBAL_ROLES]
        app, name, body, holes, fresh = names.name(lp.extent, args)
        if fresh:
            defs[name] = (body, holes)
        lp.extent = app
    return defs


# symbols no query renames per instance (verify.solver.Ctx.instance): the kernel's sizes and
# scalar arguments
GLOBAL_ROLES = ("shape", "param")


def _substitute_model(k, pairs):
    """Replace placeholder symbols everywhere in the model (sites, loops, branch conditions)."""
    def sub(t):
        return z3.substitute(t, *pairs) if isinstance(t, z3.ExprRef) else t
    for lp in k.loops:
        lp.lo, lp.extent = sub(lp.lo), sub(lp.extent)
    for s in k.sites:
        if s.mbar is not None:
            s.extra["mbar_raw"] = s.mbar[1]
            s.mbar = (s.mbar[0], sub(s.mbar[1]))
        s.conds = tuple(sub(c) for c in s.conds)
        for f in ("index", "count", "parity", "tx_bytes", "bar_count"):
            setattr(s, f, sub(getattr(s, f)))
        s.obligations = [(sub(t), dt, node) for t, dt, node in s.obligations]
        for key in ("desc_start",):
            if key in s.extra:
                s.extra[key] = sub(s.extra[key])
        if "box_coords" in s.extra:
            s.extra["box_coords"] = [sub(c) for c in s.extra["box_coords"]]

    def walk(blk):
        for it in blk.items:
            if isinstance(it, M.IfNode):
                it.cond = sub(it.cond)
                walk(it.then)
                walk(it.else_)
            elif isinstance(it, M.LoopNode):
                walk(it.body)
    walk(k.root)


# Statement-level calls modelled generically: their pointer arguments as opaque accesses, no
# ordering effect. Register-only mma, and externs (whose pointer arguments are all they can touch).
GENERIC_CALLS = frozenset({"tirx.ptx_mma", "tirx.call_extern", "tirx.call_pure_extern"})


def extract(lowered, preconditions=(), derived=None, monotone=None, name=None, distinct=()) -> M.Kernel:
    return Extractor(lowered, preconditions, derived, monotone, name, distinct).run()


__all__ = ["extract", "dtype_bytes", "DTYPE_RANGE"]
