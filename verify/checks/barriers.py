"""Barriers: no block-wide barrier or early return under a thread-divergent condition; named-barrier thread
counts match the threads that reach them; mbarriers are initialized and fenced before
use; each phase receives the arrivals and transaction bytes it expects; wait parities
follow the phase sequence; no shared-memory data race (two-thread encoding); and a
generic-proxy write read by the async proxy (wgmma, TMA store) crosses a proxy fence."""
from __future__ import annotations

import time

import numpy as np
import z3

from .. import model as M
from ..counting import END
from ..numeric import Symbolic, any_overlap, np_eval
from ..order import (Counter, count_threads, participation, phase_loop, thread_dependent, thread_only,
                     thread_values)
from ..phases import Phases
from ..report import check_result
from ..solver import PER_INSTANCE_ROLES
from ..z3expr import consts_of
from .common import FAILED, Finding, abs_range, definite_finding, mentions, simplify_int, site_finding, unknown

CATEGORY = "barriers"
ARRIVES = ("arrive", "arrive_expect_tx")
EXPECTS = ("expect_tx", "arrive_expect_tx")


def run(k, ctx, budget=None):
    state = _State(k, ctx)
    out = []
    for name, fn in (("barriers.divergence", _divergence), ("barriers.named_count", _named_count),
                     ("barriers.mbarrier_init", _mbar_init), ("barriers.mbarrier_phase", _mbar_phase),
                     ("barriers.parity", _parity), ("barriers.race", _race),
                     ("barriers.global_race", _global_race), ("barriers.tma_store_overlap", _tma_store_overlap),
                     ("barriers.proxy_fence", _proxy_fence), ("barriers.written_once", _written_once)):
        if name == "barriers.written_once" and not k.written_once:
            continue    # opt-in: only for the buffers a job declares
        t0 = time.perf_counter()
        findings, detail = fn(state)
        out.append(check_result(name, CATEGORY, findings, detail, time.perf_counter() - t0))
    return out


class _State:
    def __init__(self, k, ctx):
        self.k, self.ctx = k, ctx
        self.counter = Counter(k)
        self.values = thread_values(k)
        self.ph = Phases(k, ctx)
        self.incomplete = set()


# -- divergence -----------------------------------------------------------------------------

def _divergence(st):
    k, ctx = st.k, st.ctx
    findings = []
    n = 0
    tag_roles = ("thread", "unknown")
    n_exit = 0
    for s in k.sites:
        if s.kind == "exit":
            n_exit += 1
        elif s.kind != "sync" or s.bar_key != ("sync",) or s.op == "named_arrive":
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
            what = ("an early return (thread_return) is taken by some threads of the block but not others"
                    if s.kind == "exit" else "__syncthreads is reached by some threads of the block but not others")
            findings.append(site_finding(k, ctx, "barriers.divergence", s, what, m, fs + diffs))
        elif res == "unknown":
            findings.append(unknown("barriers.divergence", f"solver could not decide ({m})", s, k))
    return findings, f"{n - n_exit} block-wide barriers" + (f", {n_exit} early return(s)" if n_exit else "")


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


def _enum_values_where(k, site, term, cond):
    """All values `term` takes over the executions of `site` where `cond` holds (executions
    whose guards cannot be evaluated are included), or None if not enumerable."""
    from ..numeric import Symbolic, instances, np_eval
    try:
        env, _ = instances(k, site, [term, cond])
        shape = env["__thread"].shape
        act = env["__active"] & np.broadcast_to(np_eval(cond, env), shape)
        v = np.broadcast_to(np_eval(term, env), shape)[act]
    except Symbolic:
        return None
    return set(int(x) for x in v.tolist())


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


def _thread_classes(k, term):
    """Threads grouped by the truth of the thread-only conditions in `term` (role tests):
    [(count, substitution)] with one representative thread per group, or None when `term`
    uses a thread id outside such a condition."""
    tnames = {sym.decl().name() for sym, _ in k.threads.values()}
    atoms, ok, seen = {}, [True], set()

    def walk(t):
        if not ok[0] or t.get_id() in seen:
            return
        seen.add(t.get_id())
        names = set(consts_of(t))
        if not names & tnames:
            return
        if z3.is_bool(t) and names <= tnames and not _has_app(t):
            atoms[t.get_id()] = t
            return
        if z3.is_const(t):
            ok[0] = False
            return
        for c in t.children():
            walk(c)
    walk(term)
    if not ok[0]:
        return None
    from ..order import thread_id_arrays
    env = thread_id_arrays(k)
    n = k.num_threads
    cols = []
    for t in atoms.values():
        try:
            cols.append(np.broadcast_to(np_eval(t, env), (n,)))
        except Symbolic:
            return None
    keys = np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=bool)
    groups = {}
    for lin in range(n):
        groups.setdefault(keys[lin].tobytes(), []).append(lin)
    return [(len(v), [(sym, z3.IntVal(x)) for sym, x in k.thread_split(v[0])]) for v in groups.values()]


def _has_app(t):
    from ..z3expr import has_uninterpreted_app
    return has_uninterpreted_app(t)


def _mbar_phase(st):
    k, ctx, ph = st.k, st.ctx, st.ph
    findings = []
    inits = [s for s in k.sites if s.op == "init"]
    checked = 0
    # arrivals: thread t's k-th arrival on b counts toward phase k, so every phase gets
    # #{t : A_t(b) > k} arrivals, A_t(b) the thread's arrivals on b over the whole kernel. That
    # equals the init count for every phase exactly when all threads that arrive on b arrive
    # equally often and there are init-count of them.
    for buf, arrs in sorted(ph.arrives.items()):
        idxs = ph.indices(buf)
        if idxs is None:
            findings.append(unknown("barriers.mbarrier_phase", f"indices of {buf} are not enumerable", arrs[0], k))
            continue
        for b in idxs:
            if all(ph.values(a) is not None and b not in ph.values(a) for a in arrs):
                continue
            checked += 1
            A = ph.arrivals(END, buf, b)
            if A is None:
                findings.append(unknown("barriers.mbarrier_phase",
                                        f"arrivals on {buf}[{b}] cannot be counted", arrs[0], k))
                continue
            want = _init_count(inits, buf, z3.IntVal(b))
            base = ctx.shape_facts() + ctx.block_facts()
            classes = _thread_classes(k, A)
            if classes is not None:
                # threads told apart by role tests only: compare the per-role counts directly
                per = [(cnt, z3.simplify(z3.substitute(A, *sub) if sub else A)) for cnt, sub in classes]
                arriving = [(cnt, t) for cnt, t in per if not (z3.is_int_value(t) and t.as_long() == 0)]
                if len({t.get_id() for _, t in arriving}) <= 1:
                    n_arr = sum(cnt for cnt, _ in arriving)
                    w_ = simplify_int(want)
                    if not arriving or n_arr == w_:
                        continue
                    res, m = ctx.solve(base + [arriving[0][1] > 0])
                    if res == "sat" and _open_sums(st, A):
                        findings.append(unknown("barriers.mbarrier_phase", f"arrivals on {buf}[{b}] have no "
                                                "closed form (partial sums)", arrs[0], k))
                    elif res == "sat":
                        what = "never initialized" if w_ == -1 else f"initialized with count {w_}"
                        findings.append(site_finding(
                            k, ctx, "barriers.mbarrier_phase", arrs[0],
                            f"phase of {buf}[{b}]: {n_arr} arrivals for an mbarrier {what}", m, base))
                    elif res == "unknown":
                        findings.append(unknown("barriers.mbarrier_phase", f"solver could not decide ({m})", arrs[0], k))
                    continue
            a1, a2 = ctx.instance(A, "1"), ctx.instance(A, "2")
            fs = base + ctx.thread_facts("1") + ctx.thread_facts("2")
            res, m = ctx.solve(fs + [a1 > 0, a2 > 0, a1 != a2])
            if res == "sat" and _open_sums(st, A):
                findings.append(unknown("barriers.mbarrier_phase", f"arrivals on {buf}[{b}] have no closed form "
                                        "(partial sums)", arrs[0], k))
                continue
            if res == "sat":
                from ..solver import evaluate
                findings.append(site_finding(
                    k, ctx, "barriers.mbarrier_phase", arrs[0],
                    f"threads arrive on {buf}[{b}] unequally often ({evaluate(m, a1)} and {evaluate(m, a2)} "
                    f"times): a phase gets fewer arrivals than {evaluate(m, want)}", m, fs + [a1, a2]))
                continue
            if res == "unknown":
                findings.append(unknown("barriers.mbarrier_phase", f"solver could not decide ({m})", arrs[0], k))
                continue
            if classes is None:
                n_arr = count_threads(k, A > 0, st.values)
            else:
                n_arr = z3.Sum([z3.If(z3.substitute(A, *sub) > 0, cnt, 0) for cnt, sub in classes]) \
                    if classes else z3.IntVal(0)
            res, m = ctx.solve(base + [n_arr > 0, n_arr != want])
            if res == "sat" and _open_sums(st, A):
                findings.append(unknown("barriers.mbarrier_phase", f"arrivals on {buf}[{b}] have no closed form "
                                        "(partial sums)", arrs[0], k))
            elif res == "sat":
                from ..solver import evaluate
                w_ = evaluate(m, want)
                what = "never initialized" if w_ == -1 else f"initialized with count {w_}"
                findings.append(site_finding(
                    k, ctx, "barriers.mbarrier_phase", arrs[0],
                    f"phase of {buf}[{b}]: {evaluate(m, n_arr)} arrivals for an mbarrier {what}",
                    m, base + [n_arr]))
            elif res == "unknown":
                findings.append(unknown("barriers.mbarrier_phase", f"solver could not decide ({m})", arrs[0], k))
    findings += _tx_bytes(st, inits)
    return findings, f"{checked} barrier arrival counts"


def _tx_bytes(st, inits):
    """Per iteration of the loop whose iterations are a barrier's phases (the phase loop), the
    expect_tx bytes equal the bytes TMA delivers, summed over threads and inner loops."""
    k, ctx = st.k, st.ctx
    findings = []
    events = [s for s in k.sites if s.mbar is not None and s.op in EXPECTS + ("tma_load",)]
    groups = {}
    for e in events:
        lp = phase_loop(e)
        groups.setdefault((e.mbar[0], lp.id if lp else None), (lp, []))[1].append(e)
    cache_e, cache_d = {}, {}
    for (buf, _), (lp, evs) in groups.items():
        for w in evs:
            b = ctx.instance(w.mbar[1], "w", ("thread", "unknown"))
            if lp is not None:
                b = _tag_inner(ctx, b, w, lp)
            exp_, dlv = z3.IntVal(0), z3.IntVal(0)
            bad = False
            for e in evs:
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
                                        "transactions inside loops with symbolic bounds under the phase loop", w, k))
                continue
            outer = [x for x in w.loops if lp is not None and x.depth <= lp.depth]
            wf = ctx.thread_facts("w") + [ctx.instance(c, "w", ("thread", "unknown")) for c in w.conds]
            if lp is not None:
                wf = [_tag_inner(ctx, c, w, lp) for c in wf] + ctx.loop_facts(_inner_loops(w, lp), "w")
            fs = ctx.shape_facts() + ctx.block_facts() + ctx.loop_facts(outer) + wf
            res, m = ctx.solve(fs + [exp_ != dlv])
            if res == "sat":
                # a definite finding only when no other transaction group can share this phase
                others = [e for (b2, _), (_, es) in groups.items() if b2 == buf for e in es if e not in evs]
                from ..solver import evaluate
                msg = (f"phase of {buf}[{evaluate(m, b)}]: {evaluate(m, exp_)} expected transaction bytes "
                       f"but {evaluate(m, dlv)} delivered by TMA")
                if others:
                    findings.append(unknown("barriers.mbarrier_phase", msg + " in one iteration; other "
                                            "transactions on the same barrier elsewhere may complete it", w, k))
                else:
                    findings.append(site_finding(k, ctx, "barriers.mbarrier_phase", w, msg, m, fs + [b]))
                break
            elif res == "unknown":
                findings.append(unknown("barriers.mbarrier_phase", f"solver could not decide ({m})", w, k))
    return findings


def _tag_inner(ctx, term, site, lp):
    """Give loops nested inside the phase loop the witness tag (the phase loop stays shared)."""
    pairs = []
    for x in _inner_loops(site, lp):
        pairs.append((x.sym, ctx.instance(x.sym, "w")))
    return z3.substitute(term, *pairs) if pairs else term


# -- wait parity ---------------------------------------------------------------------------

SAME_THREAD = ("loop", "unknown")


def _same_thread_facts(ctx, site, tag):
    """Facts for an execution of `site` whose loop indices carry `tag` and whose thread is the
    untagged one (two executions by one thread)."""
    out = ctx.thread_facts("")
    for lp in site.loops:
        v, lo, ext = (ctx.instance(t, tag, SAME_THREAD) for t in (lp.sym, lp.lo, lp.extent))
        out += [v >= lo, v < lo + ext]
    out += [ctx.instance(c, tag, SAME_THREAD) for c in site.conds]
    return out


def _open_sums(st, *terms):
    """Whether the terms depend on a count with no closed form (an uninterpreted partial sum,
    directly or through a named count's definition): a model of a query over them picks those
    sums freely, so it shows no definite execution."""
    from ..z3expr import subterms
    defs = st.ph.counts.defs
    seen, names = set(), set()
    stack = list(terms)
    while stack:
        for x in subterms(stack.pop(), seen):
            if not z3.is_app(x):
                continue
            name = x.decl().name()
            if name.startswith("psum#"):
                return True
            if name.startswith("~count#") and name not in names and name in defs:
                names.add(name)
                stack.append(defs[name][0])
    return False


def _parity(st):
    """A thread's k-th wait on barrier b with parity p waits for phase k - d: the parity is 0
    or 1, and (k - p) mod 2 = d is the same for every wait of the thread on b."""
    k, ctx, ph = st.k, st.ctx, st.ph
    findings = []
    nwaits = 0
    for buf, waits in sorted(ph.waits.items()):
        nwaits += len(waits)
        bad_site = set()
        for w in waits:
            fs = ctx.base([(w, "")])
            p = w.parity
            res, m = ctx.solve(fs + [z3.And(p != 0, p != 1)])
            if res == "sat":
                from ..solver import evaluate
                findings.append(site_finding(k, ctx, "barriers.parity", w,
                                             f"wait on {buf} with parity {evaluate(m, p)}", m, fs + [p]))
                bad_site.add(w.id)
        idxs = ph.indices(buf)
        if idxs is None:
            for w in waits:
                findings.append(unknown("barriers.parity", f"indices of {buf} are not enumerable", w, k))
            continue
        for b in idxs:
            ws = [w for w in waits if w.id not in bad_site and (ph.values(w) is None or b in ph.values(w))]
            kth = {}
            for w in ws:
                kth[w.id] = ph.waits_before(w, buf, b)
                if kth[w.id] is None:
                    findings.append(unknown("barriers.parity", f"waits on {buf}[{b}] before this one cannot "
                                            "be counted", w, k))
            ws = [w for w in ws if kth[w.id] is not None]
            # d of each wait site from one execution, then: no execution of any wait of the same
            # thread on b has another d. Where d only depends on thread ids and loop indices that
            # occur periodically, enumerating all of them decides it without the solver.
            exact = {}
            for w in ws:
                dterm = (kth[w.id] - w.parity) % 2
                vals = _enum_values_where(k, w, dterm, w.mbar[1] == b)
                if vals is not None and len(vals) <= 1:
                    if vals:
                        ph.delta[(w.id, b)] = vals.pop()
                        exact[w.id] = True
                    else:
                        ph.never.add((w.id, b))
                    continue
                fs = ctx.base([(w, "")]) + [w.mbar[1] == b]
                res, m = ctx.solve(fs)
                if res == "unsat":
                    ph.never.add((w.id, b))     # this wait never names b
                    continue
                if res != "sat":
                    findings.append(unknown("barriers.parity", f"solver could not decide ({m})", w, k))
                    continue
                d0 = m.eval(dterm, model_completion=True)
                if not z3.is_int_value(d0):
                    findings.append(unknown("barriers.parity", "phase offset not determined", w, k))
                    continue
                ph.delta[(w.id, b)] = d0.as_long()
            for i, w1 in enumerate(ws):
                for w2 in ws[i:]:
                    if (w1.id, b) not in ph.delta or (w2.id, b) not in ph.delta:
                        continue
                    if exact.get(w1.id) and exact.get(w2.id) and (
                            ph.delta[(w1.id, b)] == ph.delta[(w2.id, b)]
                            or not (_role_mask(st, w1) & _role_mask(st, w2)).any()):
                        continue  # each constant over all its executions, and equal (or other threads)
                    d1 = (ctx.instance(kth[w1.id], "1", SAME_THREAD) - ctx.instance(w1.parity, "1", SAME_THREAD)) % 2
                    d2 = (ctx.instance(kth[w2.id], "2", SAME_THREAD) - ctx.instance(w2.parity, "2", SAME_THREAD)) % 2
                    fs = ctx.shape_facts() + ctx.block_facts() + _same_thread_facts(ctx, w1, "1") \
                        + _same_thread_facts(ctx, w2, "2") \
                        + [ctx.instance(w1.mbar[1], "1", SAME_THREAD) == b, ctx.instance(w2.mbar[1], "2", SAME_THREAD) == b]
                    res, m = ctx.solve(fs + [d1 != d2])
                    if res == "sat" and _open_sums(st, kth[w1.id], kth[w2.id], w1.parity, w2.parity):
                        findings.append(unknown("barriers.parity", f"waits on {buf}[{b}]: the counts of the waits "
                                                "or their parities have no closed form (partial sums)", w2, k))
                        ph.delta.pop((w2.id, b), None)
                    elif res == "sat":
                        from ..solver import evaluate
                        k1 = evaluate(m, ctx.instance(kth[w1.id], "1", SAME_THREAD))
                        k2 = evaluate(m, ctx.instance(kth[w2.id], "2", SAME_THREAD))
                        p1 = evaluate(m, ctx.instance(w1.parity, "1", SAME_THREAD))
                        p2 = evaluate(m, ctx.instance(w2.parity, "2", SAME_THREAD))
                        f = site_finding(k, ctx, "barriers.parity", w2,
                                         f"waits on {buf}[{b}] break the alternation: the thread's wait #{k1} "
                                         f"uses parity {p1}, its wait #{k2} parity {p2}", m, fs)
                        f.access = w1.text if w1 is w2 else f"{w1.text}  ...  {w2.text}"
                        findings.append(f)
                        ph.delta.pop((w2.id, b), None)
                    elif res == "unknown":
                        findings.append(unknown("barriers.parity", f"solver could not decide ({m})", w2, k))
                        ph.delta.pop((w2.id, b), None)
    return findings, f"{nwaits} waits"


# -- data races -------------------------------------------------------------------------------

def _shared_accesses(k):
    return [s for s in k.sites if s.kind == "access" and s.shared]


def _race_accesses(k):
    """The accesses two threads of one block may race on: every shared one, and the global ones
    (plain, vector or a cp.async source) of buffers some thread writes with plain stores."""
    def plain_global(s):
        return s.kind == "access" and s.buf is not None and s.buf.scope == "global" and not s.async_proxy \
            and not s.extra.get("atomic") and s.op not in ("tma_store_box", "tma_load_box")
    written = {s.buf.name for s in k.sites if plain_global(s) and s.write}
    return _shared_accesses(k) + [s for s in k.sites if plain_global(s) and s.buf.name in written]


def _same_memory(x, y):
    """Two accesses into one allocation: a shared region, or one global buffer."""
    if x.buf.scope == "global" or y.buf.scope == "global":
        return x.buf.scope == y.buf.scope and x.buf.name == y.buf.name
    return x.buf.region == y.buf.region


def _static_extent(s):
    b = s.buf
    sz = simplify_int(b.size) if b.size is not None else None
    if sz is None or b.base_byte is None:
        return None
    return b.base_byte, b.base_byte + sz * b.elem_bytes


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


def _role_mask(st, site):
    """Threads that may execute `site` by its thread-only conditions (numpy bool array)."""
    cache = st.__dict__.setdefault("role_masks", {})
    if site.id not in cache:
        from ..order import thread_id_arrays
        k = st.k
        env = thread_id_arrays(k)
        mask = np.ones(k.num_threads, dtype=bool)
        for c in site.conds:
            if thread_only(c, k.syms):
                try:
                    mask &= np.broadcast_to(np_eval(c, env), (k.num_threads,))
                except Symbolic:
                    pass
        cache[site.id] = mask
    return cache[site.id]


def _last_wait(st, s):
    """The wait site that precedes s most closely in the same iteration (None: none)."""
    cache = st.__dict__.setdefault("last_wait", {})
    if s.id not in cache:
        best = None
        for ws in st.ph.waits.values():
            for w in ws:
                if w.id < s.id and _prefix(w.loops, s.loops) and (best is None or w.id > best.id) \
                        and (_role_mask(st, w) & _role_mask(st, s)).any():
                    best = w
        cache[s.id] = best
    return cache[s.id]


def _narrow(st, pairs, s):
    """The (buffer, index) pairs of the wait that most closely precedes s: the barrier a
    pipeline stage waits on right before touching its buffer (tried first: cheaper queries)."""
    w = _last_wait(st, s)
    if w is None:
        return []
    vals = st.ph.values(w)
    return [(buf, b) for buf, b in pairs if buf == w.mbar[0] and (vals is None or b in vals)]


def _barriers_between(st, x, y, self_release):
    """(buffer, index) pairs through which x's thread may release and y's thread acquire."""
    cache = st.__dict__.setdefault("between", {})
    key = (x.id, y.id, self_release)
    if key not in cache:
        cache[key] = _barriers_between_(st, x, y, self_release)
    return cache[key]


def _barriers_between_(st, x, y, self_release):
    ph = st.ph
    mx, my = _role_mask(st, x), _role_mask(st, y)
    out = []
    for buf, waits in ph.waits.items():
        wv = set()
        for w in waits:
            if (_role_mask(st, w) & my).any():
                v = ph.values(w)
                if v is None:
                    v = set(ph.indices(buf) or [])
                wv |= v
        if self_release:
            if buf != x.mbar[0]:
                continue
            av = ph.values(x)
            av = set(ph.indices(buf) or []) if av is None else av
        else:
            av = set()
            for a in ph.arrives.get(buf, []):
                if (_role_mask(st, a) & mx).any():
                    v = ph.values(a)
                    av |= set(ph.indices(buf) or []) if v is None else v
        out += [(buf, b) for b in sorted(av & wv)]
    return out


def _cached(fn):
    def wrapper(st, x, tag, buf, b):
        cache = st.__dict__.setdefault("hop_cache", {})
        key = (fn.__name__, x.id, tag, buf, b)
        if key not in cache:
            cache[key] = fn(st, x, tag, buf, b)
        return cache[key]
    wrapper.__name__ = fn.__name__
    return wrapper


@_cached
def _acquire(st, y, ty, buf, b):
    """(the phase the last wait on (buf, b) before y returned for, y's thread waited at all)."""
    ph = st.ph
    W = ph.waits_before(y, buf, b)
    D = ph.delta_term(buf, b)
    if W is None or D is None:
        st.incomplete.add(f"waits on {buf}[{b}]")
        return None
    W = st.ctx.instance(W, ty)
    return W - 1 - st.ctx.instance(D, ty), W >= 1


@_cached
def _release(st, x, tx, buf, b):
    """[(the phase of x's thread's first arrival on (buf, b) after x is complete, such an
    arrival exists)], one entry a way x completes: a TMA load on its own barrier, an
    ASYNC_GROUPS op at a wait that retires it (the arrival then follows that wait), anything
    else where it stands."""
    ph = st.ph
    if x.op == "tma_load" and x.mbar is not None:
        n = ph.tx_phase(x, b)
        if n is None:
            st.incomplete.add(f"the phase of TMA loads on {buf}")
            return []
        return [(st.ctx.instance(n, tx), st.ctx.instance(x.mbar[1], tx) == b)]
    total = ph.arrivals(END, buf, b)
    # cp.async.mbarrier.arrive.noinc arrivals release the thread's earlier cp.async writes and
    # nothing else: where x's thread may make one on buf, "the first arrival after" a point may
    # be one of them, so a plain release is taken only at a plain arrival site (witnesses)
    noinc = [a for a in ph.arrives.get(buf, []) if a.extra.get("cp_async")]
    mixed = any((_role_mask(st, a) & _role_mask(st, x)).any() for a in noinc)
    out = []
    if x.op == "cp_async":
        out = _releases_at(st, x, tx, noinc, buf, b)
    if x.op in ASYNC_GROUPS:
        if mixed:
            return out
        for w, sub, body in _retirements(st, x, tx):
            before = ph.arrivals(w, buf, b)
            if before is None or total is None:
                st.incomplete.add(f"arrivals on {buf}[{b}]")
                continue
            before = st.ctx.instance(before, _WTAG)
            out.append((z3.substitute(before, *sub),
                        z3.substitute(z3.And(body, st.ctx.instance(total, _WTAG) > before), *sub)))
        return out
    if mixed:
        return _releases_at(st, x, tx, [a for a in ph.arrives.get(buf, []) if not a.extra.get("cp_async")], buf, b)
    before = ph.arrivals(x, buf, b)
    if before is None or total is None:
        st.incomplete.add(f"arrivals on {buf}[{b}]")
        return []
    before = st.ctx.instance(before, tx)
    return [(before, st.ctx.instance(total, tx) > before)]


def _later_sites(st, x, tx, sites, others=(), cond=None):
    """[(a, sub, body)]: an execution of site a (instance _WTAG) by x's thread after x, for each
    a in `sites` its thread role allows, at witness iterations of a's loops: x's, or the one
    after, and for each (site, tag, shifts) in `others` that site's iteration shifted, at each
    depth; sub (z3.substitute pairs) makes it x's thread's. cond(a), when given, is one more
    condition of body (over a's instance _WTAG), or None to pass a over."""
    import itertools
    k, ctx = st.k, st.ctx
    out = []
    for a in sites:
        if not (_role_mask(st, a) & _role_mask(st, x)).any():
            continue
        extra = [] if cond is None else [cond(a)]
        if None in extra:
            continue
        tsame = [(ctx.instance(sym, _WTAG), ctx.instance(sym, tx)) for sym, _ in k.threads.values()]
        body = z3.And([ctx.instance(c, _WTAG) for c in a.conds] + ctx.loop_facts(a.loops, _WTAG)
                      + extra + [_lex_before(ctx, x, tx, a, _WTAG)])
        options = []
        for depth, lp in enumerate(a.loops):
            opts = []
            for other, tag, shifts in ((x, tx, (0, 1)),) + tuple(others):
                if depth < len(other.loops):
                    opts += [ctx.instance(other.loops[depth].sym, tag) + d for d in shifts]
            options.append([(ctx.instance(lp.sym, _WTAG), o) for o in opts] or [None])
        for combo in itertools.product(*options):
            out.append((a, tsame + [c for c in combo if c is not None], body))
    return out


def _releases_at(st, x, tx, sites, buf, b):
    """_release's entries for arrivals on (buf, b) at the given arrival sites after x."""
    ph, ctx = st.ph, st.ctx
    out = []
    for a, sub, body in _later_sites(st, x, tx, sites):
        before = ph.arrivals(a, buf, b)
        if before is None:
            st.incomplete.add(f"arrivals on {buf}[{b}]")
            continue
        out.append((z3.substitute(ctx.instance(before, _WTAG), *sub),
                    z3.substitute(z3.And(body, ctx.instance(a.mbar[1], _WTAG) == b), *sub)))
    return out


def _mbar_order(st, x, tx, y, ty, narrow=False):
    """x (instance tx) happens before y (instance ty) through one mbarrier phase: x's thread
    arrives on b after x is complete (or x is a TMA load completing on b) in a phase that the
    last wait on b of y's thread before y observed."""
    self_release = x.op == "tma_load" and x.mbar is not None
    terms = []
    pairs = _barriers_between(st, x, y, self_release)
    if narrow:
        pairs = _narrow(st, pairs, y)
    for buf, b in pairs:
        acq = _acquire(st, y, ty, buf, b)
        if acq is None:
            continue
        for rel in _release(st, x, tx, buf, b):
            terms.append(z3.And(rel[1], acq[1], rel[0] <= acq[0]))
    return z3.Or(terms) if terms else z3.BoolVal(False)


def _witness_threads(k, site):
    """A concrete thread that executes `site` as far as its role tests tell (or None)."""
    from ..order import thread_id_arrays
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


def _mbar_order2(st, x, tx, y, ty, narrow=False):
    """x happens before y through two mbarrier phases and an intermediate thread
    (producer -> full -> consumer -> empty -> producer): x's thread releases on b1, a thread
    that waited on b1 arrives on b2 (the intermediate arrival a2), y's thread acquired b2.

    The intermediate execution is existential; instead of a quantifier, concrete witnesses
    are tried: a thread that plays the role of a2, and for a2's loops the iteration numbers
    of x or of y. Any witness that satisfies the chain proves the order, so trying only some
    of them can miss an order (a spurious race report) but never invent one."""
    import itertools
    k, ph = st.k, st.ph
    terms = []
    self_release = x.op == "tma_load" and x.mbar is not None
    for buf1, b1 in _barriers_between_any(st, x, self_release):
        rels = _release(st, x, tx, buf1, b1)
        if not rels:
            continue
        for a2 in _intermediates(st, buf1, b1):
            if narrow and (buf1, b1) not in _narrow(st, [(buf1, b1)], a2):
                continue
            pairs = _barriers_between(st, a2, y, False)
            if narrow:
                pairs = _narrow(st, pairs, y)
            for buf2, b2 in pairs:
                if buf2 != a2.mbar[0]:
                    continue
                acq = _acquire(st, y, ty, buf2, b2)
                if acq is None:
                    continue
                options = []
                for depth, lp in enumerate(a2.loops):
                    # the intermediate's iteration: x's or y's at the same depth, or the one
                    # after x's / before y's (a pipeline stage handed one iteration on)
                    opts = [(other.loops[depth].id, tag, shift) for other, tag, shifts in ((x, tx, (0, 1)), (y, ty, (0, -1)))
                            if depth < len(other.loops) for shift in shifts]
                    options.append(opts or [None])
                combos = list(itertools.product(*options))
                combos += _ring_period_combos(st, a2, buf2, x, tx, y, ty)
                for combo in combos:
                    mid = _mid_terms(st, a2, buf1, b1, b2, combo)
                    if mid is None:
                        continue
                    cond, W1, D1, m2 = mid
                    for rel in rels:
                        terms.append(z3.And(cond, rel[1], acq[1], rel[0] <= W1 - 1 - D1, m2 <= acq[0]))
    return (z3.Or(terms) if terms else z3.BoolVal(False)), []


def _ring_period_combos(st, a2, buf2, x, tx, y, ty):
    """Witness iterations for an intermediate arrival inside a ring's period unrolled: a loop over
    periods around a loop over the S slots of buf2 (constant extent S, buf2 of size S), where
    x's or y's single chunk loop runs the same chunks one at a time. The chunk c (x's, or y's
    and the one before it) is period c // S, slot c % S."""
    if len(a2.loops) < 2:
        return []
    S = st.ph.sizes.get(buf2)
    ext = z3.simplify(a2.loops[-1].extent)
    if S is None or S < 2 or not z3.is_int_value(ext) or ext.as_long() != S:
        return []
    out = []
    for other, tag, shifts in ((x, tx, (0,)), (y, ty, (0, -1))):
        if len(other.loops) < len(a2.loops) - 1:
            continue
        chunk = other.loops[len(a2.loops) - 2]
        head = tuple((other.loops[d].id, tag, 0) if d < len(other.loops) else None for d in range(len(a2.loops) - 2))
        for shift in shifts:
            out.append(head + ((chunk.id, tag, shift, S, "div"), (chunk.id, tag, shift, S, "mod")))
    return out


def _intermediates(st, buf1, b1):
    """Arrival sites whose thread may have waited on (buf1, b1) before them."""
    cache = st.__dict__.setdefault("intermediates", {})
    key = (buf1, b1)
    if key not in cache:
        ph = st.ph
        out = []
        waits = [w for w in ph.waits.get(buf1, []) if ph.values(w) is None or b1 in ph.values(w)]
        for arrs in ph.arrives.values():
            for a2 in arrs:
                if a2.extra.get("cp_async"):
                    continue    # releases its thread's cp.async writes only, not what it waited for
                ok = False
                for w in waits:
                    if not (_role_mask(st, w) & _role_mask(st, a2)).any():
                        continue
                    if w.id < a2.id or _common_loops(w, a2):
                        ok = True
                        break
                if ok and _witness_threads(st.k, a2) is not None:
                    out.append(a2)
        cache[key] = out
    return cache[key]


def _mid_terms(st, a2, buf1, b1, b2, combo):
    """The intermediate arrival a2 as a witness: (its execution conditions, waits on b1 before
    it, d of those waits, its arrival number on b2), with a concrete thread and a2's loop
    indices equal to the loop indices named in `combo` ((loop id, instance tag) per depth)."""
    cache = st.__dict__.setdefault("mid_terms", {})
    key = (a2.id, buf1, b1, b2, combo)
    if key in cache:
        return cache[key]
    k, ctx, ph = st.k, st.ctx, st.ph
    mid = "3"
    r = None
    W1 = ph.waits_before(a2, buf1, b1)
    D1 = ph.delta_term(buf1, b1)
    m2 = ph.arrivals(a2, a2.mbar[0], b2)
    if W1 is None or D1 is None or m2 is None:
        st.incomplete.add(f"waits on {buf1}[{b1}] before arrivals on {a2.mbar[0]}[{b2}]")
    else:
        who = _witness_threads(k, a2)
        sub = [(ctx.instance(sym, mid), z3.IntVal(v)) for sym, v in who]
        loops_by_id = {lp.id: lp for lp in k.loops}
        for lp, c in zip(a2.loops, combo):
            if c is not None:
                it = ctx.instance(loops_by_id[c[0]].sym, c[1]) + c[2]
                if len(c) > 3:
                    it = it / c[3] if c[4] == "div" else it % c[3]
                sub.append((ctx.instance(lp.sym, mid), it))

        def at(t):
            return z3.substitute(ctx.instance(t, mid), *sub)
        # the witness's iterations inside its loops' ranges
        lows = [z3.And(ctx.instance(lp.sym, mid) >= ctx.instance(lp.lo, mid),
                       ctx.instance(lp.sym, mid) < ctx.instance(lp.lo + lp.extent, mid)) for lp in a2.loops]
        cond = at(z3.And(list(a2.conds) + [a2.mbar[1] == b2])) if a2.conds else at(a2.mbar[1] == b2)
        cond = z3.And([cond] + [z3.substitute(x, *sub) for x in lows])
        r = (cond, at(W1), at(D1), at(m2))
    cache[key] = r
    return r


def _barriers_between_any(st, x, self_release):
    """(buffer, index) pairs x's thread may release through."""
    ph = st.ph
    mx = _role_mask(st, x)
    out = []
    for buf in sorted(set(ph.arrives) | set(ph.txs)):
        if self_release:
            if buf != x.mbar[0]:
                continue
            v = ph.values(x)
            out += [(buf, b) for b in sorted(set(ph.indices(buf) or []) if v is None else v)]
            continue
        av = set()
        for a in ph.arrives.get(buf, []):
            if (_role_mask(st, a) & mx).any():
                v = ph.values(a)
                av |= set(ph.indices(buf) or []) if v is None else v
        out += [(buf, b) for b in sorted(av)]
    return out


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


# Asynchronous operations retired in groups: (the op's commit site, its wait_group site). A
# cp.async writes shared memory, a wgmma and a TMA store read it; each is in flight, for its own
# thread too, until a wait_group(n) of its thread leaves fewer groups pending than its own.
ASYNC_GROUPS = {"cp_async": ("cp_async_commit", "cp_async_wait"),
                "wgmma": ("wgmma_commit", "wgmma_wait"),
                "tma_store": ("tma_store_commit", "tma_store_wait")}
_WTAG = "4"


def _retirements(st, x, tx, others=()):
    """The ways x (an ASYNC_GROUPS op, instance tx) is retired: _later_sites over its kind's
    wait sites, each body also saying that the wait leaves fewer than x's group pending (x's
    group < groups committed before the wait - n)."""
    k, ctx = st.k, st.ctx
    commit_op, wait_op = ASYNC_GROUPS[x.op]
    commits = [s for s in k.sites if s.op == commit_op]
    waits = [s for s in k.sites if s.op == wait_op and s.extra.get("n") is not None]
    if not commits or not waits:
        return []
    counts = st.ph.counts
    gx = _sum_counts(counts, commits, x)
    if gx is None:
        st.incomplete.add(f"{x.op} groups")
        return []
    gx = ctx.instance(gx, tx)

    def retires(w):
        cw = _sum_counts(counts, commits, w)
        if cw is None:
            st.incomplete.add(f"{x.op} groups")
            return None
        return gx < ctx.instance(cw, _WTAG) - w.extra["n"]
    return _later_sites(st, x, tx, waits, others, retires)


def _group_order(st, x, tx, y, ty):
    """x, an ASYNC_GROUPS op, is complete before y: a wait that retires x precedes y through a
    barrier, or in program order of one thread."""
    ctx = st.ctx
    terms = []
    for w, sub, body in _retirements(st, x, tx, ((y, ty, (0, -1)),)):
        order = z3.Or(_bar_order(st, w, _WTAG, y, ty),
                      z3.And(ctx.instance(st.k.thread_linear(), _WTAG) == ctx.instance(st.k.thread_linear(), ty),
                             _lex_before(ctx, w, _WTAG, y, ty)))
        terms.append(z3.substitute(z3.And(body, order), *sub))
    return z3.Or(terms) if terms else z3.BoolVal(False)


def _sum_counts(counts, sites, p):
    total = z3.IntVal(0)
    for s in sites:
        c = counts.before(s, p)
        if c is None:
            return None
        total = total + c
    return z3.simplify(total)


def _direct_order(st, x, tx, y, ty, async_x, async_y):
    terms = []
    if not async_x:
        terms.append(_bar_order(st, x, tx, y, ty))
        if async_y:
            same = st.ctx.instance(st.k.thread_linear(), tx) == st.ctx.instance(st.k.thread_linear(), ty)
            terms.append(z3.And(same, _lex_before(st.ctx, x, tx, y, ty)))
    elif x.op in ASYNC_GROUPS:
        terms.append(_group_order(st, x, tx, y, ty))
    return z3.Or(terms) if terms else z3.BoolVal(False)


def _staged(st, x, y, fs, overlap, ax, ay):
    """Decide "unordered and overlapping" in stages, cheapest first: barrier and program order,
    then one mbarrier hop, then two, each first through the barriers the accesses' threads
    waited on last (the usual pipeline hand-off) and then through all. Dropping the address
    constraint only weakens the formula, so its UNSAT already proves order."""
    ctx = st.ctx
    orders = []
    last = None   # a model of the latest stage's query with the overlap (an unordered execution)
    stages = [("direct", None), ("mbar", True), ("mbar", False), ("mbar2", True), ("mbar2", False)]
    tried = set()
    for stage, narrow in stages:
        if stage == "direct" and ax and ay and x.op not in ASYNC_GROUPS and y.op not in ASYNC_GROUPS:
            continue    # two asynchronous writes/reads are ordered only through mbarriers
        if stage == "mbar":
            o1, o2 = _mbar_order(st, x, "1", y, "2", narrow), _mbar_order(st, y, "2", x, "1", narrow)
            key = ("mbar", o1.get_id(), o2.get_id())
            orders = [z3.Not(o1), z3.Not(o2)]
        elif stage == "mbar2":
            f1, _ = _mbar_order2(st, x, "1", y, "2", narrow)
            f2, _ = _mbar_order2(st, y, "2", x, "1", narrow)
            if z3.is_false(f1) and z3.is_false(f2):
                continue
            one = [z3.Not(_mbar_order(st, x, "1", y, "2")), z3.Not(_mbar_order(st, y, "2", x, "1"))]
            key = ("mbar2", f1.get_id(), f2.get_id())
            orders = one + [z3.Not(f1), z3.Not(f2)]
        else:
            key = ("direct",)
        if key in tried:
            continue    # the narrow and the full set of barriers coincide
        tried.add(key)
        if ctx.satisfied_by(last, fs + orders + overlap):
            continue    # the last stage's unordered execution is not ordered by this one either
        res, m = ctx.solve(fs + orders, facts=False)
        if res == "unsat":
            return res, m, orders
        res, m = ctx.solve(fs + orders + overlap, facts=False)
        if res == "unsat":
            return res, m, orders
        last = m if res == "sat" else None
    if ctx.satisfied_by(last, fs + orders + overlap):
        return "sat", last, orders
    res, m = ctx.solve(fs + orders + overlap)
    return res, m, orders


def _unmodelled_orderings(st):
    """mbarrier orderings the phase model could not give (a wait whose parity breaks the
    alternation, a transaction not attached to an arrival): a race query that could have used
    them is not definite."""
    ph = st.ph
    out = set()
    for buf in ph.waits:
        for b in ph.indices(buf) or []:
            if ph.delta_term(buf, b) is None and any(
                    ph.values(w) is None or b in ph.values(w) for w in ph.waits[buf]):
                out.add(f"waits on {buf}[{b}]")
    for buf, xs in ph.txs.items():
        for x in xs:
            if x.op == "tma_load" and ph.preceding_arrival(x) == "bad":
                out.add(f"the phase of TMA loads on {buf}")
    return out


def _race(st):
    st.ctx.presolve_first = True
    try:
        return _race_(st)
    finally:
        st.ctx.presolve_first = False


def _race_(st):
    k, ctx = st.k, st.ctx
    st.incomplete = _unmodelled_orderings(st)
    findings = []
    acc = _race_accesses(k)
    asyncs = {}
    for s in acc:
        # a TMA load completes on its mbarrier, an ASYNC_GROUPS op at the wait_group that retires
        # it (_group_order; its own thread's accesses before that wait race with it too)
        asyncs[s.id] = s.op == "tma_load" or s.op in ASYNC_GROUPS
    pairs = 0
    queried = 0
    reported = set()
    for i, x in enumerate(acc):
        for y in acc[i:]:
            if not (x.write or y.write):
                continue
            if x.extra.get("atomic") and y.extra.get("atomic"):
                continue  # atomic read-modify-writes do not race with each other
            if not _same_memory(x, y):
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
            lin1 = ctx.instance(k.thread_linear(), "1")
            lin2 = ctx.instance(k.thread_linear(), "2")
            overlap = [ox < oy + ny, oy < ox + nx]
            extra = []
            if not ax and not ay:
                extra.append(lin1 != lin2)
            if x is y:  # two different executions of one site
                extra.append(_other_execution(ctx, k, x))
            # exhaustive pre-filter: can two executions touch a common byte at all?
            ov = any_overlap(k, x, y, *abs_range(x), *abs_range(y), distinct_threads=not ax and not ay)
            if ov is False:
                continue
            if x.buf.scope == "global" and _thread_digits_disjoint(st, x, y, extra):
                continue
            order = [z3.Not(_direct_order(st, x, "1", y, "2", ax, ay)),
                     z3.Not(_direct_order(st, y, "2", x, "1", ay, ax))]
            fs = ctx.base([(x, "1"), (y, "2")], relaxed=True) + extra + order
            st.incomplete_pair = set(st.incomplete)
            res, m, orders = _staged(st, x, y, fs, overlap, ax, ay)
            if res == "sat":
                # the relaxed query dropped nonlinear bounds and guards: confirm with all of them
                res, m = ctx.confirm(m, ctx.base([(x, "1"), (y, "2")]) + extra + order + orders + overlap)
            if res == "sat":
                from ..solver import evaluate
                reported.add(key)
                kinds = f"{'write' if x.write else 'read'} ({x.op}) / {'write' if y.write else 'read'} ({y.op})"
                msg = (f"data race on {x.buf.name}: {kinds}, byte {evaluate(m, z3.If(ox > oy, ox, oy))}, "
                       f"threads {evaluate(m, lin1)} and {evaluate(m, lin2)} with no barrier ordering them")
                f = definite_finding(k, ctx, "barriers.race", x, msg, m, fs + overlap, _not_definite(st, x, y))
                f.access = f"{x.text}  <->  {y.text}"
                findings.append(f)
            elif res == "unknown":
                findings.append(unknown("barriers.race", f"solver could not decide ({m})", x, k))
    n_glob = sum(1 for s in acc if s.buf.scope == "global")
    return findings, (f"{len(acc) - n_glob} shared and {n_glob} global accesses, {pairs} pairs, "
                      f"{queried} solver queries")


def _other_execution(ctx, k, s):
    """Instances "1" and "2" of site s in one block are two executions: other threads, or other
    iterations of its loops."""
    lin1, lin2 = ctx.instance(k.thread_linear(), "1"), ctx.instance(k.thread_linear(), "2")
    return z3.Or([lin1 != lin2] + [ctx.instance(lp.sym, "1") != ctx.instance(lp.sym, "2") for lp in s.loops])


def _thread_digits_disjoint(st, x, y, extra):
    """Two executions (`extra`: of different threads, or iterations) of global accesses x, y
    in one block touch no common byte, decided in digit form (_digit_overlap). False when the
    offsets do not decompose alike or the question stays open."""
    k, ctx = st.k, st.ctx
    overlap = _digit_overlap(k, ctx, x, y, ctx.instance)
    if overlap is None:
        return False
    res, _ = ctx.solve(ctx.base([(x, "1"), (y, "2")], relaxed=True) + extra + overlap)
    return res == "unsat"


def _outside_model(k, opaque=(), calls=False):
    """Why a satisfiable query is not definite for reasons of the kernel as a whole (empty: it
    is): buffers accessed through opaque calls, constructs outside the model (an intrinsic
    outside it may be what orders two accesses: an arrival it makes) and, with `calls`, extern
    calls not known pure (Kernel.pure_calls; one may be an ordering the model does not know, a
    user's own fence)."""
    why = [f"{', '.join(opaque)} accessed through calls whose accesses are not modelled"] if opaque else []
    if k.unsupported:
        why.append("the kernel has constructs outside the model (model.unsupported)")
    impure = sorted({c for _, c in k.opaque_calls if c not in k.pure_calls}) if calls else []
    if impure:
        why.append(f"the kernel has extern calls ({', '.join(impure)}), whose ordering effect is not modelled")
    return "; ".join(why)


def _not_definite(st, x, y):
    """Why a satisfying race query is not a definite race (empty: it is one)."""
    why = []
    for s in (x, y):
        if s.extra.get("opaque"):
            why.append(f"{s.buf.name} is accessed through {s.extra['opaque']}, whose accesses are not modelled")
    if st.incomplete:
        why.append("orderings through " + ", ".join(sorted(st.incomplete)) + " are not modelled")
    outside = _outside_model(st.k, calls=True)
    if outside:
        why.append(outside)
    for key in st.counter.keys():
        for s in (x, y):
            if any(st.k.syms.pretty.get(n, "").startswith("barriers_") for n in consts_of(st.counter.before(s, key))):
                why.append("barrier counts in loops with a varying number of barriers are not modelled")
                return "; ".join(why)
    return "; ".join(why)


# -- write-write races between blocks on global memory ------------------------------------------

BLOCKS = ("thread", "loop", "unknown", "block")


def _global_race(st):
    """Blocks of a grid are not ordered with one another inside a kernel: a plain write of global
    bytes races with a write or a read of the same bytes by another block (split-K partial sums
    stored without atomics, overlapping output tiles, a padded entry of an index table reading the
    row a live entry updates in place). Atomic updates do not race; writes through TMA descriptors
    and the boxes tiled TMA loads read are compared box against box or byte range (_box_overlap;
    bounds.tma keeps them inside their tensor), and a 1-D bulk TMA copy's global bytes as a plain
    access's (a bulk load reads them, a bulk store writes them)."""
    k, ctx = st.k, st.ctx
    findings = []
    plain = [s for s in k.sites if s.kind == "access" and s.buf is not None and s.buf.scope == "global"
             and not s.extra.get("atomic")]
    writes = [s for s in plain if s.write]
    if not k.blocks or not writes:
        return findings, f"{len(writes)} global writes"
    written = {s.buf.name for s in writes}
    reads = [s for s in plain if not s.write and s.buf.name in written]
    pairs = 0
    for i, x in enumerate(writes):
        for y in writes[i:] + reads:
            if x.buf.name != y.buf.name:
                continue
            pairs += 1
            differ = z3.Or([ctx.instance(sym, "1", BLOCKS) != ctx.instance(sym, "2", BLOCKS)
                            for sym, _ in k.blocks.values()])
            if "box_coords" in x.extra or "box_coords" in y.extra:
                f = _box_race(k, ctx, x, y, differ)
                if f is not None:
                    findings.append(f)
                continue
            fs = _two_block_facts(k, ctx, x, y, relaxed=True)
            if x is y and _block_disjoint(k, ctx, x):
                continue
            (ox, nx), (oy, ny) = _byte_range(x), _byte_range(y)
            ox, nx, oy, ny = (ctx.instance(t, g, BLOCKS) for t, g in ((ox, "1"), (nx, "1"), (oy, "2"), (ny, "2")))
            overlap = [ox < oy + ny, oy < ox + nx]
            split = _two_level(k, ctx, x, y)
            res = None
            if split is not None:
                res, m = ctx.solve(split)
                if res == "unsat":
                    continue
                # again with the nonlinear loop bounds and guards kept, and the product facts
                # (a segment's chunks [gs L, gs L + L) against another segment's): a model of
                # this exact digit form is an overlap of the two accesses
                split = _two_level(k, ctx, x, y, relaxed=False)
                res, m = ctx.solve(split + ctx.product_lemmas(split) + ctx.order_lemmas(split))
                if res == "unsat":
                    continue
                fs = split
            if res != "sat":
                res, m = ctx.solve(fs + [differ] + overlap)
                if res == "sat":
                    # confirm without the relaxation of nonlinear bounds and guards
                    fs = _two_block_facts(k, ctx, x, y, relaxed=False)
                    res, m = ctx.confirm(m, fs + [differ] + overlap)
            if res == "sat":
                from ..solver import evaluate
                what = "write" if y.write else "write and read"
                f = site_finding(k, ctx, "barriers.global_race", x,
                                 f"blocks {what} the same bytes of {x.buf.name} (byte {evaluate(m, z3.If(ox > oy, ox, oy))}) "
                                 "with no atomic and no order between blocks", m, fs + [differ] + overlap)
                f.access = x.text if x is y else f"{x.text}  <->  {y.text}"
                findings.append(f)
            elif res == "unknown":
                findings.append(unknown("barriers.global_race", f"solver could not decide ({m})", x, k))
    return findings, f"{len(writes)} global writes, {len(reads)} reads of written buffers, {pairs} pairs"


def _exclusive_branches(ctx, k, x, y):
    """Where stores x and y sit in the two branches of one `if` (a whole chunk's store and its
    guarded tail), one thread runs at most one of them per iteration of the loops around the `if`:
    the two executions differ in the thread or in one of those loops. That holds whatever the
    condition reads (one execution of an `if` takes one branch); every repetition of a statement
    is a loop of the model (a while loop is outside it: model.unsupported). Else [] (every pair of
    executions: sound)."""
    def chain(site):
        out, blk = [], site.parent
        while blk is not None and blk.owner is not None:
            out.append((blk.owner, blk.branch))
            blk = blk.owner.parent
        return out
    cy = {id(n): br for n, br in chain(y) if isinstance(n, M.IfNode)}
    for node, br in chain(x):
        if not isinstance(node, M.IfNode) or id(node) not in cy or cy[id(node)] == br:
            continue
        outer, blk = [], node.parent
        while blk is not None and blk.owner is not None:
            if isinstance(blk.owner, M.LoopNode):
                outer.append(blk.owner.loop.sym)
            blk = blk.owner.parent
        lin1, lin2 = ctx.instance(k.thread_linear(), "1"), ctx.instance(k.thread_linear(), "2")
        return [z3.Or([lin1 != lin2] + [ctx.instance(v, "1") != ctx.instance(v, "2") for v in outer])]
    return []


# -- outputs written once ------------------------------------------------------------------

def _written_once(st):
    """Each byte of a declared output buffer is written by at most one execution of one store in
    the whole grid. barriers.global_race already keeps two blocks apart; this check asks the rest:
    within one block, two executions (other threads, other iterations of the store's loops, or
    two store statements) that write a common byte, whatever barriers lie between them. A kernel
    can prove every other check and still store every chunk of a loop to its first slot (session
    41's first ws_chunks K1: the slot bound before the loop); this check fails it. Atomic updates
    of a declared buffer are reported (accumulation is not a single write)."""
    k, ctx = st.k, st.ctx
    findings = []
    stores = [s for s in k.sites if s.kind == "access" and s.buf is not None and s.buf.scope == "global"
              and s.write]
    pairs = queried = 0
    if k.written_once_all:
        # a release declares every output: one it writes and does not declare is a finding
        for name in sorted({s.buf.name for s in stores} - set(k.written_once)):
            findings.append(Finding(check="barriers.written_once", status=FAILED, buffer=name,
                                    message=f"{name} is written, but its config's written_once() does not "
                                            f"declare it ({', '.join(k.written_once)})"))
    unwritten = []
    for name in k.written_once:
        buf = k.bufs.get(name)
        if (buf is None or buf.scope != "global") and name not in k.source_buffers:
            known = ", ".join(sorted(k.source_buffers)) or "none"
            findings.append(Finding(check="barriers.written_once", status=FAILED, buffer=name,
                                    message=f"{name} is declared written once, but the kernel has no tensor "
                                            f"{name} (its tensors: {known})"))
            continue
        mine = [s for s in stores if s.buf.name == name]
        if not mine:
            unwritten.append(name)    # at most once holds; a tensor this build does not write
            continue
        for s in mine:
            if s.extra.get("atomic"):
                findings.append(site_finding(k, ctx, "barriers.written_once", s,
                                             f"{name} is declared written once, but this atomic update adds to it"))
        plain = [s for s in mine if not s.extra.get("atomic")]
        for i, x in enumerate(plain):
            for y in plain[i:]:
                pairs += 1
                extra = [_other_execution(ctx, k, x)] if x is y else _exclusive_branches(ctx, k, x, y)
                boxes = "box_coords" in x.extra or "box_coords" in y.extra
                if not boxes:
                    ex, ey = _static_extent(x), _static_extent(y)
                    if ex and ey and not (ex[0] < ey[1] and ey[0] < ex[1]):
                        continue
                    if x is y:
                        ov = any_overlap(k, x, y, *_byte_range(x), *_byte_range(y), distinct_threads=False)
                        if ov is False:
                            continue
                    if _thread_digits_disjoint(st, x, y, extra):
                        continue
                    (ox, nx), (oy, ny) = _byte_range(x), _byte_range(y)
                    ox, nx, oy, ny = (ctx.instance(t, g) for t, g in ((ox, "1"), (nx, "1"), (oy, "2"), (ny, "2")))
                    overlap = [ox < oy + ny, oy < ox + nx]
                else:
                    overlap = _box_overlap(ctx, x, y, roles=PER_INSTANCE_ROLES)
                    ox = None
                queried += 1
                fs = ctx.base([(x, "1"), (y, "2")], relaxed=True) + extra
                res, m = ctx.solve(fs + overlap)
                if res == "sat":
                    # confirm with the nonlinear loop bounds and guards kept
                    fs = ctx.base([(x, "1"), (y, "2")]) + extra + overlap
                    res, m = ctx.confirm(m, fs)
                if res == "sat":
                    from ..solver import evaluate
                    lin1, lin2 = (ctx.instance(k.thread_linear(), g) for g in ("1", "2"))
                    where = f"byte {evaluate(m, z3.If(ox > oy, ox, oy))}, " if ox is not None else ""
                    msg = (f"{name} is written twice by one block: {where}threads {evaluate(m, lin1)} and "
                           f"{evaluate(m, lin2)}" + ("" if x is not y else " (one store, two executions)"))
                    opaque = [s.buf.name for s in (x, y) if s.extra.get("opaque")]
                    why = _outside_model(k, opaque)
                    f = definite_finding(k, ctx, "barriers.written_once", x, msg, m, fs, why)
                    f.access = x.text if x is y else f"{x.text}  <->  {y.text}"
                    findings.append(f)
                elif res == "unknown":
                    findings.append(unknown("barriers.written_once", f"solver could not decide ({m})", x, k))
    not_w = f" ({', '.join(unwritten)} not written)" if unwritten else ""
    return findings, (f"{', '.join(k.written_once)}{not_w}: {pairs} store pairs, {queried} solver queries "
                      "(two blocks: barriers.global_race)")


def _byte_range(site):
    from .common import byte_range
    return byte_range(site)


def _box_cells(ctx, s, tag, name, roles=BLOCKS):
    """(constraints, byte offset term) of one element of the clipped box of TMA store s
    (instance `tag` of the symbols of `roles`, fresh index symbols named after `name`)."""
    e = s.extra
    cs, addr = [], z3.IntVal(0)
    for i, (c, b, dim, st) in enumerate(zip(e["box_coords"], e["box"], e["box_dims"], e["box_strides"])):
        x = z3.Int(f"{name}.{i}")
        c = ctx.instance(c, tag, roles)
        cs += [x >= c, x < c + b, x >= 0, x < dim]
        addr = addr + x * st
    return cs, addr


def _injective(ctx, s):
    """Whether distinct index tuples of s's descriptor reach distinct elements: in some order of
    its dimensions (TileLang may permute a tensor's), each stride at least the span of the
    dimensions before it (a tensor's own layout; the descriptor's view could be anything the
    host encodes). The order is the strides' at one model of the shape facts, then proved for all."""
    e = s.extra
    n = len(e["box"])
    if n == 1:
        return True
    from ..z3expr import consts_of
    syms = {}
    for t in e["box_strides"] + e["box_dims"]:
        syms.update(consts_of(t))
    # sizes of 3 or more where the facts allow, so that no two strides tie by accident (H = 1)
    res, m = ctx.solve(ctx.shape_facts() + [c >= 3 for c in syms.values()])
    if res != "sat":
        res, m = ctx.solve(ctx.shape_facts())
    if res != "sat":
        return False
    at = [m.eval(st, model_completion=True) for st in e["box_strides"]]
    if not all(z3.is_int_value(v) for v in at):
        return False
    order = sorted(range(n), key=lambda i: at[i].as_long())
    bad = [e["box_strides"][b] < e["box_strides"][a] * e["box_dims"][a] for a, b in zip(order, order[1:])]
    res, _ = ctx.solve(ctx.shape_facts() + [z3.Or(bad)])
    return res == "unsat"


def _box_overlap(ctx, x, y, roles=BLOCKS):
    """Instance "1" of x and instance "2" of y touch a common byte, where either is a tiled TMA
    store's box: per dimension where both are boxes of one layout (dims and strides alike, the
    layout injective), else an element of each at one address. `roles`: the symbols the two
    instances do not share (BLOCKS: two blocks; PER_INSTANCE_ROLES: two executions in one block)."""
    def alike(a, b):
        return len(a) == len(b) and all(z3.eq(z3.simplify(p), z3.simplify(q)) for p, q in zip(a, b))
    bx, by = "box_coords" in x.extra, "box_coords" in y.extra
    if bx and by and alike(x.extra["box_dims"], y.extra["box_dims"]) \
            and alike(x.extra["box_strides"], y.extra["box_strides"]) and _injective(ctx, x):
        out = []
        for c1, b1, c2, b2, dim in zip(x.extra["box_coords"], x.extra["box"], y.extra["box_coords"], y.extra["box"],
                                       x.extra["box_dims"]):
            c1, c2 = ctx.instance(c1, "1", roles), ctx.instance(c2, "2", roles)
            # [max(c1, c2, 0), min(c1 + b1, c2 + b2, dim)) is not empty, pairwise (no If terms)
            out += [c1 < c2 + b2, c2 < c1 + b1, c1 < dim, c2 < dim, c1 + b1 > 0, c2 + b2 > 0]
        return out
    ranges = []
    for s, tag in ((x, "1"), (y, "2")):
        if "box_coords" in s.extra:
            cs, addr = _box_cells(ctx, s, tag, f"~box{tag}", roles)
            ranges.append((cs, addr, z3.IntVal(s.extra["elem_bytes"])))
        else:
            off, n = _byte_range(s)
            ranges.append(([], ctx.instance(off, tag, roles), ctx.instance(n, tag, roles)))
    (c1, a1, n1), (c2, a2, n2) = ranges
    return c1 + c2 + [a1 < a2 + n2, a2 < a1 + n1]


def _box_race(k, ctx, x, y, differ):
    """barriers.global_race for a pair with a tiled TMA store or load in it: a finding, or None."""
    overlap = _box_overlap(ctx, x, y)
    # first without the nonlinear loop bounds and guards (more executions: an UNSAT is final)
    res, m = ctx.solve(_two_block_facts(k, ctx, x, y, relaxed=True) + [differ] + overlap)
    if res == "unsat":
        return None
    q = _two_block_facts(k, ctx, x, y, relaxed=False) + [differ] + overlap
    res, m = ctx.confirm(m, q)
    if res == "sat":
        what = "write" if y.write else "write and read"
        box = "a TMA store's box" if "box_coords" in x.extra or y.write else "a TMA load's box"
        f = site_finding(k, ctx, "barriers.global_race", x,
                         f"blocks {what} the same bytes of {x.buf.name} ({box}) with no atomic and no "
                         "order between blocks", m, q)
        f.access = x.text if x is y else f"{x.text}  <->  {y.text}"
        return f
    if res == "unknown":
        return unknown("barriers.global_race", f"solver could not decide a TMA store's box ({m})", x, k)
    return None


# The global side of a TMA store: a tiled store's box, a 1-D bulk store's byte range
TMA_STORES = ("tma_store_box", "tma_store_dst")


def _tma_store_overlap(st):
    """A TMA store's global write (tiled or 1-D bulk) is in flight until the kernel ends: TileLang's
    tma_store_wait waits for the store's read of shared memory (cp.async.bulk.wait_group.read),
    not for its write. So within one block, another execution of a TMA store into the same bytes
    (two stores in flight, in no defined order), or a later access of them (a plain read or
    write, a TMA load's box) races with it.

    An access before the store in program order, outside its loops, races with it unless it
    happens before the store is issued: a plain access through a block-wide or named barrier
    that both threads take part in, or in the issuing thread's own program order; a TMA load
    (box or 1-D source) through its mbarrier, whose phase the issuing thread waited for (one
    hop, or two through an intermediate thread). The proxy fence a generic-proxy access of
    global memory would need before an async-proxy write of it is not asked for."""
    from ..solver import PER_INSTANCE_ROLES
    k, ctx = st.k, st.ctx
    findings = []
    stores = [s for s in k.sites if s.kind == "access" and s.op in TMA_STORES and s.buf is not None]
    if not stores:
        return findings, "no TMA stores"
    glob = [s for s in k.sites if s.kind == "access" and s.buf is not None and s.buf.scope == "global"
            and not s.async_proxy and not s.extra.get("atomic")]
    pairs = 0
    for x in stores:
        for y in glob:
            if y.buf.name != x.buf.name:
                continue
            later = y.id >= x.id or bool({id(lp) for lp in x.loops} & {id(lp) for lp in y.loops})
            if y.op in TMA_STORES and y.id < x.id:
                continue   # the pair (y, x) of two stores is asked once, from the earlier one
            pairs += 1
            extra = []
            if x is y:     # two executions of one store: other threads, or other iterations
                extra.append(_other_execution(ctx, k, x))
            if not later:
                order = _before_store(st, y, x)
                if order is None:
                    findings.append(unknown("barriers.tma_store_overlap",
                                            f"a TMA load of {y.buf.name} before a TMA store: its mbarrier site "
                                            "was not found", x, k))
                    continue
                extra.append(z3.Not(order))
            overlap = _box_overlap(ctx, x, y, PER_INSTANCE_ROLES)
            res, m = ctx.solve(ctx.base([(x, "1"), (y, "2")], relaxed=True) + extra + overlap)
            if res == "unsat":
                continue
            full = ctx.base([(x, "1"), (y, "2")]) + extra + overlap
            res, m = ctx.confirm(m, full)
            if res == "sat":
                if not later:
                    what = ("TMA load" if y.op in TMA_LOADS else "write" if y.write else "read")
                    msg = (f"a {what} of {x.buf.name} before a TMA store into the same bytes, in the same block, "
                           "does not happen before the store is issued (no barrier or mbarrier phase orders them)")
                else:
                    what = ("another TMA store into them" if y.op in TMA_STORES
                            else "a TMA load of them" if y.op in TMA_LOADS
                            else f"a later {'write' if y.write else 'read'} of them")
                    msg = (f"a TMA store into {x.buf.name} is in flight until the kernel ends (tma_store_wait "
                           f"waits for its shared-memory read only), and {what} by the same block races with it")
                f = site_finding(k, ctx, "barriers.tma_store_overlap", x, msg, m, full)
                f.access = x.text if x is y else f"{x.text}  <->  {y.text}"
                findings.append(f)
            elif res == "unknown":
                findings.append(unknown("barriers.tma_store_overlap", f"solver could not decide ({m})", x, k))
    return findings, f"{len(stores)} TMA stores, {pairs} pairs"


# The global side of a TMA load: a tiled load's box, a 1-D bulk load's byte range
TMA_LOADS = ("tma_load_box", "tma_load_src")


def _load_site(k, y):
    """The shared-memory side (op tma_load, with its mbarrier) of the TMA load whose global side
    is y (extract links the two), or None."""
    i = y.extra.get("load_site")
    s = None if i is None else k.sites[i]
    return s if s is not None and s.mbar is not None else None


def _before_store(st, y, x):
    """Instance "2" of y, an access before TMA store x in program order and outside its loops,
    happens before instance "1" of x is issued (a z3 term), or None where y is a TMA load whose
    mbarrier is not known."""
    ctx, k = st.ctx, st.k
    if y.op in TMA_LOADS:
        ld = _load_site(k, y)
        if ld is None:
            return None
        two, _ = _mbar_order2(st, ld, "2", x, "1")
        return z3.Or(_mbar_order(st, ld, "2", x, "1"), two)
    same = ctx.instance(k.thread_linear(), "2") == ctx.instance(k.thread_linear(), "1")
    return z3.Or(_bar_order(st, y, "2", x, "1"), same)


def _monomials(t):
    t = z3.simplify(t, som=True)
    return list(t.children()) if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_ADD else [t]


def _split_factor(k, mon):
    """(shape factor key, shape factor term, constant, rest) of a monomial."""
    factors, stack = [], [mon]
    while stack:
        f = stack.pop()
        if z3.is_app(f) and f.decl().kind() == z3.Z3_OP_MUL:
            stack.extend(f.children())
        else:
            factors.append(f)
    shape, const, rest = [], 1, []
    for f in factors:
        if z3.is_int_value(f):
            const *= f.as_long()
        elif z3.is_const(f) and k.syms.role.get(f.decl().name()) == "shape":
            shape.append(f)
        else:
            rest.append(f)
    shape.sort(key=lambda f: f.decl().name())
    key = tuple(f.decl().name() for f in shape)
    return key, shape, const, rest


def _digits(k, ctx, s, off, n):
    """Peel an offset into digits like a row-major index: off = W1 * (W2 * (... ) + d1) + d0,
    each W a product of sizes times a constant, each lower digit proved inside [0, W) (the
    lowest with the access width). Returns ([(W key, constant)], [digit terms, lowest first]) or
    None. Two accesses with the same radices overlap exactly when their higher digits are equal
    and their lowest digits overlap: a linear question where the offset was a product."""
    import math
    radices, digits = [], []
    cur, width = off, n
    fs = None
    while True:
        groups = {}
        for mon in _monomials(cur):
            key, shape, const, rest = _split_factor(k, mon)
            groups.setdefault(key, []).append((shape, const, rest))
        sym = [kk for kk in groups if kk]
        if not sym:
            digits.append(cur)
            return radices, digits
        common = set(sym[0])
        for kk in sym[1:]:
            common &= set(kk)
        if not common:
            return None
        common = sorted(common)
        g = 0
        for kk in sym:
            for _, c, _ in groups[kk]:
                g = math.gcd(g, abs(c))
        if g == 0:
            return None
        S = [z3.Int(nm) for nm in common]
        W = z3.Product(*S) * g if len(S) > 1 else S[0] * g
        high, low = [], []
        for kk, ms in groups.items():
            for shape, c, rest in ms:
                if kk:
                    left = [f for f in shape if f.decl().name() not in common or
                            sum(1 for x in shape if x.decl().name() == f.decl().name()) > 1]
                    # remove one occurrence of each common size
                    left = list(shape)
                    for nm in common:
                        for i, f in enumerate(left):
                            if f.decl().name() == nm:
                                del left[i]
                                break
                    high.append(z3.IntVal(c // g) * _prod(left + rest))
                else:
                    low.append(z3.IntVal(c) * _prod(rest))
        lo = z3.Sum(low) if low else z3.IntVal(0)
        if fs is None:
            fs = ctx.base([(s, "")])
        q = fs + [z3.Or(lo < 0, lo + width > W)]
        res, _ = ctx.solve(q + ctx.product_lemmas(q), facts=False)
        if res != "unsat":
            return None
        radices.append((tuple(common), g))
        digits.append(lo)
        cur, width = (z3.Sum(high) if len(high) > 1 else high[0]), 1


def _prod(fs):
    if not fs:
        return z3.IntVal(1)
    return z3.Product(*fs) if len(fs) > 1 else fs[0]


def _two_block_facts(k, ctx, x, y, relaxed):
    """The shape facts, the block ranges of two blocks (instances "1" and "2") and the facts of
    access x in block 1 and access y in block 2 (`relaxed`: without nonlinear loop bounds and
    guards)."""
    out = ctx.shape_facts()
    for tag, s in (("1", x), ("2", y)):
        for sym, ext in k.blocks.values():
            b = ctx.instance(sym, tag, BLOCKS)
            out += [b >= 0, b < ctx.instance(ext, tag, BLOCKS)]
        out += [ctx.instance(t, tag, BLOCKS) for t in ctx.site_facts(s, "", relaxed=relaxed)]
    return out


def _digit_overlap(k, ctx, x, y, instance):
    """Accesses x (instance "1") and y (instance "2") touch a common byte, in digit form
    (_digits): higher digits equal and lowest digits overlapping, a linear question where the
    offsets were products of sizes. None when the offsets do not decompose alike.
    `instance(term, tag)` renames the symbols that differ between the two executions."""
    parts = []
    for s in (x, y):
        off, n = _byte_range(s)
        d = _digits(k, ctx, s, off, n)
        if d is None:
            return None
        parts.append((d, n))
    ((r1, d1), n1), ((r2, d2), n2) = parts
    if r1 != r2 or len(d1) != len(d2):
        return None
    a = [instance(t, "1") for t in d1]
    b = [instance(t, "2") for t in d2]
    w1, w2 = instance(n1, "1"), instance(n2, "2")
    return [a[0] < b[0] + w2, b[0] < a[0] + w1] + [p == q for p, q in zip(a[1:], b[1:])]


def _two_level(k, ctx, x, y, relaxed=True):
    """The overlap query of two global accesses (a write, and a write or a read) by different
    blocks in digit form (_digits), or None when the offsets do not decompose alike. `relaxed`
    drops the nonlinear loop bounds and guards (more executions: still sound)."""
    overlap = _digit_overlap(k, ctx, x, y, lambda t, tag: ctx.instance(t, tag, BLOCKS))
    if overlap is None:
        return None
    out = _two_block_facts(k, ctx, x, y, relaxed)
    differ = z3.Or([ctx.instance(sym, "1", BLOCKS) != ctx.instance(sym, "2", BLOCKS) for sym, _ in k.blocks.values()])
    return out + [differ] + overlap


def _block_disjoint(k, ctx, s):
    """Fast proof that different blocks write disjoint bytes at site s: its byte offset is
    sum_i c_i * block_i + local, with local (threads, constant loops) inside a span S, and the
    coefficients nest like the digits of a mixed-radix number: S <= c_a, c_a * ext_a <= c_b, ...
    in some order of the block ids. Then the block ids are determined by the offset."""
    import itertools

    from ..numeric import finite_range
    off, n = _byte_range(s)
    n = simplify_int(n)
    if n is None:
        return False
    t = z3.simplify(off, som=True)
    mons = list(t.children()) if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_ADD else [t]
    bsyms = {sym.decl().name(): (sym, ext) for sym, ext in k.blocks.values()}
    coef, local = {}, []
    for mon in mons:
        names = consts_of(mon)
        blocks = [b for b in names if b in bsyms]
        roles = {k.syms.role.get(x) for x in names}
        if not blocks:
            if roles <= {"thread", "loop", None} or not names:
                local.append(mon)
                continue
            if roles <= {"shape", "param"}:
                continue    # the same in every block: no effect on disjointness
            return False
        if len(blocks) != 1 or roles - {"shape", "block", "param"}:
            return False
        b = blocks[0]
        c = z3.simplify(z3.substitute(mon, (bsyms[b][0], z3.IntVal(1))))
        if b in consts_of(c):
            return False    # not linear in the block id
        coef[b] = c if b not in coef else z3.simplify(coef[b] + c)
    pre = ctx.shape_facts()
    for b, (sym, ext) in bsyms.items():
        if b not in coef:   # a block id the offset ignores: its blocks write the same bytes
            res, _ = ctx.solve(pre + [ext > 1])
            if res != "unsat":
                return False
    rng = finite_range(k, s, z3.Sum(local) if local else z3.IntVal(0))
    if rng is None:
        return False
    span = (rng[1] - rng[0] + n) if rng != () else 0
    names = list(coef)
    for order in itertools.permutations(names):
        need = z3.IntVal(span)
        ok = True
        for b in order:
            res, _ = ctx.solve(pre + [coef[b] < need])
            if res != "unsat":
                ok = False
                break
            need = coef[b] * bsyms[b][1]
        if ok:
            return True
    return False


# -- proxy fences ---------------------------------------------------------------------------

GENERIC_WRITES = ("store", "stmatrix", "pointer", "cp_async")
ASYNC_READS = ("wgmma", "tma_store")
# the global side of TMA loads (reads) and stores (writes): async-proxy accesses of global memory
GLOBAL_ASYNC = ("tma_load_src", "tma_load_box", "tma_store_dst", "tma_store_box")
RELEASES = ("arrive", "arrive_expect_tx", "syncthreads", "named_sync", "named_arrive")


class _Flow:
    """Dirty generic-proxy writes along the program: of shared memory, and of global memory
    (plain and atomic stores). fence.proxy.async.shared::cta (TileLang's fence_proxy_async)
    cleans shared memory only; nothing TileLang emits cleans global memory, so a generic write of
    global bytes reaches every later TMA load or store in the kernel. Role branches
    (thread-dependent `if`s) run concurrently: the writes one branch publishes on a channel (an
    mbarrier it arrives on, a named barrier) reach the other branch, at its start (a sound
    over-approximation), when that branch acquires the channel (waits on the mbarrier, takes
    part in the barrier)."""

    def __init__(self, k):
        self.k = k
        self.glob = frozenset(s.id for s in k.sites if s.kind == "access" and s.write and s.buf is not None
                              and s.buf.scope == "global" and not s.async_proxy
                              and (s.op in GENERIC_WRITES or s.op == "atomic"))
        self.candidates = set()
        self.published = {}       # channel -> write site ids dirty at a release on it
        self._acq = {}

    def block(self, blk, dirty):
        for it in blk.items:
            dirty = self.item(it, dirty)
        return dirty

    @staticmethod
    def channel(site):
        if site.kind == "sync":
            return site.bar_key
        if site.mbar is not None:
            return ("mbar", site.mbar[0])
        return None

    def acquires(self, blk):
        """Channels a block acquires on (waits, barriers it takes part in)."""
        if id(blk) not in self._acq:
            out = set()
            stack = list(blk.items)
            while stack:
                it = stack.pop()
                if isinstance(it, M.Site):
                    if it.op == "wait" or it.kind == "sync":
                        out.add(self.channel(it))
                elif isinstance(it, M.LoopNode):
                    stack.extend(it.body.items)
                elif isinstance(it, M.IfNode):
                    stack.extend(it.then.items)
                    stack.extend(it.else_.items)
            self._acq[id(blk)] = out
        return self._acq[id(blk)]

    def item(self, it, dirty):
        if isinstance(it, M.Site):
            if it.kind == "access" and it.shared and it.write and it.op in GENERIC_WRITES or it.id in self.glob:
                return dirty | {it.id}
            if it.op == "proxy_async":
                return dirty & self.glob
            if it.kind == "access" and (it.shared and it.op in ASYNC_READS or it.op in GLOBAL_ASYNC):
                for w in dirty:
                    self.candidates.add((w, it.id))
            if it.op in RELEASES and dirty:
                ch = self.channel(it)
                self.published[ch] = self.published.get(ch, frozenset()) | dirty
            return dirty
        if isinstance(it, M.LoopNode):
            cur = dirty
            while True:
                out = self.block(it.body, cur)
                nxt = cur | out
                if nxt == cur:
                    # a loop that may run zero times also passes its entry state on
                    ext = simplify_int(it.loop.extent)
                    return out if ext is not None and ext > 0 else out | dirty
                cur = nxt
        if isinstance(it, M.IfNode):
            if thread_dependent(it.cond, self.k.syms):
                acq_then, acq_else = self.acquires(it.then), self.acquires(it.else_)
                into_then, into_else = frozenset(), frozenset()
                while True:
                    saved = self.published
                    self.published = {}
                    t = self.block(it.then, dirty | into_then)
                    pub_then = self.published
                    self.published = {}
                    e = self.block(it.else_, dirty | into_else)
                    pub_else = self.published
                    self.published = dict(saved)
                    for pub in (pub_then, pub_else):
                        for ch, ws in pub.items():
                            self.published[ch] = self.published.get(ch, frozenset()) | ws
                    new_then = into_then.union(*[ws for ch, ws in pub_else.items() if ch in acq_then])
                    new_else = into_else.union(*[ws for ch, ws in pub_then.items() if ch in acq_else])
                    if new_then == into_then and new_else == into_else:
                        return t | e
                    into_then, into_else = new_then, new_else
            return self.block(it.then, dirty) | self.block(it.else_, dirty)
        return dirty


def _proxy_finding(k, ctx, r, msg, m, fs, access):
    """A satisfiable proxy_fence query: FAILED, or UNKNOWN where the kernel has constructs outside
    the model or extern calls (whose ordering effect is not modelled: one may be the fence itself,
    a user's own fence.proxy.async.global)."""
    f = definite_finding(k, ctx, "barriers.proxy_fence", r, msg, m, fs, _outside_model(k, calls=True))
    f.access = access
    return f


def _proxy_fence(st):
    k, ctx = st.k, st.ctx
    flow = _Flow(k)
    flow.block(k.root, frozenset())
    findings = []
    by_id = {s.id: s for s in k.sites}
    for wid, rid in sorted(flow.candidates):
        w, r = by_id[wid], by_id[rid]
        if w.buf.scope != r.buf.scope:
            continue
        if w.buf.scope == "global":
            if w.buf.name != r.buf.name:
                continue
            # global bytes: no barrier or fence TileLang emits orders the two proxies
            overlap = _box_overlap(ctx, w, r, PER_INSTANCE_ROLES)
            fs = ctx.base([(w, "1"), (r, "2")])
            res, m = ctx.solve(ctx.base([(w, "1"), (r, "2")], relaxed=True) + overlap)
            if res == "sat":
                res, m = ctx.confirm(m, fs + overlap)
            if res == "sat":
                what = "writes" if r.write else "reads"
                msg = (f"{r.op} {what} {r.buf.name} (async proxy) after a generic-proxy {w.op} of the same global "
                       "bytes with no fence.proxy.async.global in between (TileLang's fence_proxy_async is "
                       ".shared::cta only)")
                findings.append(_proxy_finding(k, ctx, r, msg, m, fs + overlap, f"{w.text}  ->  {r.text}"))
            elif res == "unknown":
                findings.append(unknown("barriers.proxy_fence", f"solver could not decide ({m})", r, k))
            continue
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
            msg = (f"{r.op} reads {r.buf.name} (async proxy) after a generic-proxy {w.op} "
                   f"of {w.buf.name} with no fence.proxy.async in between")
            findings.append(_proxy_finding(k, ctx, r, msg, m, fs, f"{w.text}  ->  {r.text}"))
        elif res == "unknown":
            findings.append(unknown("barriers.proxy_fence", f"solver could not decide ({m})", r, k))
    return findings, f"{len(flow.candidates)} unfenced write/async-read paths"


__all__ = ["run"]
