"""Exhaustive numeric evaluation of z3 terms over the finite parts of a kernel.

Thread ids and loop indices with constant ranges are finite; a loop index that only
occurs modulo a constant is finite up to its residue. When every symbol a term depends
on is of these kinds, enumerating all values decides questions about the term exactly
(e.g. "do two different threads ever touch the same byte?") in milliseconds, where the
solver would grind through div/mod arithmetic. Anything else raises `Symbolic` and the
caller falls back to Z3.
"""
from __future__ import annotations

import math

import numpy as np
import z3

from .z3expr import consts_of, has_uninterpreted_app  # noqa: F401  (consts_of re-exported)

MAX_INSTANCES = 1 << 16
_inst_cache: dict = {}


class Symbolic(Exception):
    pass


def np_eval(t, env, cache=None):
    cache = {} if cache is None else cache
    key = t.get_id()
    hit = cache.get(key)
    if hit is not None and hit[0].eq(t):
        return hit[1]
    if z3.is_int_value(t):
        v = t.as_long()
        r = np.int64(v) if -2**63 <= v < 2**63 else _Big(v)
    elif z3.is_bv_value(t):
        r = np.int64(t.as_signed_long())
    elif z3.is_true(t):
        r = np.bool_(True)
    elif z3.is_false(t):
        r = np.bool_(False)
    elif z3.is_const(t):
        name = t.decl().name()
        if name not in env:
            raise Symbolic(name)
        r = env[name]
    else:
        kind = t.decl().kind()
        ch = [np_eval(c, env, cache) for c in t.children()]
        if any(isinstance(c, _Big) for c in ch):
            r = _big_op(kind, ch)
        elif kind in _BV_OPS:
            r = _BV_OPS[kind](*ch)
        elif kind == z3.Z3_OP_ADD:
            r = ch[0]
            for c in ch[1:]:
                r = r + c
        elif kind == z3.Z3_OP_SUB:
            r = ch[0]
            for c in ch[1:]:
                r = r - c
        elif kind == z3.Z3_OP_UMINUS:
            r = -ch[0]
        elif kind == z3.Z3_OP_MUL:
            r = ch[0]
            for c in ch[1:]:
                r = r * c
        elif kind in (z3.Z3_OP_IDIV, z3.Z3_OP_DIV):
            b = ch[1]
            # z3 integer division is Euclidean: floor for b > 0, ceiling for b < 0
            safe = np.where(b == 0, 1, b)
            r = np.where(b > 0, np.floor_divide(ch[0], safe), -np.floor_divide(ch[0], -safe))
        elif kind == z3.Z3_OP_MOD:
            b = np.abs(ch[1])
            r = np.mod(ch[0], np.where(b == 0, 1, b))
        elif kind == z3.Z3_OP_ITE:
            r = np.where(ch[0], ch[1], ch[2])
        elif kind == z3.Z3_OP_LE:
            r = ch[0] <= ch[1]
        elif kind == z3.Z3_OP_LT:
            r = ch[0] < ch[1]
        elif kind == z3.Z3_OP_GE:
            r = ch[0] >= ch[1]
        elif kind == z3.Z3_OP_GT:
            r = ch[0] > ch[1]
        elif kind == z3.Z3_OP_EQ:
            r = ch[0] == ch[1]
        elif kind == z3.Z3_OP_DISTINCT:
            r = ch[0] != ch[1]
        elif kind == z3.Z3_OP_AND:
            r = ch[0]
            for c in ch[1:]:
                r = np.logical_and(r, c)
        elif kind == z3.Z3_OP_OR:
            r = ch[0]
            for c in ch[1:]:
                r = np.logical_or(r, c)
        elif kind == z3.Z3_OP_NOT:
            r = np.logical_not(ch[0])
        elif kind == z3.Z3_OP_IMPLIES:
            r = np.logical_or(np.logical_not(ch[0]), ch[1])
        else:
            raise Symbolic(t.decl().name())
    cache[key] = (t, r)
    return r


class _Big:
    """An integer constant outside int64: only appears in the sign fix-up of 64-bit
    bit-vector results, If(u >= 2^63, u - 2^64, u), which int64 wrap-around already does."""

    def __init__(self, v):
        self.v = v


def _big_op(kind, ch):
    big = next(c for c in ch if isinstance(c, _Big))
    other = [c for c in ch if not isinstance(c, _Big)]
    if kind in (z3.Z3_OP_ADD, z3.Z3_OP_SUB) and big.v % 2**64 == 0 and len(other) == 1:
        return other[0]
    if kind in (z3.Z3_OP_GE, z3.Z3_OP_GT, z3.Z3_OP_LE, z3.Z3_OP_LT) and len(other) == 1:
        big_on_right = isinstance(ch[1], _Big)
        bigger = big.v > 0
        if kind in (z3.Z3_OP_GE, z3.Z3_OP_GT):
            val = (not bigger) if big_on_right else bigger
        else:
            val = bigger if big_on_right else (not bigger)
        return np.bool_(val)
    raise Symbolic("integer beyond 64 bits")


_BV_OPS = {
    z3.Z3_OP_INT2BV: lambda a: a, z3.Z3_OP_BV2INT: lambda a: a,
    z3.Z3_OP_BXOR: np.bitwise_xor, z3.Z3_OP_BAND: np.bitwise_and, z3.Z3_OP_BOR: np.bitwise_or,
    z3.Z3_OP_BNOT: np.invert, z3.Z3_OP_BSHL: np.left_shift, z3.Z3_OP_BASHR: np.right_shift,
    z3.Z3_OP_BADD: lambda a, b: a + b, z3.Z3_OP_BSUB: lambda a, b: a - b, z3.Z3_OP_BMUL: lambda a, b: a * b,
    z3.Z3_OP_SGEQ: lambda a, b: a >= b, z3.Z3_OP_SLEQ: lambda a, b: a <= b,
    z3.Z3_OP_SGT: lambda a, b: a > b, z3.Z3_OP_SLT: lambda a, b: a < b,
}


def mod_only(term, name):
    """Periods of the constant `name` in `term` (it occurs only modulo constants, possibly
    through linear arithmetic and constant divisions inside the modulo); None otherwise."""
    from .counting import periods
    return periods(term, name)


def _loop(k, name):
    return next((x for x in k.loops if x.sym.decl().name() == name), None)


def _const_range(lp):
    """The whole range of loop lp when its bounds are constants, else None."""
    from .checks.common import simplify_int
    lo, ext = simplify_int(lp.lo), simplify_int(lp.extent)
    return range(lo, lo + ext) if lo is not None and ext is not None else None


def loop_values(k, name, terms):
    """Values to enumerate for loop index `name` so that `terms` take all their values."""
    lp = _loop(k, name)
    if lp is None:
        return None
    whole = _const_range(lp)
    if whole is not None:
        return list(whole)
    moduli = set()
    for t in terms:
        m = mod_only(t, name)
        if m is None:
            return None
        moduli.update(m)
    if not moduli:
        return [0]
    return list(range(math.lcm(*moduli)))


def _periodic_in(cond, sampled):
    """cond takes, on one sample period of each sampled loop, every value it takes anywhere."""
    names = consts_of(cond)
    for name, period in sampled.items():
        if name not in names:
            continue
        m = mod_only(cond, name)
        if m is None or any(period % x for x in m):
            return False
    return True


def instances(k, site, terms, base_name=None):
    """Enumerate the executions of `site` that matter for `terms`.

    Returns (env, n) where env maps symbol names (thread ids and loop indices) to
    arrays of length n, plus '__thread' (linear thread id) and '__active' (the site's
    guards, or all-true where they cannot be evaluated)."""
    free = {}
    for t in terms:
        free.update(consts_of(t))
    thread_names = {sym.decl().name() for sym, _ in k.threads.values()}
    axes = []
    sampled = {}   # loop -> period, for loops enumerated over one period of the terms
    for name in sorted(free):
        if name in thread_names:
            continue
        if k.syms.role.get(name) != "loop":
            raise Symbolic(name)
        vals = loop_values(k, name, terms)
        if vals is None:
            raise Symbolic(name)
        axes.append((name, vals))
        if _const_range(_loop(k, name)) is None:
            sampled[name] = len(vals)
    # the site's loops the terms do not mention stand for every iteration at once, as if
    # sampled with period 1
    for lp in site.loops:
        name = lp.sym.decl().name()
        if name not in free and not _single_trip(lp):
            sampled[name] = 1
    key = (id(k), site.id, tuple((n, len(v), v[0] if v else 0) for n, v in axes))
    hit = _inst_cache.get(key)
    if hit is not None and hit[0] is k:
        return hit[1], hit[2]
    n_threads = k.num_threads
    total = n_threads * math.prod(len(v) for _, v in axes)
    if total > MAX_INSTANCES:
        raise Symbolic("too many instances")
    grids = np.meshgrid(np.arange(n_threads, dtype=np.int64),
                        *[np.asarray(v, dtype=np.int64) for _, v in axes], indexing="ij")
    env = {}
    lin = grids[0].reshape(-1)
    for (name, _), g in zip(axes, grids[1:]):
        env[name] = g.reshape(-1)
    env.update((sym.decl().name(), v) for sym, v in k.thread_split(lin))
    env["__thread"] = lin
    # A guard is evaluated on the enumeration only where a sampled loop enters it periodically
    # (its period dividing the sample's): `1 <= c` on a sample c in {0, 1} of a ring's period
    # would drop every execution of residue 0 (an arrival's barrier index, a copy's bytes).
    # Others are left out: the executions are then over-approximated, which every caller allows.
    act = np.ones(lin.shape, dtype=bool)
    for c in site.conds:
        if not _periodic_in(c, sampled):
            continue
        try:
            act &= np.broadcast_to(np_eval(c, env), lin.shape)
        except Symbolic:
            pass
    env["__active"] = act
    if len(_inst_cache) > 4096:
        _inst_cache.clear()
    _inst_cache[key] = (k, env, lin.shape[0])
    return env, lin.shape[0]


def any_overlap(k, x, y, ox, nx, oy, ny, distinct_threads: bool):
    """Whether some execution of x and some execution of y touch a common byte
    (by two different threads when `distinct_threads`). None when not enumerable.

    When x is y the two executions must differ (the race check's query asks for two
    executions of one site): an execution overlapping itself does not count, two with the
    same bytes do."""
    if x is y and not distinct_threads:
        return _self_overlap(k, x, ox, nx)
    try:
        ax, bx, tx, _ = _byte_ranges(k, x, ox, nx)
        ay, by, ty, _ = _byte_ranges(k, y, oy, ny)
    except Symbolic:
        return None
    if ax.size == 0 or ay.size == 0:
        return False
    # dedupe identical (start, end, thread) rows to keep the pairwise test small
    X = np.unique(np.stack([ax, bx, tx], axis=1), axis=0)
    Y = np.unique(np.stack([ay, by, ty], axis=1), axis=0)
    step = max(1, (1 << 22) // max(1, len(X)))
    for i in range(0, len(Y), step):
        yy = Y[i:i + step]
        m = (X[None, :, 0] < yy[:, None, 1]) & (yy[:, None, 0] < X[None, :, 1])
        if distinct_threads:
            m &= X[None, :, 2] != yy[:, None, 2]
        if m.any():
            return True
    return False


def _byte_ranges(k, site, off, n):
    """[start, end) and thread of each active execution of `site`, and the enumeration's symbols."""
    env, _ = instances(k, site, [off, n])
    act = env["__active"]
    a = np.broadcast_to(np_eval(off, env), env["__thread"].shape)[act]
    return a, a + np.broadcast_to(np_eval(n, env), env["__thread"].shape)[act], env["__thread"][act], env


def _self_overlap(k, x, ox, nx):
    """any_overlap for two different executions of one site, by any threads."""
    try:
        a, b, _, env = _byte_ranges(k, x, ox, nx)
    except Symbolic:
        return None
    if any(lp.sym.decl().name() not in env and not _single_trip(lp) for lp in x.loops):
        return True     # executions that differ only in a loop the address ignores: same bytes
    # sorted by start, two intervals overlap iff one starts before an earlier one's end
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    live = b > a            # empty intervals touch no byte
    a, b = a[live], b[live]
    if a.size < 2:
        return False
    return bool(np.any(a[1:] < np.maximum.accumulate(b)[:-1]))


def _single_trip(lp) -> bool:
    e = z3.simplify(lp.extent)
    return z3.is_int_value(e) and e.as_long() <= 1


def finite_range(k, site, term):
    """(min, max) of `term` over the executions of `site`, when it only depends on finite
    things; None otherwise. Executions whose guards cannot be evaluated are included."""
    try:
        env, _ = instances(k, site, [term])
        v = np.broadcast_to(np_eval(term, env), env["__thread"].shape)[env["__active"]]
    except Symbolic:
        return None
    if v.size == 0:
        return ()
    return int(v.min()), int(v.max())


def abstract_finite(k, site, term, syms, tag="fin"):
    """Split a sum into its finite part F and the rest: returns (rest + f, facts) with f a
    fresh symbol ranging over [min F, max F]. Replacing F by any value of its range only
    adds behaviours, so a bound proved for the abstraction holds for the term; the solver
    is spared the div/mod arithmetic of thread and unrolled-loop indices."""
    t = z3.simplify(term)
    parts = list(t.children()) if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_ADD else [t]
    thread_names = {sym.decl().name() for sym, _ in k.threads.values()}
    finite, rest = [], []
    for p in parts:
        names = consts_of(p)
        if names and all(n in thread_names or k.syms.role.get(n) == "loop" for n in names) \
                and not has_uninterpreted_app(p):
            finite.append(p)
        else:
            rest.append(p)
    if not finite:
        return term, []
    fsum = finite[0] if len(finite) == 1 else z3.Sum(finite)
    rng = finite_range(k, site, fsum)
    if rng is None:
        # some loop index is not enumerable: keep the parts that are
        return term, []
    if rng == ():
        return None, []          # the site never executes
    f = syms.fresh(tag)
    other = (rest[0] if len(rest) == 1 else z3.Sum(rest)) if rest else z3.IntVal(0)
    return other + f, [f >= rng[0], f <= rng[1]]


