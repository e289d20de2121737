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
from .tir import int_value, op_name, short, tirx
from .z3expr import DTYPE_RANGE, Symbols, Translator, eval_condition, is_int_dtype

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
    def __init__(self, lowered, preconditions=(), derived=None, monotone=None, name=None):
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
        self.sites = []
        self.root = M.Block()
        self.block = self.root
        self.unsupported = []
        self.descs = {}           # descriptor data Var -> dict
        self.cur_text = ""
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
        self.tr = Translator(self.syms, self.env, self._load, self._elect)
        self.tr.ptr_fn = self._access_ptr_generic
        self.tr.addr_fn = self._address_of
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
        self._precompute_loop_writes(f.body)
        readonly_idx = set(int(i) for i in attrs.get("tl.readonly_param_indices", [])) \
            if attrs is not None else set()
        self.readonly = {f.params[i].name for i in readonly_idx if i < len(f.params)}
        self._stmt(f.body)
        k = M.Kernel(
            name=self.name, func_name=str(attrs.get("global_symbol", "")) if attrs else "",
            syms=self.syms, shape=self.shape, blocks=self.blocks, threads=self.threads,
            bufs=self.by_name, root=self.root, sites=self.sites, loops=self.loops,
            unsupported=self.unsupported, readonly=self.readonly,
            tma_descs=self.L.tma_descs, layouts=self.L.layouts,
            script_lines=self.L.device_script.splitlines())
        k.dyn_shared_bytes = int(attrs.get("dyn_shared_memory_buf", 0)) if attrs else 0
        k.shared_regions = dict(self.regions)
        amap = attrs.get("tl.smem_alignment_map", None) if attrs else None
        k.alignment_map = {str(a): int(b) for a, b in amap.items()} if amap is not None else {}
        k.source_buffers = {str(b.data.name): b for b in self.L.source_func.buffer_map.values()}
        k.preconditions = self._preconditions()
        k.monotone = self._monotone()
        for tag in THREAD_TAGS:
            if tag not in self.threads:
                self.threads[tag] = (self._tid_sym(tag), 1)
        _assign_top(self.root)
        return k

    def _shape_sym(self, name):
        if name not in self.shape:
            self.shape[name] = self.syms.int_sym(name, "shape")
        return self.shape[name]

    def _tid_sym(self, tag):
        return self.syms.int_sym(tag, "thread")

    def _preconditions(self):
        ext = self

        class Names(dict):
            # a precondition may name a shape variable the device code no longer has
            # (e.g. B once it is fixed to 1): it stays a constrained free symbol
            def __missing__(self, key):
                return ext._shape_sym(key)

            def __contains__(self, key):
                return True

        names = Names(self.shape)
        out = [eval_condition(text, names) for text in self.pre_texts]
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
            self._stmt(s.body)
        elif isinstance(s, tirx.Bind):
            self._bind(s)
        elif isinstance(s, tirx.DeclBuffer):
            self._buffer(s.buffer)
        elif isinstance(s, tirx.AllocBuffer):
            self._alloc(s.buffer)
        elif isinstance(s, tirx.For):
            self._for(s)
        elif isinstance(s, tirx.IfThenElse):
            self._if(s)
        elif isinstance(s, tirx.Evaluate):
            self.cur_text = short(s)
            self._evaluate(s.value)
        elif isinstance(s, tirx.BufferStore):
            self.cur_text = short(s)
            self._store(s)
        elif isinstance(s, tirx.AssertStmt):
            self.cur_text = short(s)
            self.tr.expr(s.condition)
        elif isinstance(s, tirx.While):
            self.unsupported.append((short(s), "while loop"))
            self._havoc_loop_writes(s)
        else:
            self.unsupported.append((short(s), f"statement {type(s).__name__}"))

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
        elif tag in BLOCK_TAGS:
            if tag not in self.blocks:
                self.blocks[tag] = (self.syms.int_sym(tag, "block"), self.tr.int(s.value))
            self.env[var] = self.blocks[tag][0]
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
        self.cur_text = short(s)
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
        """DeclBuffer / inline Buffer: fill in the size of the buffer its data points at."""
        data = buf.data
        info = self.bufs.get(data)
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
        src = {str(b.data.name): b for b in self.L.source_func.buffer_map.values()}.get(str(data.name))
        if src is None:
            return None
        elems = z3.IntVal(1)
        for x in src.shape:
            elems = elems * self._by_name_int(x)
        dt = str(src.dtype)
        info = M.BufInfo(name=str(data.name), scope="global", dtype=dt, elem_bytes=dtype_bytes(dt),
                         size=elems, size_source="signature", readonly=str(data.name) in self.readonly)
        self._register(data, info)
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
        self.block = outer
        merged = {}
        for key in set(after_then) & set(after_else):
            a, b = after_then[key], after_else[key]
            merged[key] = a if a.eq(b) else z3.If(c, a, b)
        self.tracked = merged

    # -- sites ------------------------------------------------------------------------
    def _site(self, kind, op, **kw) -> M.Site:
        guards = list(getattr(self.tr, "guards", []) or [])
        conds = [c for c, _ in self.cond_stack] + guards
        depths = [d for _, d in self.cond_stack] + [len(self.loop_stack)] * len(guards)
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
        if info.scope in ("global", "shared"):
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
            args += [self.threads[t][0] for t in THREAD_TAGS if t in self.threads]
        ver = self.versions.get(info.name, 0)
        fname = f"{info.name}@v{ver}/{len(args)}"
        f = self.syms.uf(fname, len(args), dtype, info.scope)
        self.syms.uf_info[fname] = (dtype, info.scope, info.name)
        return f(*args)

    def _store(self, s):
        info = self._buf_of(s.buffer)
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
    def _ptr(self, call):
        """(BufInfo, first element term, element count term, rw mask, elem bytes) of tvm_access_ptr."""
        ann, data, off, ext, mask = call.args
        dtype = str(ann.dtype) if hasattr(ann, "dtype") else None
        info = self.bufs.get(data)
        if info is None:
            info = self._param_buffer(data)
        if info is None:
            self.unsupported.append((self.cur_text, f"pointer to unknown buffer {data}"))
            return None
        eb = dtype_bytes(dtype) if dtype and dtype != "handle" else info.elem_bytes
        saved = self.tr.obligations
        self.tr.obligations = []
        o = self.tr.int(off)
        obl = self.tr.obligations
        self.tr.obligations = saved
        return info, o, self.tr.int(ext), int_value(mask) or 3, eb, obl

    def _ptr_site(self, call, op, read, write, async_proxy=False, count=None, **kw):
        p = self._ptr(call)
        if p is None:
            return None
        info, o, ext, mask, eb, obl = p
        if info.scope not in ("global", "shared"):
            return None
        return self._site("access", op, buf=info, index=o, count=count if count is not None else ext,
                          read=read, write=write, async_proxy=async_proxy, obligations=obl,
                          extra={"elem_bytes": eb, **kw.pop("extra", {})}, **kw)

    def _access_ptr_generic(self, call):
        p = self._ptr(call)
        if p is None:
            return
        info, o, ext, mask, eb, obl = p
        if info.scope in ("global", "shared"):
            self._site("access", "pointer", buf=info, index=o, count=ext, read=bool(mask & 1),
                       write=bool(mask & 2), obligations=obl, extra={"elem_bytes": eb})

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

    def _evaluate(self, v):
        if not isinstance(v, tirx.Call):
            self.tr.guards = []
            self.tr.expr(v)
            return
        self.tr.guards = []
        name = op_name(v)
        a = list(v.args)
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
            if len(a) == 1:
                self._site("sync", "syncthreads", bar_key=("sync",), bar_count=z3.IntVal(nthreads))
                return
            bid = int_value(a[1])
            cnt = self.tr.int(a[2]) if len(a) > 2 else z3.IntVal(nthreads)
            if bid is None:
                self.unsupported.append((self.cur_text, "non-constant named barrier id"))
                return
            key = ("sync",) if bid == 0 else ("named", bid)
            self._site("sync", "named_sync" if bid else "syncthreads", bar_key=key, bar_count=cnt,
                       extra={"id": bid})
        elif name == "tl.named_barrier_arrive":
            bid = int_value(a[0])
            if bid is None:
                self.unsupported.append((self.cur_text, "non-constant named barrier id"))
                return
            self._site("sync", "named_arrive", bar_key=("sync",) if bid == 0 else ("named", bid),
                       bar_count=self.tr.int(a[1]), extra={"id": bid})
        elif name == "tirx.ptx_init_barrier_thread_count":
            mb = self._mbar(a[0])
            if mb:
                self._site("mbar", "init", mbar=mb, bar_count=self.tr.int(a[1]))
        elif name == "tl.ptx_fence_barrier_init":
            self._site("fence", "fence_init")
        elif name == "tirx.ptx_arrive_barrier":
            mb = self._mbar(a[0])
            if mb:
                self._site("mbar", "arrive", mbar=mb)
        elif name == "tirx.ptx_arrive_barrier_expect_tx":
            mb = self._mbar(a[0])
            if mb:
                self._site("mbar", "arrive_expect_tx", mbar=mb, tx_bytes=self.tr.int(a[1]))
        elif name == "tl.mbarrier_expect_tx":
            mb = self._mbar(a[0])
            if mb:
                self._site("mbar", "expect_tx", mbar=mb, tx_bytes=self.tr.int(a[1]))
        elif name == "tl.mbarrier_wait_parity":
            mb = self._mbar(a[0])
            if mb:
                self._site("mbar", "wait", mbar=mb, parity=self.tr.int(a[1]))
        elif name in ("tl.ptx_arrive_cluster_barrier", "tl.tma_load_2sm", "tl.tcgen05_mma_arrive",
                      "tl.ptx_cp_async_barrier_noinc"):
            self.unsupported.append((self.cur_text, name))
        elif name == "tl.fence_proxy_async":
            self._site("fence", "proxy_async")
        elif name == "tl.tma_load":
            self._tma_load(a)
        elif name == "tl.tma_store":
            self._tma_store(a)
        elif name in ("tl.ptx_ldmatrix", "tl.ptx_stmatrix"):
            num = int_value(a[1]) or 1
            if name == "tl.ptx_stmatrix":
                for x in a[3:]:
                    if isinstance(x, tirx.PrimExpr):
                        self.tr.expr(x)
            # lanes 8j..8j+7 give the 16-byte row addresses of matrix j; the others are ignored
            lane = self._linear_tid() % 32
            self.tr.guards = [lane < 8 * num]
            op = "ldmatrix" if name == "tl.ptx_ldmatrix" else "stmatrix"
            self._ptr_site(a[2], op, op == "ldmatrix", op == "stmatrix",
                           count=z3.IntVal(16 // self._ptr_eb(a[2])),
                           extra={"num": num, "trans": int_value(a[0])})
            self.tr.guards = []
        elif name in ("tirx.ptx_cp_async", "tl.ptx_cp_async"):
            self._cp_async(name, a)
        elif name == "tl.initialize_wgmma_descriptor":
            self._wgmma_desc(a)
        elif name == "tl.increase_descriptor_offset":
            d = a[0].buffer.data if isinstance(a[0], tirx.BufferLoad) else None
            st = self.descs.get(d)
            if st is None:
                self.unsupported.append((self.cur_text, "descriptor offset before initialization"))
            else:
                st["inc"] = st["inc"] + self.tr.int(a[1])
        elif name in ("tl.ptx_wgmma_ss", "tl.ptx_wgmma_rs"):
            self._wgmma(name, a)
        elif name in ("tl.warpgroup_arrive", "tl.warpgroup_commit_batch", "tl.warpgroup_wait",
                      "tl.warpgroup_fence_operand", "tl.prefetch_tma_descriptor", "tl.set_max_nreg",
                      "tl.tma_store_arrive", "tl.tma_store_wait", "tirx.ptx_commit_group",
                      "tirx.ptx_wait_group", "tl.no_set_max_nreg", "tl.sync_warp"):
            if name == "tl.warpgroup_wait":
                self._site("fence", "wgmma_wait", extra={"n": int_value(a[0])})
            elif name == "tl.tma_store_wait":
                self._site("fence", "tma_store_wait")
            elif name == "tirx.ptx_wait_group":
                self._site("fence", "cp_async_wait", extra={"n": int_value(a[0])})
            return
        else:
            self.tr.expr(v)  # generic: loads and pointers inside the arguments

    def _ptr_eb(self, call):
        ann = call.args[0]
        dt = str(ann.dtype) if hasattr(ann, "dtype") else "float16"
        return dtype_bytes(dt)

    def _tma_load(self, a):
        desc_var = a[0]
        desc = self.L.tma_descs.get(str(getattr(desc_var, "name", "")))
        mb = self._mbar(a[1])
        for x in a[3:]:
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
        s = self._ptr_site(a[2], "tma_load", False, True, async_proxy=True,
                           extra={"desc": desc, "desc_name": str(getattr(desc_var, "name", ""))})
        if s is not None:
            s.mbar = mb
            s.tx_bytes = z3.IntVal(nbytes) if nbytes is not None else None
            s.extra["tx_bytes"] = nbytes

    def _tma_store(self, a):
        desc_var = a[0]
        desc = self.L.tma_descs.get(str(getattr(desc_var, "name", "")))
        for x in a[2:]:
            if isinstance(x, tirx.PrimExpr) and not isinstance(x, tirx.StringImm):
                self.tr.expr(x)
        self._ptr_site(a[1], "tma_store", True, False, async_proxy=True,
                       extra={"desc": desc, "desc_name": str(getattr(desc_var, "name", ""))})

    def _cp_async(self, name, a):
        if len(a) > 3:
            self.tr.guards = [self.tr.bool(a[3])]
        n = int_value(a[2])
        src = self._ptr(a[1])
        dst = self._ptr(a[0])
        if n is None or src is None or dst is None:
            self.unsupported.append((self.cur_text, "cp.async operands"))
            return
        if name == "tl.ptx_cp_async":
            dcount, scount = z3.IntVal(n), z3.IntVal(n)
        else:  # builtin form: byte count
            dcount, scount = z3.IntVal(n // dst[4]), z3.IntVal(n // src[4])
        for (info, o, _, _, eb, obl), cnt, write in ((src, scount, False), (dst, dcount, True)):
            if info.scope in ("global", "shared"):
                self._site("access", "cp_async", buf=info, index=o, count=cnt, read=not write, write=write,
                           obligations=obl, async_proxy=write and info.scope == "shared",
                           extra={"elem_bytes": eb})
        self.tr.guards = []

    def _wgmma_desc(self, a):
        d = a[0].buffer.data if isinstance(a[0], tirx.BufferLoad) else None
        p = self._ptr(a[1])
        if d is None or p is None:
            self.unsupported.append((self.cur_text, "wgmma descriptor"))
            return
        info, o, ext, mask, eb, obl = p
        self.descs[d] = {"buf": info, "off": o, "ext": ext, "eb": eb, "layout": int_value(a[2]),
                         "lbo": int_value(a[3]), "sbo": int_value(a[4]), "inc": z3.IntVal(0),
                         "text": self.cur_text, "obl": obl}

    def _wgmma(self, name, a):
        shape = a[0].value if isinstance(a[0], tirx.StringImm) else ""
        m = re.match(r"m(\d+)n(\d+)k(\d+)", shape)
        if not m:
            self.unsupported.append((self.cur_text, f"wgmma shape {shape}"))
            return
        M_, N_, K_ = (int(x) for x in m.groups())
        a_kmajor = bool(int_value(a[1]))
        b_kmajor = bool(int_value(a[2]))
        if name == "tl.ptx_wgmma_ss":
            ops = [("A", a[6], a[7], M_, a_kmajor), ("B", a[8], a[9], N_, b_kmajor)]
        else:
            ops = [("B", a[8], a[9], N_, b_kmajor)] if len(a) > 9 else []
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
                                  "desc_text": st["text"]})
            s.extra["byte_addressed"] = True


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


def extract(lowered, preconditions=(), derived=None, monotone=None, name=None) -> M.Kernel:
    return Extractor(lowered, preconditions, derived, monotone, name).run()


__all__ = ["extract", "dtype_bytes", "DTYPE_RANGE"]
