"""Ordering facts over the program tree, as z3 terms.

- barrier counts: how many times a thread has executed a given barrier (block-wide
  __syncthreads or named barrier id) before reaching a site. Two accesses by different
  participating threads are in different barrier intervals exactly when the counts
  differ; loops with a fixed number of barriers per iteration give closed forms.
- mbarrier rounds: the iteration-local phase number of an mbarrier event, i.e. the
  number of earlier iterations of its phase loop that used the same barrier.
- thread counting: how many threads of the block execute a site (by enumeration).
"""
from __future__ import annotations

import z3

from . import model as M
from .z3expr import consts_of, has_uninterpreted_app

UNROLLED = ("3", "ForKind.UNROLLED", "unroll")


def mentions(term, roles, syms) -> bool:
    """Whether `term` contains a symbol with one of the given roles."""
    return any(syms.role.get(name) in roles for name in consts_of(term))


def is_zero(t) -> bool:
    t = z3.simplify(t)
    return z3.is_int_value(t) and t.as_long() == 0


class Counter:
    def __init__(self, kernel):
        self.k = kernel
        self._total = {}
        self._before = {}

    @staticmethod
    def matches(site, key) -> bool:
        return site.kind == "sync" and site.bar_key == key

    def total(self, node, key):
        ck = (id(node), key)
        r = self._total.get(ck)
        if r is not None:
            return r
        if isinstance(node, M.Site):
            r = z3.IntVal(1 if self.matches(node, key) else 0)
        elif isinstance(node, M.Block):
            r = z3.IntVal(0)
            for it in node.items:
                t = self.total(it, key)
                if not is_zero(t):
                    r = r + t
            r = z3.simplify(r)
        elif isinstance(node, M.IfNode):
            t, e = self.total(node.then, key), self.total(node.else_, key)
            r = z3.IntVal(0) if is_zero(t) and is_zero(e) else z3.If(node.cond, t, e)
        elif isinstance(node, M.LoopNode):
            b = self.total(node.body, key)
            lp = node.loop
            if is_zero(b):
                r = z3.IntVal(0)
            elif not mentions(b, ("loop",), self.k.syms) or not _mentions_sym(b, lp.sym):
                r = z3.If(lp.extent > 0, lp.extent, 0) * b
            else:
                r = self.k.syms.fresh(f"barriers_in_{lp.var}")
        else:
            r = z3.IntVal(0)
        self._total[ck] = r
        return r

    def before(self, site, key):
        ck = (site.id, key)
        r = self._before.get(ck)
        if r is not None:
            return r
        acc = z3.IntVal(0)
        child, block = site, site.parent
        while block is not None:
            for it in block.items[:child.pos]:
                t = self.total(it, key)
                if not is_zero(t):
                    acc = acc + t
            owner = block.owner
            if owner is None:
                break
            if isinstance(owner, M.LoopNode):
                per = self.total(owner.body, key)
                if not is_zero(per):
                    lp = owner.loop
                    if _mentions_sym(per, lp.sym):
                        acc = acc + self.k.syms.fresh(f"barriers_before_{lp.var}")
                    else:
                        acc = acc + (lp.sym - lp.lo) * per
            child, block = owner, owner.parent
        r = z3.simplify(acc)
        self._before[ck] = r
        return r

    def keys(self):
        return sorted({s.bar_key for s in self.k.sites if s.kind == "sync"}, key=str)


def _mentions_sym(term, sym) -> bool:
    return sym.decl().name() in consts_of(term)


_thread_only: dict = {}


def thread_only(cond, syms) -> bool:
    """A condition over thread ids and constants only (a role test like tx < 128)."""
    hit = _thread_only.get(cond.get_id())
    if hit is not None and hit[0].eq(cond):
        return hit[1]
    r = all(syms.role.get(n) == "thread" for n in consts_of(cond)) and not has_uninterpreted_app(cond)
    if len(_thread_only) > 100000:
        _thread_only.clear()
    _thread_only[cond.get_id()] = (cond, r)
    return r


def thread_dependent(cond, syms) -> bool:
    return mentions(cond, ("thread", "unknown"), syms)


def participation(k, key, waiters_only=False):
    """Condition (over base thread symbols) under which a thread takes part in barrier `key`.

    Block-wide barriers involve every thread. A named barrier's participants are the
    threads that satisfy the role tests guarding its sites; a site guarded by anything
    else thread-dependent does not count (an under-approximation: fewer orderings)."""
    if key == ("sync",):
        return z3.BoolVal(True)
    disj = []
    for s in k.sites:
        if s.kind != "sync" or s.bar_key != key:
            continue
        if waiters_only and s.op == "named_arrive":
            continue
        conj = []
        ok = True
        for c in s.conds:
            if thread_dependent(c, k.syms):
                if thread_only(c, k.syms):
                    conj.append(c)
                else:
                    ok = False
        if ok:
            disj.append(z3.And(conj) if conj else z3.BoolVal(True))
    return z3.Or(disj) if disj else z3.BoolVal(False)


def thread_values(k):
    """Concrete (symbol, value) substitutions for every thread of the block."""
    return [(lin, [(sym, z3.IntVal(v)) for sym, v in k.thread_split(lin)]) for lin in range(k.num_threads)]


def thread_id_arrays(k) -> dict:
    """Each thread-index symbol's value for every linear thread id of the block, as numpy arrays."""
    import numpy as np
    return {sym.decl().name(): v for sym, v in k.thread_split(np.arange(k.num_threads, dtype=np.int64))}


def count_threads(k, cond, values=None):
    """Number of threads of the block for which `cond` holds, as a z3 Int term.

    Conjuncts over thread ids only are evaluated for all threads at once; conjuncts
    without thread ids are uniform and factor out; the rest is substituted per thread."""
    import numpy as np
    from .numeric import Symbolic, np_eval

    conj = list(cond.children()) if z3.is_and(cond) else [cond]
    tnames = {sym.decl().name() for sym, _ in k.threads.values()}
    uniform, local, mixed = [], [], []
    for c in conj:
        from .solver import _consts
        acc = {}
        _consts(c, acc, set())
        has_t = any(n in tnames for n in acc)
        if not has_t and not _has_thread_app(c, tnames):
            uniform.append(c)
        elif all(n in tnames for n in acc) and not has_uninterpreted_app(c):
            local.append(c)
        else:
            mixed.append(c)
    n = k.num_threads
    env = thread_id_arrays(k)
    mask = np.ones(n, dtype=bool)
    for c in local:
        try:
            mask &= np.broadcast_to(np_eval(c, env), (n,))
        except Symbolic:
            mixed.append(c)
    if mixed:
        values = values if values is not None else thread_values(k)
        rest = z3.And(mixed)
        terms, const = [], 0
        for lin_id, pairs in values:
            if not mask[lin_id]:
                continue
            c = z3.simplify(z3.substitute(rest, *pairs))
            if z3.is_true(c):
                const += 1
            elif not z3.is_false(c):
                terms.append(z3.If(c, 1, 0))
        total = z3.IntVal(const) + (z3.Sum(terms) if terms else 0)
    else:
        total = z3.IntVal(int(mask.sum()))
    if uniform:
        total = z3.If(z3.And(uniform), total, 0)
    return total


def _has_thread_app(t, tnames) -> bool:
    """An uninterpreted application with a thread id among its arguments (a register load)."""
    from .solver import _consts
    acc = {}
    _consts(t, acc, set())
    return any(n in tnames for n in acc)


# -- mbarrier rounds -----------------------------------------------------------------------

def phase_loop(site):
    """The loop whose iterations are this mbarrier event's phases (None: straight-line)."""
    idx = site.mbar[1]
    for lp in reversed(site.loops):
        if _mentions_sym(idx, lp.sym):
            return lp
    for lp in reversed(site.loops):
        if str(lp.kind) not in UNROLLED:
            return lp
    return None


def round_of(k, ctx, site, nbar):
    """(round term, note). The round is the number of earlier iterations of the phase loop
    that touched the same barrier; None when the index pattern is not periodic."""
    lp = phase_loop(site)
    if lp is None:
        return z3.IntVal(0), ""
    outer = [x for x in site.loops if x.depth < lp.depth]
    if outer:
        pre = ctx.shape_facts() + ctx.block_facts()
        for x in outer:
            res, _ = ctx.solve(pre + [x.extent != 1])
            if res != "unsat":
                return None, f"mbarrier phases across nested loop {x.var}"
    idx = site.mbar[1]
    v = lp.sym
    if not _mentions_sym(idx, v):
        return v - lp.lo, ""
    P = _numeric_period(k, idx, v, nbar)
    if P is not None:
        return (v - lp.lo) / P, ""
    pre = ctx.shape_facts() + ctx.block_facts() + ctx.thread_facts()
    for P in range(1, max(2, nbar) + 1):
        shifted = z3.substitute(idx, (v, v + P))
        res, _ = ctx.solve(pre + [shifted != idx])
        if res != "unsat":
            continue
        distinct = True
        for d in range(1, P):
            res, _ = ctx.solve(pre + [z3.substitute(idx, (v, v + d)) == idx])
            if res != "unsat":
                distinct = False
                break
        if distinct:
            return (v - lp.lo) / P, ""
        break
    return None, f"mbarrier index {idx} is not periodic in {lp.var}"


def _numeric_period(k, idx, v, nbar):
    """Smallest period of idx in v when v occurs only modulo constants and idx depends on
    nothing else but constants: decided exactly over one full cycle of residues."""
    import math

    import numpy as np
    from .numeric import Symbolic, consts_of, mod_only, np_eval
    name = v.decl().name()
    others = [n for n in consts_of(idx) if n != name]
    mods = mod_only(idx, name)
    if others or not mods:
        return None
    m = math.lcm(*mods)
    xs = np.arange(2 * m, dtype=np.int64)
    try:
        vals = np.broadcast_to(np_eval(idx, {name: xs}), xs.shape)
    except Symbolic:
        return None
    for P in range(1, max(2, nbar) + 1):
        if m % P:
            continue
        if np.all(vals[P:P + m] == vals[:m]) and len(set(vals[:P].tolist())) == P:
            return P
    return None
