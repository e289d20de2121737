"""Symbolic counts of one thread's executions of a site, up to a program point.

`Counts.before(a, p, pred)` is the number of executions of site `a` by the thread that
executes `p` (the same thread symbols), strictly before that execution of `p` in program
order, in which `a`'s path conditions and `pred` hold. `p` may be `END` (the whole kernel).
Mbarrier phases (the n-th arrival or wait of a thread on a barrier), induction registers
(`cnt = cnt + 1` phase counters) and cp.async group numbers are such counts.

A count is a sum over the iteration space of `a`'s loops. Closed forms come from
  - enumerating loops with a small constant range;
  - folding linear bounds on a loop index (`c + 3 < n`) into the index's range;
  - counting residues when the index occurs only periodically (`c % 3`, `(c + 1) // 2 % 2`):
    #{v in [lo, hi): v = r mod M} = floor((hi-1-r)/M) - floor((lo-1-r)/M).
A sum with no closed form becomes an uninterpreted *partial sum*: the same summand over the same
range gives the same term (so equal counts compare equal), its value is left open (sound).
A summand that depends on an unmodeled value (a fresh symbol that may change from one iteration
to the next) cannot be summed at all: the count is None and the caller reports UNKNOWN.
"""
from __future__ import annotations

import itertools
import math

import z3

from . import model as M
from .z3expr import consts_of

END = "END"
ENUM_LIMIT = 64          # loops with at most this many iterations are summed term by term
MAX_PERIOD = 64


def _flat(conds):
    out = []
    for c in conds:
        if z3.is_and(c):
            out.extend(_flat(c.children()))
        elif not z3.is_true(c):
            out.append(c)
    return out


def _mentions(t, name) -> bool:
    return name in consts_of(t)


def periods(term, name):
    """Periods P such that `term` depends on the constant `name` only through subterms that are
    periodic in it with period P: `(a*v + e) mod m` (period m) and `((a*v + e) div d) mod m`
    (period m*d), a and d integer constants. None when `name` occurs otherwise."""
    out = set()
    seen = set()

    def walk(t, in_mod):
        key = (t.get_id(), in_mod)
        if key in seen:
            return True
        seen.add(key)
        if z3.is_const(t):
            if t.decl().name() != name:
                return True
            if in_mod is None:
                return False
            out.add(in_mod)
            return True
        if not z3.is_app(t) or not _mentions(t, name):
            return True
        k = t.decl().kind()
        if k == z3.Z3_OP_MOD and z3.is_int_value(t.arg(1)) and t.arg(1).as_long() > 0:
            return walk(t.arg(0), t.arg(1).as_long()) and walk(t.arg(1), in_mod)
        if in_mod is not None:
            if k in (z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_UMINUS):
                return all(walk(c, in_mod) for c in t.children())
            if k == z3.Z3_OP_MUL:
                nonconst = [c for c in t.children() if not z3.is_int_value(c)]
                return len(nonconst) <= 1 and all(walk(c, in_mod) for c in t.children())
            if k in (z3.Z3_OP_IDIV, z3.Z3_OP_DIV) and z3.is_int_value(t.arg(1)) and t.arg(1).as_long() > 0:
                return walk(t.arg(0), in_mod * t.arg(1).as_long())
            return False
        return all(walk(c, None) for c in t.children())

    return sorted(out) if walk(term, None) else None


def linear(term, name):
    """(a, rest) with term == a*v + rest, a an integer constant and rest free of v; else None."""
    if not _mentions(term, name):
        return 0, term
    if z3.is_const(term):
        return 1, z3.IntVal(0)
    k = term.decl().kind()
    ch = term.children()
    if k == z3.Z3_OP_ADD:
        a, rest = 0, []
        for c in ch:
            r = linear(c, name)
            if r is None:
                return None
            a += r[0]
            rest.append(r[1])
        return a, z3.Sum(rest) if len(rest) > 1 else rest[0]
    if k == z3.Z3_OP_SUB:
        r0 = linear(ch[0], name)
        if r0 is None:
            return None
        a, rest = r0
        for c in ch[1:]:
            r = linear(c, name)
            if r is None:
                return None
            a -= r[0]
            rest = rest - r[1]
        return a, rest
    if k == z3.Z3_OP_UMINUS:
        r = linear(ch[0], name)
        return None if r is None else (-r[0], -r[1])
    if k == z3.Z3_OP_MUL:
        consts = [c for c in ch if z3.is_int_value(c)]
        other = [c for c in ch if not z3.is_int_value(c)]
        if len(other) != 1:
            return None
        r = linear(other[0], name)
        if r is None:
            return None
        f = math.prod(c.as_long() for c in consts)
        return r[0] * f, r[1] * f
    return None


def bound_of(cond, name):
    """('ge', t) for v >= t, ('lt', t) for v < t, ('eq', t) for v == t, or None. An equation
    a*v == e with |a| > 1 gives ('eq', e / a, [side conditions]): v == e / a when a divides e
    (the side conditions, free of v), no v otherwise."""
    neg = False
    while z3.is_not(cond):
        neg = not neg
        cond = cond.arg(0)
    if not z3.is_app(cond) or cond.num_args() != 2:
        return None
    k = cond.decl().kind()
    ops = {z3.Z3_OP_LT: "<", z3.Z3_OP_LE: "<=", z3.Z3_OP_GT: ">", z3.Z3_OP_GE: ">=", z3.Z3_OP_EQ: "=="}
    op = ops.get(k)
    if op is None or not z3.is_arith(cond.arg(0)):
        return None
    if neg:
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": None}[op]
        if op is None:
            return None
    r = linear(cond.arg(0) - cond.arg(1), name)
    if r is None or r[0] == 0:
        return None
    a, t = r                      # a*v + t  op  0
    if op == "==":
        if abs(a) != 1:
            # a v == -t: v = -t / a where a divides t, no v otherwise (slot j * 2 == b)
            return "eq", (-t) / a, [t % abs(a) == 0]
        return "eq", -t if a == 1 else t
    if a < 0:                     # flip to a positive coefficient
        a, t = -a, -t
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    if op == "<":                 # a v < -t  <=>  v < ceil(-t / a)
        return "lt", (-t + (a - 1)) / a if a > 1 else -t
    if op == "<=":                # a v <= -t <=>  v < floor(-t / a) + 1
        return "lt", (-t) / a + 1 if a > 1 else -t + 1
    if op == ">":                 # a v > -t  <=>  v >= floor(-t / a) + 1
        return "ge", (-t) / a + 1 if a > 1 else -t + 1
    return "ge", (-t + (a - 1)) / a if a > 1 else -t     # a v >= -t <=> v >= ceil(-t / a)


def _zmin(a, b):
    return b if a is None else z3.If(a <= b, a, b)


def _zmax(a, b):
    return b if a is None else z3.If(a >= b, a, b)


def span(lo, hi, ordered=False):
    return z3.simplify(hi - lo if ordered else z3.If(hi > lo, hi - lo, 0))


def residues(lo, hi, r, m, ordered=False):
    """#{v in [lo, hi): v = r (mod m)}; `ordered` when hi >= lo is known."""
    t = (hi - 1 - r) / m - (lo - 1 - r) / m
    return z3.simplify(t if ordered else z3.If(hi > lo, t, 0))


class Unsummable(Exception):
    pass


class Counts:
    def __init__(self, kernel):
        self.k = kernel
        self.syms = kernel.syms
        self._cache = {}
        self._psums = {}
        self._fresh = itertools.count()
        self.defs = {}            # abstract count name -> its value (see _abstract)
        self._abstracts = {}
        self.unknown_roles = ("unknown",)

    # -- public ---------------------------------------------------------------------------
    def before(self, a, p, pred=None):
        """Executions of site `a` before point `p` (a Site or END) in the executing thread."""
        pred = z3.BoolVal(True) if pred is None else pred
        # the count depends on p only through the loops it shares with a and whether a comes
        # first in their body: points alike in both share one term
        p_loops = () if p is END else p.loops
        depth = 0
        for x, y in zip(a.loops, p_loops):
            if x is not y:
                break
            depth += 1
        first = p is END or a.id < p.id
        key = (a.id, depth, first, pred.get_id())
        hit = self._cache.get(key)
        if hit is not None and hit[0].eq(pred):
            return hit[1]
        try:
            r = self._before(a, depth, first, pred)
        except Unsummable:
            r = None
        if r is not None and self._has_psum(r):
            r = self._abstract(r)
        self._cache[key] = (pred, r)
        return r

    def _has_psum(self, t):
        from .z3expr import subterms
        return any(z3.is_app(x) and x.num_args() > 0 and x.decl().name().startswith("psum#")
                   for x in subterms(t, set()))

    def _abstract(self, r):
        """A name for a count with no closed form: an uninterpreted function of the block, thread
        and loop symbols the count depends on. Queries see the name and get its definition (and
        that it is >= 0) only when they need it (verify.solver.Ctx.definitions)."""
        hit = self._abstracts.get(r.get_id())
        if hit is not None and hit[0].eq(r):
            return hit[1]
        # block indices too: a query over two blocks renames them (barriers.global_race)
        free = sorted((n, c) for n, c in consts_of(r).items()
                      if self.syms.role.get(n) not in ("shape", "param"))
        name = f"~count#{len(self.defs)}"
        f = z3.Function(name, *([z3.IntSort()] * len(free)), z3.IntSort())
        c = f(*[x for _, x in free]) if free else z3.Int(name)
        self.defs[name] = (r, [x for _, x in free])
        self._abstracts[r.get_id()] = (r, c)
        return c

    # -- the sum over the iteration space ----------------------------------------------------
    def _before(self, a, depth, first, pred):
        conds = list(a.conds) + [pred]
        total = []
        for d in range(depth):
            total.append(self._sum_from(a, conds, d, upper=a.loops[d].sym))
        if first:
            total.append(self._sum_from(a, conds, depth, upper=None))
        if not total:
            return z3.IntVal(0)
        return z3.simplify(z3.Sum(total) if len(total) > 1 else total[0])

    def _sum_from(self, a, conds, depth, upper):
        """Sum over a's loops from `depth` inward; the loop at `depth` runs up to `upper`
        (exclusive; its full range when None), outer loops keep their symbols."""
        ren = []
        for lp in a.loops[depth:]:
            v = z3.Int(f"~{lp.var}#{next(self._fresh)}")
            self.syms.role.setdefault(v.decl().name(), "sum")
            ren.append((lp.sym, v))

        def R(t):
            return z3.substitute(t, *ren) if ren else t
        items = [(_flat([R(c) for c in conds]), z3.IntVal(1))]
        inner = list(zip(a.loops[depth:], (v for _, v in ren)))
        for i in range(len(inner) - 1, -1, -1):
            lp, v = inner[i]
            lo = R(lp.lo)
            # the range up to the point's own index is never empty-reversed: it starts at lo
            ordered = i == 0 and upper is not None
            hi = upper if ordered else lo + R(lp.extent)
            if ordered and _const(lo) is not None and _const(R(lp.extent)) is not None \
                    and _const(R(lp.extent)) <= ENUM_LIMIT:
                # a small constant loop (an unrolled ring period) up to the point's own index:
                # its whole range, term by term, with `v < index` kept as a condition (exact
                # where the summand's conditions mention v otherwise, e.g. `i != 0 or st != 0`)
                items = [(conds + [v < upper], w) for conds, w in items]
                hi, ordered = lo + R(lp.extent), False
            items = self.sum_items(items, v, lo, hi, ordered)
        return self.items_term(items)

    @staticmethod
    def items_term(items):
        terms = []
        for conds, w in items:
            if z3.is_false(w) or (z3.is_int_value(w) and w.as_long() == 0):
                continue
            terms.append(z3.If(z3.And(conds), w, 0) if conds else w)
        if not terms:
            return z3.IntVal(0)
        return z3.simplify(z3.Sum(terms) if len(terms) > 1 else terms[0])

    def sum_items(self, items, v, lo, hi, ordered=False):
        """Sum a list of (conditions, weight) over v in [lo, hi) (`ordered`: hi >= lo)."""
        name = v.decl().name()
        out = []
        clo, chi = _const(lo), _const(hi)
        for conds, w in items:
            vc = [c for c in conds if _mentions(c, name)]
            rest = [c for c in conds if not _mentions(c, name)]
            wv = _mentions(w, name)
            self._check_summable(vc + [w] + rest)
            if not vc and not wv:
                out.append((rest, z3.simplify(w * span(lo, hi, ordered))))
                continue
            if clo is not None and chi is not None and chi - clo <= ENUM_LIMIT:
                for val in range(clo, chi):
                    sub = [z3.simplify(z3.substitute(c, (v, z3.IntVal(val)))) for c in vc]
                    if any(z3.is_false(c) for c in sub):
                        continue
                    out.append((rest + [c for c in sub if not z3.is_true(c)],
                                z3.simplify(z3.substitute(w, (v, z3.IntVal(val))))))
                continue
            lo2, hi2, other, folded = lo, hi, [], False
            for c in vc:
                b = bound_of(c, name)
                if b is not None:
                    folded = True
                if b is None:
                    other.append(c)
                elif b[0] == "ge":
                    lo2 = _zmax(lo2, b[1])
                elif b[0] == "lt":
                    hi2 = _zmin(hi2, b[1])
                else:
                    lo2, hi2 = _zmax(lo2, b[1]), _zmin(hi2, b[1] + 1)
                    rest = rest + [z3.simplify(c) for c in (b[2] if len(b) > 2 else ())]
            keep = ordered and not folded
            if not other and not wv:
                out.append((rest, z3.simplify(w * span(lo2, hi2, keep))))
                continue
            ps = [periods(t, name) for t in other + [w]]
            if any(p is None for p in ps):
                out.append((rest, self._psum(other, w, v, lo2, hi2)))
                continue
            m = math.lcm(*[x for p in ps for x in p]) if any(ps) else 1
            if m > MAX_PERIOD:
                out.append((rest, self._psum(other, w, v, lo2, hi2)))
                continue
            for r in range(m):
                sub = [z3.simplify(z3.substitute(c, (v, z3.IntVal(r)))) for c in other]
                if any(z3.is_false(c) for c in sub):
                    continue
                wr = z3.simplify(z3.substitute(w, (v, z3.IntVal(r))))
                out.append((rest + [c for c in sub if not z3.is_true(c)],
                            z3.simplify(wr * residues(lo2, hi2, r, m, keep))))
        return out

    def _check_summable(self, terms):
        """A fresh symbol stands for an unmodeled value: it may differ between the iterations
        summed over, so no sum over a term that contains one is exact."""
        for t in terms:
            for n in consts_of(t):
                if self.syms.role.get(n) in self.unknown_roles:
                    raise Unsummable(n)

    def _psum(self, conds, w, v, lo, hi):
        """The uninterpreted partial sum of If(conds, w, 0) over v in [lo, hi)."""
        canon = z3.Int("~psum.v")
        body = z3.substitute(z3.If(z3.And(conds), w, 0) if conds else w, (v, canon))
        body = z3.simplify(body)
        hit = self._psums.get(body.get_id())
        if hit is None or not hit[0].eq(body):
            free = sorted((n, c) for n, c in consts_of(body).items() if n != canon.decl().name()
                          and self.syms.role.get(n) not in ("shape", "param"))
            f = z3.Function(f"psum#{len(self._psums)}", *([z3.IntSort()] * (2 + len(free))), z3.IntSort())
            hit = (body, f, [c for _, c in free])
            self._psums[body.get_id()] = hit
        _, f, free = hit
        return f(lo, hi, *free)


def _const(t):
    t = z3.simplify(t)
    return t.as_long() if z3.is_int_value(t) else None


def point_in(site, block):
    """Position in `block` of the item that contains `site` (None when it is outside)."""
    child, blk = site, site.parent
    while blk is not None:
        if blk is block:
            return child.pos
        owner = blk.owner
        if owner is None:
            return None
        child, blk = owner, owner.parent
    return None


__all__ = ["Counts", "END", "periods", "linear", "bound_of", "point_in"]


_ = M  # the model types the counts walk
