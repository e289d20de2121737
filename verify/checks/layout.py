"""Layout: shared buffers that are live together do not overlap; TMA, wgmma, cp.async,
ldmatrix/stmatrix and vector operands are aligned; shared memory fits the sm_90 per-block
limit; swizzled shared layouts and fragment layouts are bijective."""
from __future__ import annotations

import time

import z3

from ..report import FAILED, Finding, check_result
from ..z3expr import ToBV, Translator
from .. import model as M
from .common import abs_range, locate, simplify_int, site_finding, unknown

CATEGORY = "layout"
SMEM_LIMIT = 227 * 1024          # bytes of shared memory one block may use on sm_90
SWIZZLE_ATOM = {0: 128, 1: 256, 2: 512, 3: 1024}   # TMA swizzle mode -> required alignment
WGMMA_SWIZZLE = {1: 128, 2: 64, 3: 32}


def run(k, ctx, budget=None):
    out = []
    for name, fn in (("layout.overlap", _overlap), ("layout.alignment", _alignment),
                     ("layout.smem_limit", _smem_limit), ("layout.setmaxnreg", _setmaxnreg),
                     ("layout.bijective", _bijective)):
        t0 = time.perf_counter()
        findings, detail = fn(k, ctx)
        out.append(check_result(name, CATEGORY, findings, detail, time.perf_counter() - t0))
    return out


# -- overlap of live buffers ------------------------------------------------------------

class _Liveness:
    """Per execution path (what one thread runs), which shared buffers hold data that a later
    read uses: `reach` (the buffer was written on some path to here) and `live` (a read of it
    follows on some path from here), both over the program tree with loops iterated to a fixed
    point. Writes are never taken as kills, so a buffer stays live until its last read (sound:
    only more overlap is reported). Concurrent roles are not compared here: an access by
    another thread to shared bytes is the race check's business."""

    def __init__(self, k):
        self.k = k
        self.live_after = {}      # site id -> buffers live after it
        self.reach_before = {}    # site id -> buffers written before it

    @staticmethod
    def _reads(s):
        return s.kind == "access" and s.shared and s.read

    @staticmethod
    def _writes(s):
        return s.kind == "access" and s.shared and s.write

    def backward(self, blk, live):
        for it in reversed(blk.items):
            live = self.back_item(it, live)
        return live

    def back_item(self, it, live):
        if isinstance(it, M.Site):
            self.live_after[it.id] = self.live_after.get(it.id, frozenset()) | live
            if self._reads(it):
                return live | {it.buf.name}
            return live
        if isinstance(it, M.LoopNode):
            cur = live
            while True:
                inside = self.backward(it.body, cur)
                nxt = cur | inside
                if nxt == cur:
                    return cur
                cur = nxt
        if isinstance(it, M.IfNode):
            return self.backward(it.then, live) | self.backward(it.else_, live)
        return live

    def forward(self, blk, reach):
        for it in blk.items:
            reach = self.fwd_item(it, reach)
        return reach

    def fwd_item(self, it, reach):
        if isinstance(it, M.Site):
            self.reach_before[it.id] = self.reach_before.get(it.id, frozenset()) | reach
            if self._writes(it):
                return reach | {it.buf.name}
            return reach
        if isinstance(it, M.LoopNode):
            cur = reach
            while True:
                nxt = cur | self.forward(it.body, cur)
                if nxt == cur:
                    return cur
                cur = nxt
        if isinstance(it, M.IfNode):
            return self.forward(it.then, reach) | self.forward(it.else_, reach)
        return reach

    def run(self):
        self.backward(self.k.root, frozenset())
        self.forward(self.k.root, frozenset())
        return self


def _overlap(k, ctx):
    """Two shared buffers whose bytes overlap (TileLang's planner reuses dead buffers' bytes)
    must not both hold live data on one execution path: a write to one where the other was
    written before and is read after (a clobbered value)."""
    findings = []
    bufs = [b for b in k.bufs.values() if b.scope == "shared"]
    spans = {}
    for b in bufs:
        sz = simplify_int(b.size) if b.size is not None else None
        if sz is None or b.base_byte is None:
            if any(s.buf is b for s in k.sites if s.kind == "access"):
                findings.append(unknown("layout.overlap", f"size or offset of {b.name} not constant"))
            continue
        spans[b.name] = (b.region, b.base_byte, b.base_byte + sz * b.elem_bytes)
    overlapping = {}
    names = sorted(spans)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ra, a0, a1 = spans[a]
            rb, b0, b1 = spans[b]
            if ra == rb and a0 < b1 and b0 < a1:
                overlapping.setdefault(a, set()).add(b)
                overlapping.setdefault(b, set()).add(a)
    if not overlapping:
        return findings, f"{len(spans)} shared buffers, no overlapping pair"
    lv = _Liveness(k).run()
    seen = set()
    for s in k.sites:
        if not (s.kind == "access" and s.shared and s.write) or s.buf.name not in overlapping:
            continue
        live = lv.live_after.get(s.id, frozenset()) & lv.reach_before.get(s.id, frozenset())
        for other in sorted(overlapping[s.buf.name] & live):
            if (s.buf.name, other) in seen:
                continue
            seen.add((s.buf.name, other))
            _, o0, o1 = spans[other]
            _, w0, w1 = spans[s.buf.name]
            later = next((r for r in k.sites if r.kind == "access" and r.read and r.buf is not None
                          and r.buf.name == other and r.id > s.id), None)
            f = Finding(check="layout.overlap", status=FAILED, buffer=f"{s.buf.name}, {other}",
                        message=(f"{s.op} of {s.buf.name} (bytes [{w0}, {w1})) "
                                 f"overwrites bytes [{max(o0, w0)}, {min(o1, w1)}) of {other} while {other} "
                                 f"holds data read later" + (f" ({short_text(later.text)})" if later else "")),
                        access=s.text, line=locate(k, s.text),
                        counterexample={"overlap_bytes": [max(o0, w0), min(o1, w1)]})
            findings.append(f)
    return findings, f"{len(spans)} shared buffers, {sum(len(v) for v in overlapping.values()) // 2} overlapping pairs"


def short_text(t, n=90):
    return t if len(t) <= n else t[:n - 3] + "..."


def live_ranges(k):
    """Shared buffer -> (first, last) top-level statement that touches it (for reports)."""
    rng = {}
    for s in k.sites:
        if s.kind == "access" and s.buf is not None and s.buf.scope == "shared":
            lo, hi = rng.get(s.buf.name, (s.top, s.top))
            rng[s.buf.name] = (min(lo, s.top), max(hi, s.top))
    return rng


# -- alignment ----------------------------------------------------------------------------

def _alignment(k, ctx):
    findings = []
    n = 0
    for s in k.sites:
        if s.kind != "access" or s.buf is None:
            continue
        reqs = _requirements(s)
        for what, addr, align in reqs:
            n += 1
            fs = ctx.base([(s, "")])
            res, m = ctx.solve(fs + [addr % align != 0])
            if res == "sat":
                from ..solver import evaluate
                findings.append(site_finding(
                    k, ctx, "layout.alignment", s,
                    f"{what} address {evaluate(m, addr)} is not {align}-byte aligned", m, fs + [addr]))
            elif res == "unknown":
                findings.append(unknown("layout.alignment", f"solver could not decide ({m})", s, k))
    for b in k.bufs.values():
        want = k.alignment_map.get(b.name)
        if want and b.base_byte is not None and b.base_byte % want:
            findings.append(Finding(check="layout.alignment", status=FAILED, buffer=b.name,
                                    message=f"{b.name} at byte {b.base_byte} violates TileLang's "
                                            f"required {want}-byte alignment"))
    return findings, f"{n} alignment obligations"


def _requirements(s):
    """(description, byte address term, alignment) obligations of one access."""
    shared = s.buf.scope == "shared"
    eb = s.extra.get("elem_bytes", s.buf.elem_bytes)
    if shared:
        addr = abs_range(s)[0]
    else:
        addr = s.index * eb  # relative to the tensor's base, which the host must align
    if s.op in ("tma_load", "tma_store") and shared:
        d = s.extra.get("desc")
        sw = d.swizzle if d is not None else 0
        return [(f"TMA shared operand (swizzle mode {sw})", addr, SWIZZLE_ATOM.get(sw, 128))]
    if s.op == "wgmma" and shared:
        start = s.extra["desc_start"] + (s.buf.base_byte or 0)
        out = [("wgmma descriptor start", start, 16)]
        W = WGMMA_SWIZZLE.get(s.extra.get("layout"))
        if W:
            out.append((f"wgmma {W}B-swizzle atom", start - start % W, 8 * W))
        return out
    if s.op in ("ldmatrix", "stmatrix"):
        return [(f"{s.op} row", addr, 16)]
    if s.op == "cp_async":
        n = simplify_int(s.count)
        if n:
            return [("cp.async operand", addr, n * eb)]
        return []
    if s.lanes > 1 and s.stride == 1 and s.op in ("load", "store"):
        width = s.lanes * eb
        if width in (2, 4, 8, 16, 32):
            return [(f"{width}-byte vector {s.op}", addr, width)]
    return []


# -- shared memory size --------------------------------------------------------------------

def _smem_limit(k, ctx):
    findings = []
    total = k.dyn_shared_bytes
    static = 0
    for name, (nbytes, scope) in k.shared_regions.items():
        if scope == "shared" and nbytes is not None:
            static += nbytes
    barriers = sum(8 * (simplify_int(b.size) or 0) for b in k.bufs.values() if b.scope == "barrier")
    used = total + static + barriers
    if used > SMEM_LIMIT:
        findings.append(Finding(check="layout.smem_limit", status=FAILED,
                                message=f"{used} bytes of shared memory exceed the {SMEM_LIMIT}-byte limit",
                                counterexample={"dynamic": total, "static": static, "mbarriers": barriers}))
    for b in k.bufs.values():
        if b.scope != "shared" or b.base_byte is None or b.size is None:
            continue
        region = k.shared_regions.get(b.region)
        cap = k.dyn_shared_bytes if b.region not in k.shared_regions or region[0] is None else region[0]
        if b.region in k.shared_regions and region[0] is None:
            continue
        end = simplify_int(b.size)
        if end is None:
            findings.append(unknown("layout.smem_limit", f"size of {b.name} is not constant"))
            continue
        end = b.base_byte + end * b.elem_bytes
        if end > cap:
            findings.append(Finding(check="layout.smem_limit", status=FAILED, buffer=b.name,
                                    message=f"{b.name} ends at byte {end}, past its {cap}-byte allocation"))
    return findings, f"{used} bytes used"


# -- register budget of setmaxnreg -----------------------------------------------------------

REGFILE = 65536          # 32-bit registers per SM (sm_90), the pool setmaxnreg redistributes


def launch_registers(threads):
    """Registers per thread the launch provides a block of `threads` threads running alone on
    an SM: the register file divided by the threads, rounded down to the allocation granule of 8
    (the pool setmaxnreg redistributes is threads x this)."""
    return REGFILE // threads // 8 * 8


def _setmaxnreg(k, ctx):
    """Warp-specialized kernels move registers between warpgroups with setmaxnreg.dec/.inc. An
    .inc blocks until the pool has the registers, so the warpgroups' requests must fit what the
    launch gave the block (threads x registers per thread), or the kernel deadlocks. Each request
    must also be a multiple of 8 in [24, 256] and be executed by whole warpgroups. (Whether an
    .inc starts above the count ptxas gave the kernel is not checked: that count is not in the IR.)"""
    import numpy as np

    from ..numeric import Symbolic, np_eval
    from ..order import thread_id_arrays, thread_only
    findings = []
    sites = [s for s in k.sites if s.op == "setmaxnreg" and s.extra.get("regs") is not None]
    if not sites:
        return findings, "no setmaxnreg"
    n = k.num_threads
    base = launch_registers(n)
    if n % 128:
        findings.append(site_finding(k, ctx, "layout.setmaxnreg", sites[0],
                                     f"setmaxnreg in a block of {n} threads, not a whole number of warpgroups"))
        return findings, f"{n} threads"
    env = thread_id_arrays(k)
    groups = n // 128
    asked = [[] for _ in range(groups)]
    for s in sites:
        regs, inc = s.extra["regs"], s.extra["inc"]
        if regs % 8 or not 24 <= regs <= 256:
            findings.append(site_finding(k, ctx, "layout.setmaxnreg", s,
                                         f"setmaxnreg {regs}: the count must be a multiple of 8 in [24, 256]"))
        mask = np.ones(n, dtype=bool)
        for c in s.conds:
            if not thread_only(c, k.syms):
                continue
            try:
                mask &= np.broadcast_to(np_eval(c, env), (n,))
            except Symbolic:
                findings.append(unknown("layout.setmaxnreg", "threads executing setmaxnreg not determined", s, k))
                mask = None
                break
        if mask is None:
            continue
        for g in range(groups):
            part = mask[g * 128:(g + 1) * 128]
            if part.any() and not part.all():
                findings.append(site_finding(k, ctx, "layout.setmaxnreg", s,
                                             f"setmaxnreg executed by {int(part.sum())} of the 128 threads of "
                                             f"warpgroup {g} (the instruction is warpgroup-wide)"))
            elif part.all():
                asked[g].append(regs)
    # a warpgroup that asks several times holds at most its largest request (conservative)
    final = [max(a) if a else base for a in asked]
    need, have = 128 * sum(final), n * base
    if need > have:
        findings.append(Finding(
            check="layout.setmaxnreg", status=FAILED,
            message=(f"warpgroups ask for {' + '.join(str(r) for r in final)} registers a thread, "
                     f"{need} in all, but the launch provides {n} threads x {base} = {have}: "
                     f"setmaxnreg.inc waits forever"),
            access=sites[0].text, line=locate(k, sites[0].text),
            counterexample={"threads": n, "registers_at_launch": base, "requested": final}))
    return findings, f"{groups} warpgroups: {final} registers a thread, budget {base}"


# -- bijective layouts ----------------------------------------------------------------------

_layout_memo: dict = {}


def _bijective(k, ctx):
    findings = []
    n = 0
    for name, lay in k.layouts.items():
        n += 1
        # identical layouts (other buffers, other builds) are decided once
        key = (lay.kind, str(lay.input_shape), str(lay.output_shape), str(lay.forward_vars),
               str(lay.forward_index), str(lay.forward_thread), lay.replicate, str(lay.thread_range))
        if key in _layout_memo and _layout_memo[key] is None:
            continue
        f = _layout_numeric(lay)
        if f is False:
            f = _layout_bijective(k, ctx, lay)
        if f is None and not _mentions_shape(k, key):
            _layout_memo[key] = None
        if f is not None:
            findings.append(f)
    return findings, f"{n} layouts"


def _mentions_shape(k, key):
    text = " ".join(str(x) for x in key)
    return any(name in text for name in k.shape)


def _layout_bijective(k, ctx, lay):
    syms = k.syms
    check = "layout.bijective"

    extents = list(lay.input_shape)
    if len(lay.forward_vars) == len(extents) + 1:
        extents = [lay.replicate] + extents   # the fragment's replicate index comes first

    def copy(tag):
        env = {}
        dom = []
        for v, extent in zip(lay.forward_vars, extents):
            # names independent of the buffer: identical layouts give identical queries,
            # which the solver cache answers once
            z = syms.int_sym(f"layout.{v.name}{tag}", "layout", str(v.name))
            env[v] = z
            dom.append((z, extent))
        tr = Translator(syms, env, lambda e: None, lambda n: z3.BoolVal(False))
        tr.free_fn = lambda v: k.shape.get(str(v.name))
        doms = []
        for z, extent in dom:
            doms += [z >= 0, z < tr.int(extent)]
        outs = [tr.int(e) for e in lay.forward_index]
        if lay.kind == "fragment":
            outs.append(tr.int(lay.forward_thread))
        return [z for z, _ in dom], doms, outs, tr

    xs, dx, fx, tr = copy("#a")
    ys, dy, fy, _ = copy("#b")
    pre = []
    out_shape = [tr.int(e) for e in lay.output_shape]
    # every output lands inside the buffer (or the thread range, for fragments)
    rng = []
    for o, extent in zip(fx, out_shape):
        rng.append(z3.And(o >= 0, o < extent))
    if lay.kind == "fragment" and lay.thread_range is not None:
        # forward_thread is relative to the first thread of the fragment's range
        ext = tr.int(lay.thread_range[1])
        rng.append(z3.And(fx[-1] >= 0, fx[-1] < ext))
    res, m = _solve_bv(ctx, pre + dx + [z3.Not(z3.And(rng))])
    if res == "sat":
        return Finding(check=check, status=FAILED, buffer=lay.buffer,
                       message=f"{lay.kind} of {lay.buffer} maps an index outside its target",
                       counterexample={str(v): _val(m, x) for v, x in zip(lay.forward_vars, xs)})
    if res == "unknown":
        return unknown(check, f"{lay.buffer}: solver could not decide ({m})")
    # injective: two different logical indices never share a physical slot
    res, m = _solve_bv(ctx, pre + dx + dy + [z3.Or([a != b for a, b in zip(xs, ys)])]
                       + [a == b for a, b in zip(fx, fy)])
    if res == "sat":
        ev = lambda zs: [_val(m, z) for z in zs]  # noqa: E731
        return Finding(check=check, status=FAILED, buffer=lay.buffer,
                       message=f"{lay.kind} of {lay.buffer} maps two indices to the same slot",
                       counterexample={"index_a": ev(xs), "index_b": ev(ys), "slot": ev(fx)})
    if res == "unknown":
        return unknown(check, f"{lay.buffer}: solver could not decide ({m})")
    # onto: as many logical indices as physical slots (an injective map is then a bijection)
    dom = z3.IntVal(1)
    for e in lay.input_shape:
        dom = dom * tr.int(e)
    cod = z3.IntVal(1)
    for e in out_shape:
        cod = cod * e
    if lay.kind == "fragment":
        if lay.thread_range is not None:
            cod = cod * tr.int(lay.thread_range[1])
        dom = dom * lay.replicate
    res, m = ctx.solve(ctx.shape_facts() + [dom != cod])
    if res == "sat":
        return Finding(check=check, status=FAILED, buffer=lay.buffer,
                       message=f"{lay.kind} of {lay.buffer} is not onto: {m.eval(dom)} indices "
                               f"for {m.eval(cod)} slots")
    if res == "unknown":
        return unknown(check, f"{lay.buffer}: solver could not decide ({m})")
    return None


def _solve_bv(ctx, formulas):
    """Layout maps are small index arithmetic with shifts and masks: bit-vectors decide
    them far faster than integer arithmetic. Shape-dependent layouts stay in Int."""
    from ..solver import _consts
    acc = {}
    for f in formulas:
        _consts(f, acc, set())
    if any(ctx.syms.role.get(n) == "shape" for n in acc):
        return ctx.solve(ctx.shape_facts() + formulas)
    conv = ToBV()
    # keep values well inside the signed 64-bit range, where BV and Int agree
    bounds = []
    for name, c in acc.items():
        if not z3.is_bool(c):
            b = conv(c)
            bounds += [b >= -(2 ** 40), b <= 2 ** 40]
    res, m = ctx.solve([conv(f) for f in formulas] + bounds)
    if res == "sat":
        m = _BVModel(m, conv)
    return res, m


class _BVModel:
    def __init__(self, m, conv):
        self.m, self.conv = m, conv

    def eval(self, term, model_completion=True):
        v = self.m.eval(self.conv(term), model_completion=True)
        return z3.IntVal(v.as_signed_long()) if z3.is_bv_value(v) else v


def _val(m, x):
    v = m.eval(x, model_completion=True)
    return v.as_long() if z3.is_int_value(v) else str(v)


def _layout_numeric(lay):
    """Decide a constant-shape layout by evaluating it on every index (None: bijective,
    Finding: not, False: not enumerable)."""
    import math

    import numpy as np

    from ..numeric import Symbolic
    from ..tir import int_value
    extents = list(lay.input_shape)
    if len(lay.forward_vars) == len(extents) + 1:
        extents = [lay.replicate] + extents
    ext = [int_value(e) for e in extents]
    outs = [int_value(e) for e in lay.output_shape]
    if any(e is None for e in ext + outs) or math.prod(ext) > (1 << 20):
        return False
    grids = np.meshgrid(*[np.arange(e, dtype=np.int64) for e in ext], indexing="ij")
    env = {v: g.reshape(-1) for v, g in zip(lay.forward_vars, grids)}
    try:
        vals = [np.broadcast_to(_tir_eval(e, env), grids[0].reshape(-1).shape) for e in lay.forward_index]
        if lay.kind == "fragment":
            vals.append(np.broadcast_to(_tir_eval(lay.forward_thread, env), grids[0].reshape(-1).shape))
            outs = outs + [int_value(lay.thread_range[1]) if lay.thread_range else None]
            if outs[-1] is None:
                return False
    except Symbolic:
        return False
    n = grids[0].size
    for v, o in zip(vals, outs):
        if (v < 0).any() or (v >= o).any():
            i = int(np.flatnonzero((v < 0) | (v >= o))[0])
            return Finding(check="layout.bijective", status=FAILED, buffer=lay.buffer,
                           message=f"{lay.kind} of {lay.buffer} maps an index outside its target",
                           counterexample={str(x): int(env[x][i]) for x in lay.forward_vars})
    flat = np.zeros(n, dtype=np.int64)
    for v, o in zip(vals, outs):
        flat = flat * o + v
    uniq, first, counts = np.unique(flat, return_index=True, return_counts=True)
    if (counts > 1).any():
        slot = uniq[np.flatnonzero(counts > 1)[0]]
        a, b = np.flatnonzero(flat == slot)[:2]
        return Finding(check="layout.bijective", status=FAILED, buffer=lay.buffer,
                       message=f"{lay.kind} of {lay.buffer} maps two indices to the same slot",
                       counterexample={"index_a": [int(env[x][a]) for x in lay.forward_vars],
                                       "index_b": [int(env[x][b]) for x in lay.forward_vars]})
    if n != math.prod(outs):
        return Finding(check="layout.bijective", status=FAILED, buffer=lay.buffer,
                       message=f"{lay.kind} of {lay.buffer} is not onto: {n} indices for {math.prod(outs)} slots")
    return None


def _tir_eval(e, env):
    """Evaluate a TIR integer expression over numpy arrays (layout index maps)."""
    import numpy as np

    from ..numeric import Symbolic
    from ..tir import tirx
    if isinstance(e, (int,)):
        return np.int64(e)
    if isinstance(e, tirx.IntImm):
        return np.int64(int(e.value))
    if isinstance(e, tirx.Var):
        for k, v in env.items():
            if k.same_as(e):
                return v
        raise Symbolic(str(e))
    ops = {tirx.Add: np.add, tirx.Sub: np.subtract, tirx.Mul: np.multiply,
           tirx.FloorDiv: np.floor_divide, tirx.FloorMod: np.mod, tirx.Min: np.minimum, tirx.Max: np.maximum}
    for cls, fn in ops.items():
        if isinstance(e, cls):
            return fn(_tir_eval(e.a, env), _tir_eval(e.b, env))
    if isinstance(e, tirx.Cast):
        return _tir_eval(e.value, env)
    raise Symbolic(type(e).__name__)
