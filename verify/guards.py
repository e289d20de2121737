"""Accesses in bounds only because TileLang guarded them.

TileLang's safe-memory legalization (tl.LegalizeSafeMemoryAccess) wraps every global access it
cannot prove in bounds in a guard: an out-of-range load reads a safe value (0), an out-of-range
store is skipped. Memory stays safe, so bounds.global proves such a kernel, but the numbers it
computes at those positions are not what the author wrote. When the legalization changed the
kernel, `bounds.guarded` lowers it again without the legalization and checks the bounds of that
kernel as written: every access found out of bounds there is reported as a WARNING (an error
with `--strict`). Builds whose legalization added nothing cost nothing; a build whose accesses
are all in bounds without any condition that could be such a guard needs no second lowering.
"""
from __future__ import annotations

import time

from .report import WARNING, Finding, check_result

CHECK = "bounds.guarded"
QUICK_RLIMIT = 2_000_000   # Z3 resource units per query (about a second): undecided guard
                           # questions are reported as such (a warning)


def guarded_accesses(lowered, job, k=None):
    """The bounds.guarded CheckResult of a lowered kernel (None when there is nothing to do)."""
    if not lowered.legalize_changed or job.mutate is not None:
        return None
    t0 = time.perf_counter()
    # a cheap proof that no access needs a guard-like condition settles it without lowering
    # the kernel again (most released builds)
    if k is not None and _exonerated(k):
        return check_result(CHECK, "bounds", [], "every global access is in bounds without the "
                            "conditions TileLang may have added", time.perf_counter() - t0)
    from . import solver
    from .checks import bounds
    from .extract import extract
    from .lowering import lower
    configs = dict(job.pass_configs)
    configs["tl.disable_safe_memory_legalize"] = True
    func = job.factory() if callable(job.factory) and not hasattr(job.factory, "body") else job.factory
    raw = lower(func, configs, job.name)
    k = extract(raw, job.preconditions, job.derived, job.monotone, name=job.name, distinct=job.distinct)
    ctx = solver.Ctx(k) if job.strict else _ctx(k)    # --strict: the full solver budget
    findings = []
    found, _ = bounds._accesses(k, ctx, "global")     # the legalization guards global accesses only
    for f in found:
        if f.status == "failed":
            findings.append(Finding(
                check=CHECK, status=WARNING, buffer=f.buffer, access=f.access, line=None,
                message=f"in bounds only through a guard TileLang inserted: without it, {f.message}",
                counterexample=f.counterexample))
        elif f.status == "unknown":
            findings.append(Finding(check=CHECK, status=WARNING, buffer=f.buffer, access=f.access,
                                    message=f"not decided whether in bounds without TileLang's guards: {f.message}"))
    return check_result(CHECK, "bounds", findings, "accesses guarded by tl.LegalizeSafeMemoryAccess",
                        time.perf_counter() - t0)


def _guard_like(c, k):
    """A comparison of an index with 0 or with a size variable (tl.LegalizeSafeMemoryAccess
    guards a tensor's dimensions that way)."""
    import z3
    while z3.is_not(c):
        c = c.arg(0)
    if not (z3.is_app(c) and c.num_args() == 2 and c.decl().kind() in
            (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT)):
        return False
    for side in c.children():
        if z3.is_int_value(side) and side.as_long() == 0:
            return True
        if z3.is_const(side) and k.syms.role.get(side.decl().name()) == "shape":
            return True
    return False


def _conjuncts(c):
    import z3
    return [x for y in c.children() for x in _conjuncts(y)] if z3.is_and(c) else [c]


def _exonerated(k):
    """Cheap path: every global access of the guarded kernel is in bounds even without any
    condition that may be a TileLang guard (conjuncts comparing an index with 0 or a size).
    The kernel as written then has no guard-dependent access, whatever the guards were."""
    import dataclasses

    from . import solver
    from .checks import bounds
    sites = []
    for s in k.sites:
        if s.kind == "access" and s.buf is not None and s.buf.scope == "global":
            keep = tuple(x for c in s.conds for x in _conjuncts(c) if not _guard_like(x, k))
            s = dataclasses.replace(s, conds=keep)
        sites.append(s)
    k2 = dataclasses.replace(k, sites=sites)
    findings, _ = bounds._accesses(k2, _ctx(k2), "global")
    return not findings


def _ctx(k):
    """A solver context with a short limit: this warning class must not cost a release its budget."""
    from . import solver
    ctx = solver.Ctx(k)
    ctx.rlimit = min(ctx.rlimit, QUICK_RLIMIT) if ctx.rlimit else QUICK_RLIMIT
    return ctx


__all__ = ["guarded_accesses", "CHECK"]
