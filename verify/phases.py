"""The mbarrier protocol of a kernel, counted per thread (verify.counting).

For a thread and a barrier b (buffer and index):
  arrivals(p, b): its arrive / arrive_expect_tx executions on b before point p,
  waits(p, b):    its wait executions on b before p.
The model (each thread arrives at most once per phase of a barrier and waits for phases in order):
  - a thread's k-th arrival on b counts toward phase k of b;
  - a transaction (expect_tx, a TMA's complete_tx) counts toward the phase of the arrival it
    belongs to: the arrive_expect_tx that precedes it in the same iteration, else the thread's
    next arrival on b (phase = arrivals before it);
  - a thread's k-th wait on b with parity p returns after the completion of phase n = k - d,
    with d = (k - p) mod 2 the same for all its waits on b (barriers.parity proves that);
    n = -1 returns at once (the phase before a fresh barrier's first counts as complete).
So an arrival (or a TMA) of phase m happens before the return of a wait of phase n >= m.

Phase counters held in registers (`cnt = cnt + 1`, TileLang's persistent and pipelined
warp-specialized loops) are counted through the register: an event that runs exactly once per
increment of the counter ("lockstep") has seen one event per counter value before it, so its
k-th execution is the one at counter value init + step * (k + s), whatever loops the counter
spans.
"""
from __future__ import annotations

import numpy as np
import z3

from . import model as M
from .counting import END, Counts, point_in
from .numeric import Symbolic, instances, np_eval
from .order import thread_only
from .z3expr import consts_of

ARRIVES = ("arrive", "arrive_expect_tx")
TX = ("expect_tx", "tma_load")


class Phases:
    def __init__(self, k, ctx):
        self.k, self.ctx = k, ctx
        if k.counts is None:
            k.counts = Counts(k)
        self.counts = k.counts
        self.sizes = {}
        for b in k.bufs.values():
            if b.scope == "barrier":
                n = z3.simplify(b.size) if b.size is not None else None
                self.sizes[b.name] = n.as_long() if n is not None and z3.is_int_value(n) else None
        self.arrives, self.waits, self.txs = {}, {}, {}
        for s in k.sites:
            if s.mbar is None:
                continue
            if s.op in ARRIVES:
                self.arrives.setdefault(s.mbar[0], []).append(s)
            elif s.op == "wait":
                self.waits.setdefault(s.mbar[0], []).append(s)
            if s.op in TX or s.op == "arrive_expect_tx":
                self.txs.setdefault(s.mbar[0], []).append(s)
        self._values = {}
        self._lock = {}
        self._cache = {}
        self.delta = {}           # (wait site id, b) -> d in {0, 1}, set by barriers.parity
        self.never = set()        # (wait site id, b): the wait never names b

    # -- which barriers a site can name ----------------------------------------------------
    def values(self, site):
        """The set of indices site's barrier operand takes (None: not enumerable)."""
        if site.id not in self._values:
            v = None
            try:
                env, _ = instances(self.k, site, [site.mbar[1]])
                arr = np.broadcast_to(np_eval(site.mbar[1], env), env["__thread"].shape)[env["__active"]]
                v = set(int(x) for x in arr.tolist())
            except Symbolic:
                n = self.sizes.get(site.mbar[0])
                v = set(range(n)) if n is not None else None
            self._values[site.id] = v
        return self._values[site.id]

    def indices(self, buf):
        n = self.sizes.get(buf)
        if n is not None:
            return list(range(n))
        vals = set()
        for s in self.arrives.get(buf, []) + self.waits.get(buf, []) + self.txs.get(buf, []):
            v = self.values(s)
            if v is None:
                return None
            vals |= v
        return sorted(vals)

    # -- counts ----------------------------------------------------------------------------
    def arrivals(self, p, buf, b):
        return self._sum(self.arrives.get(buf, []), p, b)

    def waits_before(self, p, buf, b):
        return self._sum(self.waits.get(buf, []), p, b)

    def _sum(self, sites, p, b):
        key = (tuple(s.id for s in sites), END if p is END else p.id, b)
        if key in self._cache:
            return self._cache[key]
        total = z3.IntVal(0)
        for a in sites:
            vals = self.values(a)
            if vals is not None and b not in vals:
                continue
            c = self.count(a, p, b)
            if c is None:
                total = None
                break
            total = total + c
        r = z3.simplify(total) if total is not None else None
        self._cache[key] = r
        return r

    def count(self, a, p, b):
        """Executions of event site `a` on barrier index b before point p, same thread."""
        lock = self.lockstep(a)
        if lock is not None:
            return self._lockstep_count(a, p, b, lock)
        return self.counts.before(a, p, a.mbar[1] == b)

    # -- lockstep with a counter register ------------------------------------------------------
    def lockstep(self, a):
        """(increment site, step, s, block, position, extra thread conditions, raw index) when
        site a runs exactly once per increment of the register its barrier index is read from."""
        if a.id in self._lock:
            return self._lock[a.id]
        self._lock[a.id] = r = self._find_lockstep(a)
        return r

    def _find_lockstep(self, a):
        k = self.k
        raw = a.extra.get("mbar_raw")
        if raw is None or not k.registers:
            return None
        roles = k.syms.role
        names = consts_of(raw)
        holders = [n for n in names if roles.get(n) == "induction"]
        if not holders or any(roles.get(n) not in ("induction", "shape", "block", "param") for n in names):
            return None
        regs = {k.placeholders.get(n) for n in holders}
        if len(regs) != 1:
            return None
        reg = regs.pop()
        info = k.registers.get(reg)
        if info is None or not info["incs"]:
            return None
        # the increment in a's block or a block around it through role tests only (each role of
        # a warp-specialized kernel may step its own copy of one register: one such increment)
        found = []
        for inc in info["incs"]:
            block = inc.parent
            extra = []
            child, blk = a, a.parent
            while blk is not None and blk is not block:
                owner = blk.owner
                if not isinstance(owner, M.IfNode) or not thread_only(owner.cond, k.syms):
                    blk = None
                    break
                extra.append(owner.cond if blk.branch == "then" else z3.Not(owner.cond))
                child, blk = owner, owner.parent
            if blk is block:
                found.append((inc, block, child, extra))
        if len(found) != 1:
            return None
        inc, block, child, extra = found[0]
        pos = child.pos
        s = 1 if inc.pos < pos else 0
        return inc, inc.extra["step"], s, block, pos, extra, raw, info["init"], holders

    def _lockstep_count(self, a, p, b, lock):
        inc, step, s, block, pos, extra, raw, init, holders = lock
        done_inc = self.counts.before(inc, p)
        if done_inc is None:
            return None
        q = None if p is END else point_in(p, block)
        a_done = i_done = 0
        if q is not None:
            a_done = int(q > pos or (q == pos and a.id < p.id))
            i_done = int(q > inc.pos or (q == inc.pos and inc.id < p.id))
        J = done_inc - i_done + a_done
        j = z3.Int(f"~lock#{a.id}")
        self.k.syms.role.setdefault(j.decl().name(), "sum")
        value = init + step * (j + s)
        idx = z3.substitute(raw, *[(z3.Int(h), value) for h in holders])
        items = self.counts.sum_items([([idx == b], z3.IntVal(1))], j, z3.IntVal(0), J)
        n = self.counts.items_term(items)
        return z3.simplify(z3.If(z3.And(extra), n, 0)) if extra else n

    # -- phases of single events -------------------------------------------------------------
    def tx_phase(self, x, b):
        """The phase a transaction event (expect_tx, TMA) of barrier index b counts toward;
        None when it cannot be attached to an arrival of its thread."""
        prev = self.preceding_arrival(x)
        if prev == "bad":
            return None
        n = self.arrivals(x, x.mbar[0], b)
        if n is None:
            return None
        return n - 1 if prev is not None else n

    def preceding_arrival(self, x):
        """The arrive_expect_tx this transaction follows in the same iteration (None: none,
        'bad': a plain arrival or another barrier comes first). An arrival whose index differs
        from the transaction's for every value of the loop variables they share (a pipelined
        loop that arrives on slot c % S and copies into slot (c + S - 1) % S) is on another
        barrier, so it is passed over."""
        best = None
        for a in self.arrives.get(x.mbar[0], []):
            if a.id >= x.id or not _prefix(a.loops, x.loops):
                continue
            inner = x.loops[len(a.loops):]
            if any(z3.simplify(lp.extent).as_long() > 64 if z3.is_int_value(z3.simplify(lp.extent)) else True
                   for lp in inner):
                continue
            if self._always_differ(a.mbar[1], x.mbar[1]):
                continue
            if best is None or a.id > best.id:
                best = a
        if best is None:
            return None
        if best.op != "arrive_expect_tx" or not best.mbar[1].eq(x.mbar[1]) \
                or not all(any(c.eq(d) for d in x.conds) for c in best.conds):
            return "bad"
        return best

    def _always_differ(self, i, j) -> bool:
        """Whether barrier indices i and j (terms over the same loop variables) differ for every
        value of their variables."""
        return not i.eq(j) and self.ctx.solve([i == j], facts=False)[0] == "unsat"

    def wait_phase(self, w, b):
        """n = k - d of a wait on barrier index b (None when unknown)."""
        d = self.delta.get((w.id, b))
        kth = self.waits_before(w, w.mbar[0], b)
        if d is None or kth is None:
            return None
        return kth - d

    def delta_term(self, buf, b):
        """d of the thread's waits on (buf, b) as a term over thread symbols: the waits that
        may reach b, told apart by their role tests (barriers.parity proved d consistent)."""
        key = ("delta", buf, b)
        if key not in self._cache:
            self._cache[key] = self._delta_term(buf, b)
        return self._cache[key]

    def _delta_term(self, buf, b):
        ds = []
        for w in self.waits.get(buf, []):
            vals = self.values(w)
            if (vals is not None and b not in vals) or (w.id, b) in self.never:
                continue
            d = self.delta.get((w.id, b))
            if d is None:
                return None
            roles = [c for c in w.conds if thread_only(c, self.k.syms)]
            ds.append((z3.And(roles) if roles else z3.BoolVal(True), d))
        if not ds:
            return None
        if len({d for _, d in ds}) == 1:
            return z3.IntVal(ds[0][1])
        t = z3.IntVal(ds[-1][1])
        for cond, d in reversed(ds[:-1]):
            t = z3.If(cond, d, t)
        return t


def _prefix(a, b):
    return len(a) <= len(b) and all(x is y for x, y in zip(a, b))


__all__ = ["Phases", "ARRIVES", "TX"]
