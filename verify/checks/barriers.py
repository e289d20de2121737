"""Barriers: no block-wide barrier under a thread-divergent condition; named-barrier thread
counts match the threads that reach them; mbarriers are initialized and fenced before
use; each phase receives the arrivals and transaction bytes it expects; wait parities
follow the phase sequence; no shared-memory data race (two-thread encoding); and a
generic-proxy write read by the async proxy (wgmma, TMA store) crosses a proxy fence."""
from __future__ import annotations

import time

import numpy as np
import z3

from .. import model as M
from ..order import (Counter, count_threads, participation, phase_loop, round_of, thread_dependent,
                     thread_only, thread_values)
from ..numeric import any_overlap
from ..report import check_result
from .common import abs_range, mentions, simplify_int, site_finding, unknown

CATEGORY = "barriers"
ARRIVES = ("arrive", "arrive_expect_tx")
EXPECTS = ("expect_tx", "arrive_expect_tx")


def run(k, ctx, budget=None):
    state = _State(k, ctx)
    out = []
    for name, fn in (("barriers.divergence", _divergence), ("barriers.named_count", _named_count),
                     ("barriers.mbarrier_init", _mbar_init), ("barriers.mbarrier_phase", _mbar_phase),
                     ("barriers.parity", _parity), ("barriers.race", _race),
                     ("barriers.proxy_fence", _proxy_fence)):
        t0 = time.perf_counter()
        findings, detail = fn(state)
        out.append(check_result(name, CATEGORY, findings, detail, time.perf_counter() - t0))
    return out


class _State:
    def __init__(self, k, ctx):
        self.k, self.ctx = k, ctx
        self.counter = Counter(k)
        self.values = thread_values(k)
        self.rounds = {}          # site id -> round term (None: unsupported)
        self.deltas = {}          # wait site id -> observed completion offset
        self.round_notes = {}
        self.nbar = {b.name: simplify_int(b.size) or 1 for b in k.bufs.values() if b.scope == "barrier"}
        for s in k.sites:
            if s.mbar is not None:
                r, note = round_of(k, ctx, s, self.nbar.get(s.mbar[0], 1))
                self.rounds[s.id] = r
                if note:
                    self.round_notes[s.id] = note


# -- divergence -----------------------------------------------------------------------------

def _divergence(st):
    k, ctx = st.k, st.ctx
    findings = []
    n = 0
    tag_roles = ("thread", "unknown")
    for s in k.sites:
        if s.kind != "sync" or s.bar_key != ("sync",) or s.op == "named_arrive":
            continue
        n += 1
        diffs = []
        uniform = []
        for c in s.conds:
            if thread_dependent(c, k.syms):
                diffs.append(ctx.instance(c, "a", tag_roles) != ctx.instance(c, "b", tag_roles))
                uniform.append(z3.Or(ctx.instance(c, "a", tag_roles), ctx.instance(c, "b", tag_roles)))
            else:
                uniform.append(c)
        for lp in s.loops:
            for t in (lp.lo, lp.extent):
                if thread_dependent(t, k.syms):
                    diffs.append(ctx.instance(t, "a", tag_roles) != ctx.instance(t, "b", tag_roles))
        if not diffs:
            continue
        fs = ctx.shape_facts() + ctx.block_facts() + ctx.thread_facts("a") + ctx.thread_facts("b") \
            + ctx.loop_facts(s.loops) + uniform
        res, m = ctx.solve(fs + [z3.Or(diffs)])
        if res == "sat":
            findings.append(site_finding(k, ctx, "barriers.divergence", s,
                                         "__syncthreads is reached by some threads of the block but not others",
                                         m, fs + diffs))
        elif res == "unknown":
            findings.append(unknown("barriers.divergence", f"solver could not decide ({m})", s, k))
    return findings, f"{n} block-wide barriers"


# -- named barrier counts -----------------------------------------------------------------

def _named_count(st):
    k, ctx = st.k, st.ctx
    findings = []
    sites = [s for s in k.sites if s.kind == "sync" and (s.bar_key != ("sync",) or s.op == "named_arrive"
                                                          or s.extra.get("id") == 0)]
    for s in sites:
        if any(mentions(c, ("unknown",), k.syms) and thread_dependent(c, k.syms) for c in s.conds):
            findings.append(unknown("barriers.named_count", "reaching threads depend on an unmodeled value", s, k))
            continue
        n = count_threads(k, z3.And(list(s.conds)) if s.conds else z3.BoolVal(True), st.values)
        fs = ctx.shape_facts() + ctx.block_facts() + ctx.loop_facts(s.loops)
        res, m = ctx.solve(fs + [n > 0, n != s.bar_count])
        if res == "unsat":
            continue
        if res == "unknown":
            findings.append(unknown("barriers.named_count", f"solver could not decide ({m})", s, k))
            continue
        # a one-sided bar.arrive by another group may make up the count
        partners = [a for a in sites if a is not s and a.bar_key == s.bar_key and
                    (a.op == "named_arrive") != (s.op == "named_arrive")]
        ok = False
        for a in partners:
            na = ctx.instance(count_threads(k, z3.And(list(a.conds)) if a.conds else z3.BoolVal(True),
                                            st.values), "p")
            fa = ctx.loop_facts(a.loops, "p")
            r2, _ = ctx.solve(fs + fa + [n > 0, n + na != s.bar_count])
            if r2 == "unsat":
                ok = True
                break
        if not ok:
            from ..solver import evaluate
            findings.append(site_finding(
                k, ctx, "barriers.named_count", s,
                f"named barrier {s.extra.get('id')} expects {evaluate(m, s.bar_count)} threads but "
                f"{evaluate(m, n)} reach it", m, fs))
    return findings, f"{len(sites)} named-barrier sites"


# -- mbarrier initialization ------------------------------------------------------------------

def _mbar_init(st):
    k, ctx = st.k, st.ctx
    findings = []
    inits = [s for s in k.sites if s.op == "init"]
    uses = [s for s in k.sites if s.mbar is not None and s.op != "init"]
    if not uses and not inits:
        return findings, "no mbarriers"
    init_vals = {}
    for i in inits:
        v = _enum_values(k, i, i.mbar[1])
        init_vals.setdefault(i.mbar[0], set())
        if v is None:
            init_vals[i.mbar[0]] = None
        elif init_vals[i.mbar[0]] is not None:
            init_vals[i.mbar[0]] |= v
    for u in uses:
        same = [i for i in inits if i.mbar[0] == u.mbar[0]]
        known = init_vals.get(u.mbar[0])
        used = _enum_values(k, u, u.mbar[1])
        if known is not None and used is not None and used <= known:
            continue  # decided by enumeration
        fs = ctx.base([(u, "")])
        cover = z3.Or([u.mbar[1] == i.mbar[1] for i in same]) if same else z3.BoolVal(False)
        res, m = ctx.solve(fs + [z3.Not(cover)])
        if res == "sat":
            from ..solver import evaluate
            findings.append(site_finding(k, ctx, "barriers.mbarrier_init", u,
                                         f"{u.op} on {u.mbar[0]}[{evaluate(m, u.mbar[1])}], "
                                         "which is never initialized", m, fs + [u.mbar[1]]))
        elif res == "unknown":
            findings.append(unknown("barriers.mbarrier_init", f"solver could not decide ({m})", u, k))
    for i in inits:
        n = count_threads(k, z3.And(list(i.conds)) if i.conds else z3.BoolVal(True), st.values)
        fs = ctx.shape_facts() + ctx.block_facts() + ctx.loop_facts(i.loops)
        res, m = ctx.solve(fs + [n != 1])
        if res == "sat":
            from ..solver import evaluate
            findings.append(site_finding(k, ctx, "barriers.mbarrier_init", i,
                                         f"mbarrier initialized by {evaluate(m, n)} threads (expected one)", m, fs))
        if i.loops:
            findings.append(site_finding(k, ctx, "barriers.mbarrier_init", i,
                                         "mbarrier initialized inside a loop"))
    if uses:
        first = min(u.id for u in uses)
        last_init = max((i.id for i in inits), default=-1)
        fences = [f for f in k.sites if f.op == "fence_init" and last_init < f.id < first]
        syncs = [s for s in k.sites if s.kind == "sync" and s.bar_key == ("sync",) and not s.loops
                 and fences and fences[0].id < s.id < first]
        if not fences or not syncs:
            u = min(uses, key=lambda s: s.id)
            what = "an mbarrier-init fence" if not fences else "a block-wide barrier after the init fence"
            findings.append(site_finding(k, ctx, "barriers.mbarrier_init", u,
                                         f"first mbarrier use is not preceded by {what}"))
    return findings, f"{len(inits)} inits, {len(uses)} uses"


def _enum_values(k, site, term):
    """All values `term` takes over the executions of `site`, or None if not enumerable."""
    from ..numeric import Symbolic, instances, np_eval
    try:
        env, _ = instances(k, site, [term])
        v = np.broadcast_to(np_eval(term, env), env["__thread"].shape)[env["__active"]]
    except Symbolic:
        return None
    return set(v.tolist())


# -- arrivals and transaction bytes per phase ------------------------------------------------

def _init_count(inits, buf, b):
    r = z3.IntVal(-1)
    for i in inits:
        if i.mbar[0] == buf:
            r = z3.If(b == i.mbar[1], i.bar_count, r)
    return r


def _inner_loops(site, lp):
    return [x for x in site.loops if lp is None or x.depth > lp.depth]


def _event_sum(k, ctx, site, lp, b, weight, values, cache):
    """Sum over threads and over iterations of loops inside the phase loop of
    weight * [conds and the event's barrier is b]."""
    inner = _inner_loops(site, lp)
    combos = [[]]
    for x in inner:
        lo, ext = simplify_int(x.lo), simplify_int(x.extent)
        if lo is None or ext is None:
            return None
        combos = [c + [(x.sym, z3.IntVal(v))] for c in combos for v in range(lo, lo + ext)]
    total = z3.IntVal(0)
    tsyms = [sym for sym, _ in k.threads.values()]
    for ci, combo in enumerate(combos):
        key = (site.id, ci)
        hit = cache.get(key)
        if hit is None:
            cond = z3.And(list(site.conds)) if site.conds else z3.BoolVal(True)
            idx, w = site.mbar[1], weight
            if combo:
                cond, idx, w = (z3.substitute(t, *combo) for t in (cond, idx, w))
            thread_idx = any(_mentions(idx, s_) for s_ in tsyms)
            hit = (cond, idx, w, None if thread_idx else count_threads(k, cond, values))
            cache[key] = hit
        cond, idx, w, n = hit
        if n is None:
            n = count_threads(k, z3.And(cond, idx == b), values)
            total = total + n * w
        else:
            total = total + z3.If(idx == b, n * w, 0)
    return z3.simplify(total)


def _mentions(term, sym):
    from ..order import _mentions_sym
    return _mentions_sym(term, sym)


def _mbar_phase(st):
    k, ctx = st.k, st.ctx
    findings = []
    inits = [s for s in k.sites if s.op == "init"]
    events = [s for s in k.sites if s.mbar is not None and s.op in ARRIVES + EXPECTS + ("tma_load",)]
    groups = {}
    for e in events:
        lp = phase_loop(e)
        groups.setdefault((e.mbar[0], lp.id if lp else None), (lp, []))[1].append(e)
    checked = 0
    cache_a, cache_e, cache_d = {}, {}, {}
    for (buf, _), (lp, evs) in groups.items():
        for w in evs:
            checked += 1
            # b: the barrier this witness event uses, in one iteration of the phase loop
            b = ctx.instance(w.mbar[1], "w", ("thread", "unknown"))
            if lp is not None:
                b = _tag_inner(ctx, b, w, lp)
            arr, exp_, dlv = z3.IntVal(0), z3.IntVal(0), z3.IntVal(0)
            bad = False
            for e in evs:
                if e.op in ARRIVES:
                    t = _event_sum(k, ctx, e, lp, b, z3.IntVal(1), st.values, cache_a)
                    bad |= t is None
                    arr = arr + (t if t is not None else 0)
                if e.op in EXPECTS:
                    t = _event_sum(k, ctx, e, lp, b, e.tx_bytes, st.values, cache_e)
                    bad |= t is None
                    exp_ = exp_ + (t if t is not None else 0)
                if e.op == "tma_load":
                    if e.tx_bytes is None:
                        bad = True
                        continue
                    t = _event_sum(k, ctx, e, lp, b, e.tx_bytes, st.values, cache_d)
                    bad |= t is None
                    dlv = dlv + (t if t is not None else 0)
            if bad:
                findings.append(unknown("barriers.mbarrier_phase",
                                        "events inside loops with symbolic bounds under the phase loop", w, k))
                continue
            outer = [x for x in w.loops if lp is not None and x.depth <= lp.depth]
            wf = ctx.thread_facts("w") + [ctx.instance(c, "w", ("thread", "unknown")) for c in w.conds]
            if lp is not None:
                wf = [_tag_inner(ctx, c, w, lp) for c in wf] + ctx.loop_facts(_inner_loops(w, lp), "w")
            fs = ctx.shape_facts() + ctx.block_facts() + ctx.loop_facts(outer) + wf
            want = _init_count(inits, buf, b)
            res, m = ctx.solve(fs + [z3.Or(arr != want, exp_ != dlv)])
            if res == "sat":
                from ..solver import evaluate
                a_, w_, e_, d_ = (evaluate(m, x) for x in (arr, want, exp_, dlv))
                what = []
                if a_ != w_:
                    what.append(f"{a_} arrivals for an mbarrier initialized with count {w_}")
                if e_ != d_:
                    what.append(f"{e_} expected transaction bytes but {d_} delivered by TMA")
                findings.append(site_finding(k, ctx, "barriers.mbarrier_phase", w,
                                             f"phase of {buf}[{evaluate(m, b)}]: " + "; ".join(what),
                                             m, fs + [b]))
            elif res == "unknown":
                findings.append(unknown("barriers.mbarrier_phase", f"solver could not decide ({m})", w, k))
    return findings, f"{checked} producer events"


def _tag_inner(ctx, term, site, lp):
    """Give loops nested inside the phase loop the witness tag (the phase loop stays shared)."""
    pairs = []
    for x in _inner_loops(site, lp):
        pairs.append((x.sym, ctx.instance(x.sym, "w")))
    return z3.substitute(term, *pairs) if pairs else term


# -- wait parity ---------------------------------------------------------------------------

def _parity(st):
    k, ctx = st.k, st.ctx
    findings = []
    waits = [s for s in k.sites if s.op == "wait"]
    for w in waits:
        r = st.rounds.get(w.id)
        if r is None:
            findings.append(unknown("barriers.parity", st.round_notes.get(w.id, "unsupported phase pattern"), w, k))
            continue
        lp = phase_loop(w)
        inner = [c for c, d in zip(w.conds, w.cond_depths)
                 if lp is not None and d > lp.depth and not thread_only(c, k.syms)]
        if inner:
            # a wait skipped in some rounds would break the parity bookkeeping below
            findings.append(unknown("barriers.parity", "wait under a condition inside its phase loop", w, k))
            continue
        p = w.parity
        p0 = z3.substitute(p, (lp.sym, lp.lo)) if lp is not None else p
        fs = ctx.base([(w, "")])
        bad = z3.Or(z3.And(p != 0, p != 1), (p - r - p0) % 2 != 0)
        res, m = ctx.solve(fs + [bad])
        if res == "sat":
            from ..solver import evaluate
            findings.append(site_finding(
                k, ctx, "barriers.parity", w,
                f"wait on {w.mbar[0]}[{evaluate(m, w.mbar[1])}] uses parity {evaluate(m, p)} in its round "
                f"{evaluate(m, r)}, breaking the alternation that starts with parity {evaluate(m, p0)}",
                m, fs + [p, r]))
            continue
        if res == "unknown":
            findings.append(unknown("barriers.parity", f"solver could not decide ({m})", w, k))
            continue
        # the wait returns once completion (round - delta) happened; delta = parity in round 0
        st.deltas[w.id] = p0
    for s in k.sites:
        if s.mbar is not None and s.op != "wait" and s.op != "init" and st.rounds.get(s.id) is None:
            findings.append(unknown("barriers.parity", st.round_notes.get(s.id, "unsupported phase pattern"), s, k))
    return findings, f"{len(waits)} waits"


# -- data races -------------------------------------------------------------------------------

def _shared_accesses(k):
    return [s for s in k.sites if s.kind == "access" and s.shared]


def _static_extent(s):
    b = s.buf
    sz = simplify_int(b.size) if b.size is not None else None
    if sz is None or b.base_byte is None:
        return None
    return b.base_byte, b.base_byte + sz * b.elem_bytes


def _completes_locally(k, s):
    """An async read (wgmma, TMA store) whose completion wait follows before any barrier."""
    want = {"wgmma": "wgmma_wait", "tma_store": "tma_store_wait", "cp_async": "cp_async_wait"}[s.op]
    for t in k.sites[s.id + 1:]:
        if t.op == want and _prefix(t.loops, s.loops) and t.extra.get("n", 0) == 0:
            return True
        if t.kind in ("sync", "mbar") or not (_prefix(t.loops, s.loops) or _prefix(s.loops, t.loops)):
            return False
    return False


def _prefix(a, b):
    return len(a) <= len(b) and all(x is y for x, y in zip(a, b))


def _common_loops(a, b):
    out = []
    for x, y in zip(a.loops, b.loops):
        if x is not y:
            break
        out.append(x)
    return out


def _lex_before(ctx, x, tx, y, ty):
    """Instance tx of x precedes instance ty of y in one thread's program order."""
    common = _common_loops(x, y)
    terms = []
    eq = []
    for lp in common:
        a, b = ctx.instance(lp.sym, tx), ctx.instance(lp.sym, ty)
        terms.append(z3.And(eq + [a < b]))
        eq.append(a == b)
    terms.append(z3.And(eq) if x.id < y.id else z3.BoolVal(False))
    return z3.Or(terms)


def _releases(k, x):
    """Events after which x is visible through an mbarrier: [(site, shift)] where shift 1
    means the event in the next iteration of its innermost loop (it precedes x in the
    body). A TMA load releases its own write."""
    if x.op == "tma_load" and x.mbar is not None:
        return [(x, 0)]
    out = []
    for a in k.sites:
        if a.op not in ARRIVES or not _prefix(a.loops, x.loops):
            continue
        if a.id > x.id:
            out.append((a, 0))
        elif a.loops:
            out.append((a, 1))
    return out


def _acquires(st, y):
    """Waits before y: [(site, shift)], shift -1 meaning the previous iteration."""
    out = []
    for w in st.k.sites:
        if w.op != "wait" or w.id not in st.deltas or not _prefix(w.loops, y.loops):
            continue
        if w.id < y.id:
            out.append((w, 0))
        elif w.loops:
            out.append((w, -1))
    return out


def _shifted(ctx, site, shift, tag):
    """(substitution pairs, range facts) moving site's innermost loop by `shift` iterations."""
    if not shift:
        return [], []
    lp = site.loops[-1]
    v = ctx.instance(lp.sym, tag)
    lo, ext = ctx.instance(lp.lo, tag), ctx.instance(lp.extent, tag)
    return [(v, v + shift)], [v + shift >= lo, v + shift < lo + ext]


def _mbar_values(st, site):
    cache = st.__dict__.setdefault("mbar_values", {})
    if site.id not in cache:
        cache[site.id] = _enum_values(st.k, site, site.mbar[1])
    return cache[site.id]


def _can_match(st, a, w):
    """Whether release a and acquire w can ever name the same mbarrier."""
    key = (a.id, w.id)
    r = st.match_cache.get(key)
    if r is None:
        ctx = st.ctx
        r = None
        if a.mbar[0] != w.mbar[0]:
            r = False
        else:  # enumerate both indices when they only depend on finite things
            va, vw = _mbar_values(st, a), _mbar_values(st, w)
            if va is not None and vw is not None:
                r = bool(va & vw)
        if r is None:
            fs = ctx.base([(a, "1"), (w, "2")])
            res, _ = ctx.solve(fs + [ctx.instance(a.mbar[1], "1") == ctx.instance(w.mbar[1], "2")])
            r = res != "unsat"
        st.match_cache[key] = r
    return r


def _hop(st, a, ta, w, tw, sa=0, sw=0):
    """Release a (instance ta, shifted sa iterations) is observed by acquire w."""
    ctx = st.ctx
    ra, rw = st.rounds.get(a.id), st.rounds.get(w.id)
    if ra is None or rw is None or not _can_match(st, a, w):
        return None
    pa, fa = _shifted(ctx, a, sa, ta)
    pw, fw = _shifted(ctx, w, sw, tw)

    def at(term, tag, pairs):
        t = ctx.instance(term, tag)
        return z3.substitute(t, *pairs) if pairs else t
    return z3.And(fa + fw + [
        at(a.mbar[1], ta, pa) == at(w.mbar[1], tw, pw),
        at(ra, ta, pa) <= at(rw, tw, pw) - at(st.deltas[w.id], tw, pw)])


def _mbar_order(st, x, tx, y, ty):
    """x (instance tx) happens before y (instance ty) through one mbarrier phase."""
    ctx = st.ctx
    terms = []
    for a, sa in _releases(st.k, x):
        pa, _ = _shifted(ctx, a, sa, tx)
        conds_a = [z3.substitute(ctx.instance(c, tx), *pa) if pa else ctx.instance(c, tx)
                   for c in a.conds] if a is not x else []
        for w, sw in _acquires(st, y):
            h = _hop(st, a, tx, w, ty, sa, sw)
            if h is not None:
                pw, _ = _shifted(ctx, w, sw, ty)
                cw = [z3.substitute(ctx.instance(c, ty), *pw) if pw else ctx.instance(c, ty) for c in w.conds]
                terms.append(z3.And(conds_a + cw + [h]))
    return z3.Or(terms) if terms else z3.BoolVal(False)


def _witness_threads(k, site):
    """A concrete thread that executes `site` as far as its role tests tell (or None)."""
    import numpy as np

    from ..numeric import Symbolic, np_eval
    from ..order import thread_id_arrays, thread_only
    conds = [c for c in site.conds if thread_only(c, k.syms)]
    n = k.num_threads
    env = thread_id_arrays(k)
    mask = np.ones(n, dtype=bool)
    for c in conds:
        try:
            mask &= np.broadcast_to(np_eval(c, env), (n,))
        except Symbolic:
            return None
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    return k.thread_split(int(idx[0]))


def _mbar_order2(st, x, tx, y, ty):
    """x happens before y through two mbarrier phases and an intermediate thread
    (producer -> full -> consumer -> empty -> producer). Returns (formula, facts).

    The intermediate execution is existential; instead of a quantifier, concrete
    witnesses are tried: a thread that plays the intermediate role, and for its loops
    the iteration numbers of x or of y. Any witness that satisfies the chain proves the
    order, so trying only some of them can miss an order (a spurious race report) but
    never invent one."""
    import itertools
    k, ctx = st.k, st.ctx
    terms = []
    mid = "3"
    for a, sa in _releases(k, x):
        if sa:
            continue
        conds_a = [ctx.instance(c, tx) for c in a.conds] if a is not x else []
        for w1 in (w for w in k.sites if w.op == "wait" and w.id in st.deltas):
            h1 = _hop(st, a, tx, w1, mid)
            if h1 is None:
                continue
            for a2, s2 in _releases(k, w1):
                if a2.op == "tma_load" or s2:
                    continue
                # w1 must run whenever a2 does (same iteration, no extra guard), so that the
                # arrival y's wait observed implies w1 happened first in that thread
                if not all(any(c.eq(d) for d in a2.conds) for c in w1.conds):
                    continue
                who = _witness_threads(k, a2)
                if who is None:
                    continue
                for w2, sw2 in _acquires(st, y):
                    if sw2:
                        continue
                    h2 = _hop(st, a2, mid, w2, ty)
                    if h2 is None:
                        continue
                    # no upper bound on the intermediate iteration: y ran, so the arrival
                    # its wait observed took place, in whatever iteration has that round
                    lows = [ctx.instance(lp.sym, mid) >= ctx.instance(lp.lo, mid) for lp in w1.loops]
                    body = z3.And(conds_a + [ctx.instance(c, mid) for c in a2.conds] + lows
                                  + [ctx.instance(c, ty) for c in w2.conds] + [h1, h2])
                    tsub = [(ctx.instance(sym, mid), z3.IntVal(v)) for sym, v in who]
                    options = []
                    for depth, lp in enumerate(w1.loops):
                        opts = []
                        for other, tag in ((x, tx), (y, ty)):
                            if depth < len(other.loops):
                                opts.append(ctx.instance(other.loops[depth].sym, tag))
                        options.append([(ctx.instance(lp.sym, mid), o) for o in opts] or [None])
                    for combo in itertools.product(*options):
                        sub = tsub + [c for c in combo if c is not None]
                        terms.append(z3.substitute(body, *sub))
    return (z3.Or(terms) if terms else z3.BoolVal(False)), []


def _participation(st, key, waiters_only):
    cache = st.__dict__.setdefault("participation", {})
    if (key, waiters_only) not in cache:
        cache[(key, waiters_only)] = participation(st.k, key, waiters_only=waiters_only)
    return cache[(key, waiters_only)]


def _bar_order(st, x, tx, y, ty):
    """x happens before y through a block-wide or named barrier."""
    ctx = st.ctx
    terms = []
    for key in st.counter.keys():
        cx = ctx.instance(st.counter.before(x, key), tx)
        cy = ctx.instance(st.counter.before(y, key), ty)
        # Both threads take part in the barrier and y's thread passed more instances of it
        # than x's had: x's thread then executed instance cx as well, because the
        # divergence and named-count checks establish that all participants reach every
        # instance (a kernel failing those is rejected anyway).
        px = ctx.instance(_participation(st, key, False), tx)
        py = ctx.instance(_participation(st, key, True), ty)
        terms.append(z3.And(px, py, cx < cy))
    return z3.Or(terms) if terms else z3.BoolVal(False)


def _direct_order(st, x, tx, y, ty, async_x, async_y):
    terms = []
    if not async_x:
        terms.append(_bar_order(st, x, tx, y, ty))
        if async_y:
            same = st.ctx.instance(st.k.thread_linear(), tx) == st.ctx.instance(st.k.thread_linear(), ty)
            terms.append(z3.And(same, _lex_before(st.ctx, x, tx, y, ty)))
    return z3.Or(terms) if terms else z3.BoolVal(False)


def _staged(st, x, y, fs, overlap, ax, ay):
    """Decide "unordered and overlapping" in stages, cheapest first. Dropping the address
    constraint (stage a) only weakens the formula, so its UNSAT already proves order."""
    ctx = st.ctx
    orders = []
    for stage in ("direct", "mbar", "mbar2"):
        if stage == "mbar":
            orders += [z3.Not(_mbar_order(st, x, "1", y, "2")), z3.Not(_mbar_order(st, y, "2", x, "1"))]
        elif stage == "mbar2":
            f1, _ = _mbar_order2(st, x, "1", y, "2")
            f2, _ = _mbar_order2(st, y, "2", x, "1")
            if z3.is_false(f1) and z3.is_false(f2):
                break
            orders += [z3.Not(f1), z3.Not(f2)]
        res, m = ctx.solve(fs + orders, facts=False)
        if res == "unsat":
            return res, m
        res, m = ctx.solve(fs + orders + overlap, facts=False)
        if res == "unsat":
            return res, m
    return ctx.solve(fs + orders + overlap)


def _race(st):
    k, ctx = st.k, st.ctx
    st.match_cache = {}
    findings = []
    acc = _shared_accesses(k)
    asyncs = {}
    for s in acc:
        # a TMA load completes on its mbarrier; a wgmma, TMA store or cp.async counts as
        # done at its issue point only when its completion wait follows before any barrier
        if s.op == "tma_load":
            asyncs[s.id] = True
        elif s.async_proxy:
            asyncs[s.id] = not _completes_locally(k, s)
        else:
            asyncs[s.id] = False
    pairs = 0
    queried = 0
    reported = set()
    for i, x in enumerate(acc):
        for y in acc[i:]:
            if not (x.write or y.write):
                continue
            if x.buf.region != y.buf.region:
                continue
            ex, ey = _static_extent(x), _static_extent(y)
            if ex and ey and not (ex[0] < ey[1] and ey[0] < ex[1]):
                continue
            pairs += 1
            ax, ay = asyncs[x.id], asyncs[y.id]
            if not ax and not ay:
                cx = simplify_int(st.counter.before(x, ("sync",)))
                cy = simplify_int(st.counter.before(y, ("sync",)))
                if cx is not None and cy is not None and cx != cy:
                    continue  # a block-wide barrier always separates them
            key = (x.buf.name, y.buf.name, x.text, y.text)
            if key in reported:
                continue
            queried += 1
            (ox, nx), (oy, ny) = abs_range(x), abs_range(y)
            ox, nx = ctx.instance(ox, "1"), ctx.instance(nx, "1")
            oy, ny = ctx.instance(oy, "2"), ctx.instance(ny, "2")
            fs = ctx.base([(x, "1"), (y, "2")], relaxed=True)
            lin1 = ctx.instance(k.thread_linear(), "1")
            lin2 = ctx.instance(k.thread_linear(), "2")
            overlap = [ox < oy + ny, oy < ox + nx]
            if not ax and not ay:
                fs.append(lin1 != lin2)
            if x is y:  # two different executions of one site
                fs.append(z3.Or([lin1 != lin2] + [ctx.instance(lp.sym, "1") != ctx.instance(lp.sym, "2")
                                                  for lp in x.loops]))
            # exhaustive pre-filter: can two executions touch a common byte at all?
            ov = any_overlap(k, x, y, *abs_range(x), *abs_range(y), distinct_threads=not ax and not ay)
            if ov is False:
                continue
            fs.append(z3.Not(_direct_order(st, x, "1", y, "2", ax, ay)))
            fs.append(z3.Not(_direct_order(st, y, "2", x, "1", ay, ax)))
            res, m = _staged(st, x, y, fs, overlap, ax, ay)
            if res == "sat" and any(s.op == "cp_async" and asyncs[s.id] for s in (x, y)):
                # cp.async groups retired by wait_group(n > 0) are outside the encoding
                reported.add(key)
                findings.append(unknown("barriers.race", "cp.async completion through wait_group(n>0) "
                                        "is not modeled; cannot order this access", x, k))
                continue
            if res == "sat":
                from ..solver import evaluate
                reported.add(key)
                kinds = f"{'write' if x.write else 'read'} ({x.op}) / {'write' if y.write else 'read'} ({y.op})"
                f = site_finding(k, ctx, "barriers.race", x,
                                 f"data race on {x.buf.name}: {kinds}, byte {evaluate(m, z3.If(ox > oy, ox, oy))}, "
                                 f"threads {evaluate(m, lin1)} and {evaluate(m, lin2)} with no barrier ordering them",
                                 m, fs + overlap)
                f.access = f"{x.text}  <->  {y.text}"
                findings.append(f)
            elif res == "unknown":
                findings.append(unknown("barriers.race", f"solver could not decide ({m})", x, k))
    return findings, f"{len(acc)} shared accesses, {pairs} pairs, {queried} solver queries"


# -- proxy fences ---------------------------------------------------------------------------

GENERIC_WRITES = ("store", "stmatrix", "pointer", "cp_async")
ASYNC_READS = ("wgmma", "tma_store")
RELEASES = ("arrive", "arrive_expect_tx", "syncthreads", "named_sync", "named_arrive")


class _Flow:
    def __init__(self, k):
        self.k = k
        self.candidates = set()
        self.published = set()

    def block(self, blk, dirty):
        for it in blk.items:
            dirty = self.item(it, dirty)
        return dirty

    def item(self, it, dirty):
        if isinstance(it, M.Site):
            if it.kind == "access" and it.shared and it.write and it.op in GENERIC_WRITES:
                return dirty | {it.id}
            if it.op == "proxy_async":
                return frozenset()
            if it.kind == "access" and it.shared and it.op in ASYNC_READS:
                for w in dirty:
                    self.candidates.add((w, it.id))
            if it.op in RELEASES:
                self.published |= dirty
            return dirty
        if isinstance(it, M.LoopNode):
            cur = dirty
            while True:
                out = self.block(it.body, cur)
                nxt = cur | out
                if nxt == cur:
                    return out | dirty
                cur = nxt
        if isinstance(it, M.IfNode):
            if thread_dependent(it.cond, self.k.syms):
                # role branches run concurrently: writes one publishes may reach the other
                pub_in = frozenset()
                while True:
                    saved = self.published
                    self.published = set()
                    t = self.block(it.then, dirty | pub_in)
                    e = self.block(it.else_, dirty | pub_in)
                    pub = frozenset(self.published | t | e)
                    self.published = saved | pub
                    if pub <= pub_in:
                        return t | e
                    pub_in = pub_in | pub
            return self.block(it.then, dirty) | self.block(it.else_, dirty)
        return dirty


def _proxy_fence(st):
    k, ctx = st.k, st.ctx
    flow = _Flow(k)
    flow.block(k.root, frozenset())
    findings = []
    by_id = {s.id: s for s in k.sites}
    for wid, rid in sorted(flow.candidates):
        w, r = by_id[wid], by_id[rid]
        if w.buf.region != r.buf.region:
            continue
        ew, er = _static_extent(w), _static_extent(r)
        if ew and er and not (ew[0] < er[1] and er[0] < ew[1]):
            continue
        (ow, nw), (orr, nr) = abs_range(w), abs_range(r)
        ow, nw = ctx.instance(ow, "1"), ctx.instance(nw, "1")
        orr, nr = ctx.instance(orr, "2"), ctx.instance(nr, "2")
        fs = ctx.base([(w, "1"), (r, "2")])
        res, m = ctx.solve(fs + [ow < orr + nr, orr < ow + nw])
        if res == "sat":
            f = site_finding(k, ctx, "barriers.proxy_fence", r,
                             f"{r.op} reads {r.buf.name} (async proxy) after a generic-proxy {w.op} "
                             f"of {w.buf.name} with no fence.proxy.async in between", m, fs)
            f.access = f"{w.text}  ->  {r.text}"
            findings.append(f)
        elif res == "unknown":
            findings.append(unknown("barriers.proxy_fence", f"solver could not decide ({m})", r, k))
    return findings, f"{len(flow.candidates)} unfenced write/async-read paths"


__all__ = ["run"]
