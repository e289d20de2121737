"""Z3 queries over a kernel model: site contexts, thread instances, axioms, counterexamples."""
from __future__ import annotations

import itertools
import os
import re
import time

import z3

from .z3expr import DTYPE_RANGE, BodyNames, reads_memory

# Each query gets a Z3 resource limit (`rlimit`, in Z3's deterministic resource units) instead
# of a wall-clock timeout, and runs in a fresh Z3 context (see _check), so a verdict does not
# depend on the machine's speed or load (nor, meant so, on what the worker solved before: see
# session 27 below). The largest
# query of the 48 released builds takes RLIMIT_MEASURED units (z3 4.15.4, verify 2.13.0: one
# query of the fixed 16-token K1 with early loads and the lean prologue, 12.1 million under
# 2.12.0 too; `python -m verify` prints each run's largest). That leaves only ~1.6x headroom
# (it was ~25x over the 28 builds of 2.2.0); a query over the limit is asked once more presolved
# (_check). Session 26 (60 builds): 14.4 M in one run; in others, with another order of the
# workers' memo, one query of the K2 over four sequences a program exhausts the limit in its first
# strategy and proves in the second. Session 27 (2.14.0): the same build proved alone (largest
# query 16.7 M) and was UNKNOWN in a two-worker run, both strategies exhausted: a query's work
# still depends on what the worker did before it (how, not found: the conjuncts' order is a
# suspect), so the verdict at a limit this close to a query's need is not stable. The grouped
# K2 builds (four and eight sequences a program) take their own limit (K2Config.verify_rlimit,
# configs.SPP_RLIMIT; largest query 67 M). A query that exhausts the limit takes 3-13 s on the
# 2-core development machine.
# KDA_VERIFY_RLIMIT overrides it (0: no limit).
RLIMIT_MEASURED = 12_305_648
RLIMIT = 20_000_000
DEFAULT_RLIMIT = int(os.environ.get("KDA_VERIFY_RLIMIT", str(RLIMIT)))
PER_INSTANCE_ROLES = ("thread", "loop", "unknown")

_memo: dict = {}
# queries (cached: answered from the memo), unknown, seconds of solving, rlimit units used
# (total and the largest single query), for the whole process
stats = {"queries": 0, "cached": 0, "seconds": 0.0, "unknown": 0, "rlimit": 0, "rlimit_max": 0}


def _rlimit_count(s) -> int:
    """Z3's resource counter (cumulative over the context), as a solver's statistics show it."""
    try:
        return int(s.statistics().get_key_value("rlimit count"))
    except (z3.Z3Exception, KeyError):
        return 0


def _subterms(term, seen):
    """Each subterm of `term` whose id is not in `seen` (which it fills), outside quantifiers:
    quantified subformulas carry their own facts."""
    stack = [term]
    while stack:
        t = stack.pop()
        i = t.get_id()
        if i in seen:
            continue
        seen.add(i)
        if z3.is_quantifier(t):
            continue
        yield t
        stack.extend(t.children())


def _consts(term, acc, seen):
    for t in _subterms(term, seen):
        if z3.is_const(t) and not z3.is_int_value(t) and not z3.is_true(t) and not z3.is_false(t) \
                and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            acc[t.decl().name()] = t


def _apps(term, acc, seen):
    for t in _subterms(term, seen):
        if z3.is_app(t) and t.num_args() > 0 and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            acc.setdefault(t.decl().name(), {})[t.get_id()] = t


class Ctx:
    """Constraint builder for one kernel."""

    def __init__(self, kernel, rlimit: int = None):
        self.k = kernel
        self.syms = kernel.syms
        self.rlimit = DEFAULT_RLIMIT if rlimit is None else rlimit
        self._inst_cache = {}
        # ask presolved first (barriers.race sets it: its order queries over counts mostly prove
        # faster that way), the default strategy second
        self.presolve_first = False

    # -- instances -------------------------------------------------------------------
    def instance(self, term, tag: str, roles=PER_INSTANCE_ROLES):
        """Copy of `term` whose per-thread symbols (threads, loop indices, unknowns) carry `tag`."""
        if not tag:
            return term
        key = (term.get_id(), tag, roles)
        hit = self._inst_cache.get(key)
        if hit is not None and hit[0].eq(term):   # ids are reused once a term dies
            return hit[1]
        acc = {}
        _consts(term, acc, set())
        pairs = []
        for name, c in acc.items():
            if self.syms.role.get(name) in roles:
                new = name + "'" + tag
                self.syms.role.setdefault(new, self.syms.role[name])
                self.syms.pretty.setdefault(new, self.syms.pretty.get(name, name) + "'" + tag)
                pairs.append((c, z3.Const(new, c.sort())))
        r = z3.substitute(term, *pairs) if pairs else term
        self._inst_cache[key] = (term, r)
        return r

    # -- contexts ----------------------------------------------------------------------
    def shape_facts(self):
        return list(self.k.preconditions)

    def block_facts(self):
        out = []
        for sym, ext in self.k.blocks.values():
            out += [sym >= 0, sym < ext]
        return out

    def thread_facts(self, tag=""):
        out = []
        for sym, ext in self.k.threads.values():
            s = self.instance(sym, tag)
            out += [s >= 0, s < ext]
        return out

    def loop_facts(self, loops, tag="", relaxed=False):
        out = []
        for lp in loops:
            v = self.instance(lp.sym, tag)
            lo = self.instance(lp.lo, tag)
            ext = self.instance(lp.extent, tag)
            for f in (v >= lo, v < lo + ext):
                if not relaxed or is_linear(f):
                    out.append(f)
        return out

    def site_facts(self, site, tag="", conds=True, relaxed=False):
        out = self.thread_facts(tag) + self.loop_facts(site.loops, tag, relaxed)
        if conds:
            out += [self.instance(c, tag) for c in site.conds if not relaxed or is_linear(c)]
        return out

    def base(self, sites_tags, relaxed=False):
        """Facts for sites executing as the given instances. `relaxed` drops nonlinear
        loop bounds and guards: more executions are considered, which keeps "no race" and
        similar proofs sound while sparing the solver nonlinear integer arithmetic."""
        out = [f for f in self.shape_facts() if not relaxed or is_linear(f)] + self.block_facts()
        for site, tag in sites_tags:
            out += self.site_facts(site, tag, relaxed=relaxed)
        return out

    # -- axioms for uninterpreted loads ------------------------------------------------
    def axioms(self, formulas):
        defs = self.definitions(formulas)
        formulas = list(formulas) + defs
        apps = {}
        seen = set()
        for f in formulas:
            _apps(f, apps, seen)
        out = list(defs)
        for fname, terms in apps.items():
            if fname.startswith("psum#"):
                out += _psum_facts(list(terms.values()))
                continue
            info = self.syms.uf_info.get(fname)
            if info is None:
                continue
            dtype = info[0]
            rng = DTYPE_RANGE.get(dtype)
            ts = list(terms.values())
            if rng is not None:
                for t in ts:
                    out += [t >= rng[0], t <= rng[1]]
            base = info[2] if len(info) > 2 else None
            mono = self.k.monotone.get(base)
            if mono is not None and info[1] == "global":
                length, last = mono
                # 0 = cu[0] <= cu[i] <= cu[i+1] <= cu[len-1] = last, instantiated on the terms used
                for t in ts:
                    i = t.arg(0)
                    out += [z3.Implies(i == 0, t == 0), z3.Implies(i == length - 1, t == last),
                            z3.Implies(z3.And(i >= 0, i < length), z3.And(t >= 0, t <= last))]
                for a in ts:
                    for b in ts:
                        if a.get_id() != b.get_id() and a.num_args() == 1:
                            ia, ib = a.arg(0), b.arg(0)
                            out.append(z3.Implies(z3.And(ia >= 0, ia <= ib, ib < length), a <= b))
            if base in self.k.distinct and info[1] == "global":
                # entries >= 0 at different positions differ (declared by the module: DISTINCT)
                for x, a in enumerate(ts):
                    for b in ts[x + 1:]:
                        if a.num_args() == 1 and b.num_args() == 1:
                            out.append(z3.Implies(z3.And(a.arg(0) != b.arg(0), a >= 0, b >= 0), a != b))
        return out

    def definitions(self, formulas):
        """`c(args) == count(args)` and `c(args) >= 0` for every application of an abstract count
        in the formulas (verify.counting names counts without closed form; queries try without
        the definitions first)."""
        defs = dict(getattr(self.k.counts, "defs", None) or {})
        defs.update(getattr(self.k, "extent_defs", None) or {})
        if not defs:
            return []
        out, done = [], set()
        todo = list(formulas)
        while todo:
            apps = {}
            for f in todo:
                _apps(f, apps, set())
                acc = {}
                _consts(f, acc, set())
                for n, c in acc.items():
                    if n in defs:
                        apps.setdefault(n, {})[c.get_id()] = c
            todo = []
            for name, terms in apps.items():
                if name not in defs:
                    continue
                body, free = defs[name]
                for t in terms.values():
                    if t.get_id() in done:
                        continue
                    done.add(t.get_id())
                    d = z3.substitute(body, *zip(free, t.children())) if free else body
                    out += [t == d, t >= 0]
                    todo.append(d)
        return out

    # -- lemmas for nonlinear index arithmetic ---------------------------------------
    def ranges(self):
        """Symbol name -> (lo, hi exclusive) for block ids, thread ids and loop indices."""
        r = getattr(self, "_ranges", None)
        if r is None:
            r = {}
            for sym, ext in self.k.blocks.values():
                r[sym.decl().name()] = (z3.IntVal(0), ext)
            for sym, ext in self.k.threads.values():
                r[sym.decl().name()] = (z3.IntVal(0), z3.IntVal(ext))
            for lp in self.k.loops:
                r[lp.sym.decl().name()] = (lp.lo, lp.lo + lp.extent)
            self._ranges = r
        return r

    def _bounded_products(self, formulas):
        """(t, v, g) for every product t = v * g in the formulas with v a bounded index (a block,
        thread or loop symbol, or an instance of one) and g the product of the other factors."""
        rng = self.ranges()
        seen = set()
        stack = list(formulas)
        while stack:
            t = stack.pop()
            if t.get_id() in seen or z3.is_quantifier(t):
                continue
            seen.add(t.get_id())
            if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_MUL and t.num_args() >= 2 and \
                    sum(not z3.is_int_value(c) for c in t.children()) >= 2:
                ch = t.children()
                for i, f in enumerate(ch):
                    if z3.is_const(f) and f.decl().name().split("'")[0] in rng:
                        rest = [c for j, c in enumerate(ch) if j != i]
                        yield t, f, rest[0] if len(rest) == 1 else z3.Product(*rest)
            stack.extend(t.children())

    def satisfied_by(self, model, formulas) -> bool:
        """Whether `model` (found for another query) satisfies `formulas` and the facts about
        loaded values that solve() would add to them: it is then a model of that query as it
        stands. False where any of them does not evaluate to true (the caller then asks Z3)."""
        if model is None:
            return False
        formulas = list(formulas)
        try:
            return all(z3.is_true(model.eval(f, model_completion=True))
                       for f in formulas + self.axioms(formulas))
        except z3.Z3Exception:
            return False

    def solve_near(self, model, formulas, rlimit=2_000_000):
        """solve(formulas) with the shape variables pinned to their values in `model` (found for
        a relaxed form of the same question): products of a shape variable and an index are then
        linear. A model it finds is a model of `formulas`; anything else says nothing, and the
        caller asks the unpinned question."""
        if model is None:
            return ("unknown", "no model to start from")
        pins = [t == model.eval(t, model_completion=True) for t in self.k.shape.values()]
        q = list(formulas) + pins
        return self.solve(q + self.product_lemmas(q), rlimit=rlimit)

    def confirm(self, model, formulas):
        """A relaxed query (nonlinear loop bounds and guards dropped) found `model`; is `formulas`,
        the same question with all of them kept, satisfiable? By the model itself where it
        satisfies them (a witness as it stands; the query it spares can take minutes on a
        nonlinear K1), else with the shapes pinned to the model's (solve_near), else by the whole
        query with the product facts. Returns solve()'s ('sat', model) | ('unsat', None) |
        ('unknown', reason)."""
        formulas = list(formulas)
        if self.satisfied_by(model, formulas):
            return "sat", model
        res, m = self.solve_near(model, formulas)
        if res == "sat":
            return res, m
        return self.solve(formulas + self.product_lemmas(formulas) + self.order_lemmas(formulas))

    def product_lemmas(self, formulas):
        """For each product v*g with v a bounded index (lo <= v < hi): lo*g <= v*g <= (hi-1)*g
        when g >= 0. True facts that let the solver bound `b*H*T` by `(B-1)*H*T` linearly."""
        rng = self.ranges()
        out = []
        for t, f, g in self._bounded_products(formulas):
            name = f.decl().name()
            lo, hi = rng[name.split("'")[0]]
            if "'" in name:
                tag = name.split("'", 1)[1]
                lo, hi = self.instance(lo, tag), self.instance(hi, tag)
            out.append(z3.Implies(z3.And(g >= 0, f >= lo, f < hi), z3.And(t >= lo * g, t <= (hi - 1) * g)))
        return out

    def order_lemmas(self, formulas):
        """For two instances v'a * g'a and v'b * g'b of one product with v a bounded index (the
        same block index of two blocks, say): v'a < v'b and g'a == g'b >= 0 imply
        v'a * g'a + g'a <= v'b * g'b. True facts that let the solver see that blocks taking
        consecutive ranges [v g, (v + 1) g) (a sequence's segments) do not overlap."""
        groups: dict = {}
        for t, f, g in self._bounded_products(formulas):
            name = f.decl().name()
            if "'" in name:
                key = (name.split("'")[0], re.sub(r"'[A-Za-z0-9_]+", "", g.sexpr()))
                groups.setdefault(key, []).append((f, g, t))
        return [z3.Implies(z3.And(fa < fb, ga == gb, ga >= 0), ta + ga <= tb)
                for items in groups.values() for (fa, ga, ta), (fb, gb, tb) in itertools.permutations(items, 2)
                if fa.decl().name() != fb.decl().name()]

    # -- solving -----------------------------------------------------------------------
    def solve(self, formulas, rlimit=None, facts=True):
        """Returns ('sat', model) | ('unsat', None) | ('unknown', reason).

        rlimit: this query's Z3 resource limit (default: the context's).
        facts=False skips the facts about loaded values when the caller only acts on UNSAT."""
        formulas = list(formulas)
        abstract = self.abstract_loads(formulas)
        if abstract is not None:
            limit = self.rlimit if rlimit is None else rlimit
            out = self._check(abstract, limit // ABSTRACT_SHARE if limit else 0)
            if out[0] == "unsat":
                return out
        # Facts about loaded values only ever remove models: UNSAT without them is final,
        # and most queries are UNSAT, so the (costly) collection runs only when needed.
        out = self._check(formulas, rlimit)
        if out[0] == "unsat" or not facts:
            return out
        extra = self.axioms(formulas)
        if not extra:
            return out
        return self._check(formulas + extra, rlimit)

    def abstract_loads(self, formulas):
        """The formulas with each nonlinear subterm over loaded values (a sequence's chunk count
        from cu_seqlens: min, max and divisions of loads) replaced by an uninterpreted function
        of its free symbols, one function for each body up to the renaming of those symbols (the
        same count in two threads, or at two loop indices, is one function at two arguments).
        Dropping the definitions only adds models, so UNSAT of the result is UNSAT of the
        formulas; a query tries it first. None when nothing is abstracted."""
        if getattr(self.syms, "uf_info", None) is None:
            return None
        cache = self.__dict__.setdefault("_abs", {"memo": {}, "names": BodyNames("~load"), "loads": {}})
        out, changed = [], False
        for f in formulas:
            r = self._abs_term(f, cache)
            changed = changed or not r.eq(f)
            out.append(r)
        return out if changed else None

    def _has_load(self, t, cache):
        i = t.get_id()
        hit = cache["loads"].get(i)
        if hit is not None and hit[0].eq(t):
            return hit[1]
        r = False
        if not z3.is_quantifier(t):
            r = _is_load(t, self.syms.uf_info) or any(self._has_load(c, cache) for c in t.children())
        cache["loads"][i] = (t, r)
        return r

    def _abs_term(self, t, cache):
        i = t.get_id()
        hit = cache["memo"].get(i)
        if hit is not None and hit[0].eq(t):
            return hit[1]
        if z3.is_quantifier(t) or not z3.is_app(t) or t.num_args() == 0 or not self._has_load(t, cache) \
                or _is_load(t, self.syms.uf_info):
            r = t
        else:
            kind = t.decl().kind()
            linear = kind in _LINEAR_OPS or (kind == z3.Z3_OP_MUL and
                                             sum(1 for c in t.children() if not z3.is_int_value(c)) <= 1)
            if linear or not z3.is_int(t) or (kind == z3.Z3_OP_ITE and not self._has_load(t.arg(0), cache)):
                r = t.decl()(*[self._abs_term(c, cache) for c in t.children()])
            else:
                r = self._abs_name(t, cache)
        cache["memo"][i] = (t, r)
        return r

    def _abs_name(self, t, cache):
        acc = {}
        _consts(t, acc, set())
        return cache["names"].name(t, [acc[n] for n in sorted(acc)])[0]

    def _check(self, formulas, rlimit):
        # z3 hash-conses terms: structurally equal formulas are the same AST node, so the
        # ids identify a query exactly as long as the terms stay alive (the memo keeps them)
        limit = self.rlimit if rlimit is None else rlimit
        key = (tuple(f.get_id() for f in formulas), limit)
        hit = _memo.get(key)
        stats["queries"] += 1
        if hit is not None and all(a.eq(b) for a, b in zip(hit[0], formulas)):
            stats["cached"] += 1
            return hit[1]
        # Each query runs in a fresh Z3 context of its own: the work Z3 does (and so the
        # resource units it counts) then depends on the query alone, not on the main context's
        # term numbering and caches. (The query itself can still come out differently after
        # other kernels in the same worker: session 27 saw one proof and one UNKNOWN of a build
        # near the limit; see RLIMIT above.)
        first = self.presolve_first
        r, s, used = _run(formulas, limit, first)
        if r == z3.unknown and limit and used >= limit:
            # Queries over several threads' counts (sums of loop trip counts, their residues
            # modulo a ring's size) can exhaust the limit in Z3's default strategy and take a
            # fraction of it once equalities are solved and values propagated first, and some
            # other queries the other way round: the same question, asked again in the other
            # form, with a limit of its own
            r, s, used2 = _run(formulas, limit, not first)
            used = max(used, used2)
        if r == z3.sat:
            out = ("sat", s.model().translate(z3.main_ctx()))
        elif r == z3.unsat:
            out = ("unsat", None)
        else:
            stats["unknown"] += 1
            why = s.reason_unknown()
            if limit and used >= limit:
                why = f"resource limit of {limit} Z3 units exhausted (KDA_VERIFY_RLIMIT; {why})"
            out = ("unknown", why)
        _memo[key] = (list(formulas), out)
        return out

    # -- counterexamples ---------------------------------------------------------------
    def counterexample(self, model, formulas=()):
        """Values of shape vars, block and thread ids, loop indices and loaded data."""
        acc = {}
        seen = set()
        for f in formulas:
            _consts(f, acc, seen)
        out = {"shape": {}, "block": {}, "thread": {}, "loop": {}, "data": {}}
        for name, c in sorted(acc.items()):
            role = self.syms.role.get(name.split("'")[0]) or self.syms.role.get(name)
            if role not in ("shape", "block", "thread", "loop"):
                continue
            v = model.eval(c, model_completion=True)
            if z3.is_int_value(v):
                out[role][self.syms.pretty.get(name, name)] = v.as_long()
        for name in self.k.shape:
            if name not in out["shape"]:
                v = model.eval(self.k.shape[name], model_completion=True)
                if z3.is_int_value(v):
                    out["shape"][name] = v.as_long()
        apps = {}
        seen = set()
        for f in formulas:
            _apps(f, apps, seen)
        for fname, terms in apps.items():
            info = self.syms.uf_info.get(fname)
            if info is None or info[1] not in ("global", "shared"):
                continue
            for t in terms.values():
                try:
                    idx = model.eval(t.arg(0), model_completion=True)
                    val = model.eval(t, model_completion=True)
                except z3.Z3Exception:
                    continue
                if z3.is_int_value(idx) and z3.is_int_value(val):
                    base = info[2] if len(info) > 2 else fname
                    out["data"][f"{base}[{idx.as_long()}]"] = val.as_long()
        return {k: v for k, v in out.items() if v}


def _run(formulas, limit, presolve):
    """(result, solver, resource units used) of one check in a fresh Z3 context."""
    zctx = z3.Context()
    if presolve:
        s = z3.Then(z3.Tactic("simplify", ctx=zctx), z3.Tactic("propagate-values", ctx=zctx),
                    z3.Tactic("solve-eqs", ctx=zctx), z3.Tactic("smt", ctx=zctx)).solver()
    else:
        s = z3.Solver(ctx=zctx)
    if limit:
        s.set("rlimit", limit)   # relative: this check may use `limit` more units
    s.add(*[f.translate(zctx) for f in formulas])
    start = _rlimit_count(s)
    t0 = time.perf_counter()
    r = s.check()
    stats["seconds"] += time.perf_counter() - t0
    used = max(0, _rlimit_count(s) - start)   # this check's resource units
    stats["rlimit"] += used
    stats["rlimit_max"] = max(stats["rlimit_max"], used)
    return r, s, used


# Ctx.abstract_loads: linear operators are kept (their operands abstracted), and the abstract
# query gets this share of the query's resource limit
_LINEAR_OPS = {z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_UMINUS, z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE,
               z3.Z3_OP_GT, z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT, z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_NOT,
               z3.Z3_OP_IMPLIES, z3.Z3_OP_XOR}
ABSTRACT_SHARE = 4


def _is_load(t, uf_info) -> bool:
    """A value the query knows only through facts or definitions: a read of a buffer (verify.extract
    names them; their scope is global or shared), a named count or loop trip count, a partial sum."""
    if not (z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED):
        return False
    return t.decl().name().startswith(("~count#", "~extent#", "psum#")) or reads_memory(t, uf_info)


def _psum_facts(ts):
    """An uninterpreted partial sum psum(lo, hi, ...) of a count (verify.counting) is >= 0, 0 on
    an empty range, and grows with hi."""
    out = []
    for t in ts:
        lo, hi = t.arg(0), t.arg(1)
        out += [t >= 0, z3.Implies(hi <= lo, t == 0)]
    for a in ts:
        for b in ts:
            if a.get_id() != b.get_id() and all(a.arg(i).eq(b.arg(i)) for i in range(a.num_args()) if i != 1):
                out.append(z3.Implies(a.arg(1) <= b.arg(1), a <= b))
    return out


def evaluate(model, term):
    v = model.eval(term, model_completion=True)
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    return str(v)


_lin_cache: dict = {}


def is_linear(term) -> bool:
    """No product of two non-constant terms and no division by a non-constant."""
    key = term.get_id()
    hit = _lin_cache.get(key)
    if hit is not None and hit[0].eq(term):
        return hit[1]
    ok = True
    stack, seen = [term], set()
    while stack and ok:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t):
            k = t.decl().kind()
            if k == z3.Z3_OP_MUL:
                nonconst = [c for c in t.children() if not z3.is_int_value(c)]
                ok = len(nonconst) <= 1
            elif k in (z3.Z3_OP_IDIV, z3.Z3_OP_DIV, z3.Z3_OP_MOD, z3.Z3_OP_REM):
                ok = z3.is_int_value(t.arg(1))
        stack.extend(t.children())
    _lin_cache[key] = (term, ok)
    return ok
