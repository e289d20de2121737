"""Bank mapping: the worst bank-conflict degree of every shared-memory access of a warp.

Shared memory has 32 four-byte banks. A warp's access is served in phases: 32 lanes for
accesses of up to 4 bytes per lane, 16 lanes for 8 bytes, 8 lanes for 16 bytes, and one
8x8 matrix (8 lanes, one 16-byte row each) per ldmatrix/stmatrix phase. The degree of a
phase is the largest number of *distinct* 4-byte words that active lanes touch in one
bank (lanes reading the same word are served together).

Decision procedure, per access: lanes are concrete; every other variable the address
depends on is either enumerated exhaustively (loop indices with constant ranges, warp
ids, and loop indices that occur only modulo a constant) with the address evaluated
exactly, or left symbolic and handled by a bit-vector encoding in Z3 that searches for
the largest degree any assignment reaches.
"""
from __future__ import annotations

import math
import time

import numpy as np
import z3

from ..numeric import Symbolic, consts_of as _consts_of, loop_values, np_eval as _np_eval
from ..report import check_result
from ..z3expr import ToBV, subterms
from .common import abs_range, simplify_int, site_finding, unknown

CATEGORY = "banks"
MAX_COMBOS = 1 << 14


def run(k, ctx, budget=1):
    t0 = time.perf_counter()
    findings = []
    worst = 1
    per_site = {}
    for s in k.sites:
        if not (s.kind == "access" and s.shared) or s.async_proxy or s.op in ("cp_async", "wgmma", "tma_load",
                                                                          "tma_store"):
            continue
        deg, detail = site_degree(k, ctx, s)
        if deg is None:
            findings.append(unknown("banks.conflicts", detail, s, k))
            continue
        per_site[s.id] = deg
        worst = max(worst, deg)
        if deg > budget:
            f = site_finding(k, ctx, "banks.conflicts", s,
                             f"{s.op} of {s.buf.name} has bank-conflict degree {deg} (budget {budget})")
            f.counterexample = detail
            findings.append(f)
    return [check_result("banks.conflicts", CATEGORY, findings,
                         f"{len(per_site)} warp accesses, worst degree {worst}, budget {budget}",
                         time.perf_counter() - t0, {"worst_degree": worst, "budget": budget})]


# -- phases ------------------------------------------------------------------------------------

def phases(s):
    """(list of lane lists, bytes per lane) for one warp-wide execution of site s."""
    eb = s.extra.get("elem_bytes", s.buf.elem_bytes)
    if s.op in ("ldmatrix", "stmatrix"):
        num = s.extra.get("num", 1) or 1
        return [list(range(8 * j, 8 * j + 8)) for j in range(num)], 16
    width = (simplify_int(s.count) or 1) * eb if s.stride == 1 else eb
    if width <= 4:
        return [list(range(32))], width
    per = max(1, 128 // width)  # lanes per 128-byte transaction
    return [list(range(p, p + per)) for p in range(0, 32, per)], width




def site_degree(k, ctx, s):
    """(worst degree, detail) of site s; (None, reason) when undecidable."""
    groups, width = phases(s)
    addr, _ = abs_range(s)
    cond = z3.And(list(s.conds)) if s.conds else z3.BoolVal(True)
    try:
        return _numeric(k, s, addr, cond, groups, width)
    except Symbolic:
        pass
    loops = s.loops
    lane = _lane_part(k, ctx, s, addr)
    if lane is not None:
        # the same degree from the lanes' own offsets; guards that hold or fail for the whole
        # warp are left out (all lanes active: an upper bound), and so are the loops that
        # neither the offsets nor the remaining guards mention
        addr = lane
        conds = [c for c in s.conds if _mentions_thread(k, c)]
        cond = z3.And(conds) if conds else z3.BoolVal(True)
        used = set(_consts_of(addr)) | set(_consts_of(cond))
        loops = tuple(lp for lp in s.loops if lp.sym.decl().name() in used)
        try:
            return _numeric(k, s, addr, cond, groups, width)
        except Symbolic:
            pass
    try:
        return _symbolic(k, ctx, s, addr, cond, groups, width, loops)
    except NotImplementedError as e:
        return None, f"bank mapping: {e}"


def _mentions_thread(k, t):
    names = {sym.decl().name() for sym, _ in k.threads.values()}
    return any(n in names for n in _consts_of(t))


_CMP = (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT)


def _warp_uniform(k, t):
    """Whether t has one value for all 32 lanes of a warp: thread indices enter it only through
    role tests that split the block at warp boundaries (`128 <= threadIdx.x`: a register counter
    that each role steps in its own branch carries them), or have extent 1."""
    lanes = {sym.decl().name() for sym, ext in k.threads.values() if ext != 1}
    if len(lanes) > 1:
        return not _mentions_thread(k, t)

    def role_test(x):
        if not (z3.is_app(x) and x.decl().kind() in _CMP):
            return False
        a, b = x.arg(0), x.arg(1)
        return any(z3.is_const(v) and v.decl().name() in lanes and z3.is_int_value(c) and c.as_long() % 32 == 0
                   for v, c in ((a, b), (b, a)))
    return not any(z3.is_const(x) and x.decl().name() in lanes for x in subterms(t, set(), prune=role_test))


def _lane_part(k, ctx, s, addr):
    """The address less its warp-uniform terms (a ring slot's offset, a block's tile; _warp_uniform),
    when those are a whole number of 4-byte words: shifting every lane of a warp by
    the same number of words rotates the banks, so the degree stays. None when there is no
    such part, or when it is not provably a multiple of 4."""
    t = z3.simplify(addr, som=True)
    terms = list(t.children()) if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_ADD else [t]
    lane = [m for m in terms if not _warp_uniform(k, m)]
    uniform = [m for m in terms if _warp_uniform(k, m)]
    if not uniform or all(z3.is_int_value(m) and m.as_long() % 128 == 0 for m in uniform):
        return None

    def words(m):
        if z3.is_int_value(m):
            return m.as_long() % 4 == 0
        return z3.is_app(m) and m.decl().kind() == z3.Z3_OP_MUL and z3.is_int_value(m.arg(0)) \
            and m.arg(0).as_long() % 4 == 0
    if not all(words(m) for m in uniform):
        u = z3.Sum(uniform) if len(uniform) > 1 else uniform[0]
        facts = ctx.shape_facts() + ctx.block_facts() + ctx.loop_facts(s.loops)
        if ctx.solve(facts + [u % 4 != 0], facts=False)[0] != "unsat":
            return None
    return z3.simplify(z3.Sum(lane)) if len(lane) > 1 else (lane[0] if lane else z3.IntVal(0))


def _numeric(k, s, addr, cond, groups, width):
    free = {}
    free.update(_consts_of(addr))
    thread_tags = {sym.decl().name(): (tag, ext) for tag, (sym, ext) in k.threads.items()}
    axes = []      # (name, values)
    for name in free:
        if name in thread_tags:
            continue
        vals = _enum_values(k, name, addr)
        if vals is None:
            raise Symbolic(name)
        axes.append((name, vals))
    combos = math.prod(len(v) for _, v in axes) if axes else 1
    nwarps = max(1, k.num_threads // 32)
    if combos * nwarps > MAX_COMBOS:
        raise Symbolic("too many combinations")
    lane = np.arange(32, dtype=np.int64)
    grids = np.meshgrid(*[np.asarray(v, dtype=np.int64) for _, v in axes], np.arange(nwarps, dtype=np.int64),
                        indexing="ij") if axes else [np.arange(nwarps, dtype=np.int64)]
    env = {}
    for (name, _), g in zip(axes, grids[:-1]):
        env[name] = g.reshape(-1, 1)
    warp = grids[-1].reshape(-1, 1)
    lin = warp * 32 + lane.reshape(1, -1)
    env.update((sym.decl().name(), v) for sym, v in k.thread_split(lin))
    in_block = lin < k.num_threads
    a = np.broadcast_to(_np_eval(addr, env), lin.shape)
    try:
        act = np.broadcast_to(_np_eval(cond, env), lin.shape) & in_block
        note = ""
    except Symbolic:
        act = in_block  # unknown guards: count the lane as active (an upper bound)
        note = "guards not evaluated: all lanes counted active"
    nwords = max(1, (width + 3) // 4) if width >= 4 else 1
    worst, where = 1, None
    for row in range(lin.shape[0]):
        for lanes in groups:
            sel = [l_ for l_ in lanes if act[row, l_]]
            if len(sel) < 2:
                continue
            words = set()
            for l_ in sel:
                w0 = int(a[row, l_]) >> 2
                for j in range(nwords):
                    words.add(w0 + j)
            counts = {}
            for w in words:
                counts[w % 32] = counts.get(w % 32, 0) + 1
            d = max(counts.values())
            if d > worst:
                worst = d
                where = {"warp": int(warp[row, 0]), "lanes": [lanes[0], lanes[-1]],
                         **{n: int(env[n][row, 0]) for n, _ in axes}}
    detail = {"degree": worst}
    if where:
        detail["at"] = {k.syms.pretty.get(n, n): v for n, v in where.items()}
    if note:
        detail["note"] = note
    return worst, detail


def _enum_values(k, name, addr):
    if k.syms.role.get(name) != "loop":
        return None
    return loop_values(k, name, [addr])


def _symbolic(k, ctx, s, addr, cond, groups, width, loops=None):
    """Bit-vector search for the largest degree, lanes concrete and all else symbolic."""
    conv = ToBV()
    nwords = max(1, (width + 3) // 4) if width >= 4 else 1
    warp = k.syms.int_sym("bank.warp", "block")
    base = ctx.shape_facts() + ctx.block_facts() + ctx.loop_facts(s.loops if loops is None else loops)
    base.append(warp >= 0)
    base.append(warp < max(1, k.num_threads // 32))
    worst, where = 1, None
    for lanes in groups:
        items = []
        for l_ in lanes:
            lin = warp * 32 + l_
            pairs = k.thread_split(lin)
            a_l = z3.substitute(addr, *pairs)
            act = z3.And(z3.substitute(cond, *pairs), lin < k.num_threads)
            for j in range(nwords):
                items.append((act, conv(a_l / 4 + j)))
        bank = z3.BitVec("bank.sel", 64)
        terms = []
        for i, (act, w) in enumerate(items):
            fresh = [z3.Or(z3.Not(conv(items[q][0])), items[q][1] != w) for q in range(i)]
            terms.append(z3.If(z3.And([conv(act), z3.URem(w, 32) == bank] + fresh),
                               z3.BitVecVal(1, 64), z3.BitVecVal(0, 64)))
        cnt = terms[0]
        for t in terms[1:]:
            cnt = cnt + t
        bfs = [conv(f) for f in base]
        d = worst + 1
        while d <= len(lanes) * nwords:
            res, m = ctx.solve(bfs + [z3.UGE(cnt, d), z3.ULT(bank, 32)])
            if res == "unknown":
                raise NotImplementedError(f"solver could not decide ({m})")
            if res != "sat":
                break
            worst = d
            where = {"lanes": [lanes[0], lanes[-1]]}
            d += 1
    detail = {"degree": worst}
    if where:
        detail["at"] = where
    return worst, detail


__all__ = ["run", "site_degree", "phases"]
