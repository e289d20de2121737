"""Bounds: every global and shared access lies inside its buffer, for every shape that
satisfies the preconditions; index arithmetic never leaves its integer type; TMA
descriptors address only their tensor and each TMA box fits its shared destination."""
from __future__ import annotations

import time

import z3

from ..numeric import abstract_finite, finite_range
from ..report import FAILED, check_result
from ..z3expr import DTYPE_RANGE, Translator
from .common import byte_range, simplify_int, site_finding, unknown

CATEGORY = "bounds"
# Resource limit of the first, abstracted query of an access (about a second of Z3): its answer
# is only a shortcut, and when it is not UNSAT the precise query runs under the full limit.
ABSTRACT_RLIMIT = 2_000_000


def run(k, ctx, budget=None):
    out = []
    for scope in ("global", "shared"):
        t0 = time.perf_counter()
        findings, n = _accesses(k, ctx, scope)
        out.append(check_result(f"bounds.{scope}", CATEGORY, findings,
                                f"{n} {scope} accesses", time.perf_counter() - t0, {"accesses": n}))
    t0 = time.perf_counter()
    findings, n = _overflow(k, ctx)
    out.append(check_result("bounds.overflow", CATEGORY, findings, f"{n} index expressions",
                            time.perf_counter() - t0, {"obligations": n}))
    t0 = time.perf_counter()
    findings, n = _tma(k, ctx)
    out.append(check_result("bounds.tma", CATEGORY, findings, f"{n} TMA descriptors/boxes",
                            time.perf_counter() - t0, {"descriptors": n}))
    return out


def _accesses(k, ctx, scope):
    findings = []
    n = 0
    check = f"bounds.{scope}"
    for s in k.sites:
        if s.kind != "access" or s.buf is None or s.buf.scope != scope:
            continue
        if s.op in ("tma_load", "tma_store", "tma_store_box", "tma_load_box") and scope == "global":
            continue  # TMA reaches global memory through its descriptor: checked in bounds.tma
        n += 1
        if s.buf.size is None:
            findings.append(unknown(check, f"size of {s.buf.name} is not known", s, k))
            continue
        off, ln = byte_range(s)
        size = s.buf.size * s.buf.elem_bytes
        c_size, c_len = simplify_int(size), simplify_int(ln)
        if c_size is not None and c_len is not None:
            rng = finite_range(k, s, off)     # decided by enumerating every execution
            if rng == () or (rng is not None and rng[0] >= 0 and rng[1] + c_len <= c_size):
                continue
        ok = z3.And(off >= 0, off + ln <= size)
        fs = ctx.base([(s, "")])
        q = fs + [z3.Not(ok)]
        # first with the thread/unrolled-loop part of the offset abstracted to its range
        abs_off, facts = abstract_finite(k, s, off, k.syms)
        if abs_off is None:
            continue  # never executed
        res = None
        if facts:
            qa = fs + facts + [z3.Not(z3.And(abs_off >= 0, abs_off + ln <= size))]
            res, m = ctx.solve(qa + ctx.product_lemmas(qa),
                               rlimit=min(ctx.rlimit, ABSTRACT_RLIMIT) if ctx.rlimit else ABSTRACT_RLIMIT)
        if res != "unsat":
            res, m = ctx.solve(q + ctx.product_lemmas(q))
        if res == "sat":
            from ..solver import evaluate
            o, l_, sz = evaluate(m, off), evaluate(m, ln), evaluate(m, size)
            findings.append(site_finding(
                k, ctx, check, s,
                f"{s.op} of {s.buf.name} touches bytes [{o}, {o + l_}) outside [0, {sz})",
                m, fs + [off, ln, size]))
        elif res == "unknown":
            findings.append(unknown(check, f"solver could not decide ({m})", s, k))
    return findings, n


def _overflow(k, ctx):
    findings = []
    n = 0
    for s in k.sites:
        if s.kind != "access" or not s.obligations:
            continue
        obls = []
        n += len(s.obligations)
        for term, dtype, node in s.obligations:
            lo, hi = DTYPE_RANGE[dtype]
            rng = finite_range(k, s, term)
            if rng is not None and (rng == () or (lo <= rng[0] and rng[1] <= hi)):
                continue  # decided by enumeration
            obls.append((z3.And(term >= lo, term <= hi), term, dtype, node))
        if not obls:
            continue
        fs = ctx.base([(s, "")])
        q = fs + [z3.Or([z3.Not(o[0]) for o in obls])]
        res, m = ctx.solve(q + ctx.product_lemmas(q))
        if res == "sat":
            for ok, term, dtype, node in obls:
                if z3.is_false(m.eval(ok, model_completion=True)):
                    from ..solver import evaluate
                    findings.append(site_finding(
                        k, ctx, "bounds.overflow", s,
                        f"{dtype} arithmetic `{_node_text(node)}` reaches {evaluate(m, term)}",
                        m, fs + [term]))
                    break
        elif res == "unknown":
            findings.append(unknown("bounds.overflow", f"solver could not decide ({m})", s, k))
    return findings, n


def _node_text(node):
    try:
        return str(node)[:120]
    except Exception:
        return "?"


def _by_name_translator(k):
    """Translate host-side / source-level expressions, mapping variables to shape symbols by name."""
    class Env(dict):
        def get(self, var, default=None):
            name = str(getattr(var, "name", ""))
            return k.shape.get(name, default)
    return Translator(k.syms, Env(), lambda e: None, lambda n: z3.BoolVal(False))


def _tma(k, ctx):
    findings = []
    n = 0
    src = getattr(k, "source_buffers", {}) or {}
    tr = _by_name_translator(k)
    pre = ctx.shape_facts()
    for name, d in k.tma_descs.items():
        n += 1
        if d.kind != "tiled":
            findings.append(unknown("bounds.tma", f"TMA descriptor {name} of kind {d.kind}"))
            continue
        buf = src.get(d.tensor)
        if buf is None:
            findings.append(unknown("bounds.tma", f"tensor {d.tensor} of descriptor {name} not found"))
            continue
        elems = z3.IntVal(1)
        for x in buf.shape:
            elems = elems * tr.int(x)
        from ..extract import dtype_bytes
        eb = dtype_bytes(buf.dtype)
        dims = [tr.int(x) for x in d.global_dims]
        strides = [tr.int(x) for x in d.global_strides]
        # last byte reachable: sum over dims of (dim-1)*stride, innermost stride = element size
        reach = z3.IntVal(eb)
        for i, dim in enumerate(dims):
            step = z3.IntVal(eb) if i == 0 else strides[i]
            reach = reach + (dim - 1) * step
        ok = z3.Or(z3.Or([dim <= 0 for dim in dims]), reach <= elems * eb)
        res, m = ctx.solve(pre + [z3.Not(ok)])
        if res == "sat":
            from ..solver import evaluate
            findings.append(_desc_finding(k, ctx, name, d, m, pre,
                            f"descriptor reaches byte {evaluate(m, reach)} of tensor {d.tensor} "
                            f"with {evaluate(m, elems * eb)} bytes"))
        elif res == "unknown":
            findings.append(unknown("bounds.tma", f"descriptor {name}: solver could not decide ({m})"))
    for s in k.sites:
        if s.op not in ("tma_load", "tma_store"):
            continue
        d = s.extra.get("desc")
        if d is None or d.kind != "tiled":
            continue
        n += 1
        box = 1
        for b in d.box:
            box *= b
        from ..extract import dtype_bytes_from_code
        nbytes = box * dtype_bytes_from_code(d.dtype_code, d.global_strides[0])
        _, ln = byte_range(s)
        fs = ctx.base([(s, "")])
        res, m = ctx.solve(fs + [ln < nbytes])
        if res == "sat":
            findings.append(site_finding(k, ctx, "bounds.tma", s,
                                         f"TMA box of {nbytes} bytes exceeds its shared operand", m, fs))
        elif res == "unknown":
            findings.append(unknown("bounds.tma", f"solver could not decide ({m})", s, k))
    return findings, n


def _desc_finding(k, ctx, name, d, m, formulas, msg):
    from ..report import Finding
    return Finding(check="bounds.tma", status=FAILED, message=f"{name}: {msg}", buffer=d.tensor,
                   counterexample=ctx.counterexample(m, formulas))


__all__ = ["run"]


def any_contents(lowered, job):
    """bounds.any_contents: the bounds checks again with no assumption on the buffers declared
    monotone (cu_seqlens). The other checks take them as sorted offsets from 0 to T, which the
    API checks only with validate="full"; memory safety must not depend on it. Races and
    results under unsorted contents are outside the contract and not looked at."""
    from ..extract import extract
    from ..report import Finding
    from .. import solver
    t0 = time.perf_counter()
    k = extract(lowered, job.preconditions, job.derived, {}, name=job.name, distinct=job.distinct)
    findings = []
    for r in run(k, solver.Ctx(k)):
        findings += [Finding(check="bounds.any_contents", status=f.status,
                             message=f"with any {', '.join(sorted(job.monotone))} contents, {r.name}: {f.message}",
                             buffer=f.buffer, access=f.access, line=f.line, counterexample=f.counterexample)
                     for f in r.findings]
    return check_result("bounds.any_contents", CATEGORY, findings,
                        f"bounds with {', '.join(sorted(job.monotone))} unconstrained", time.perf_counter() - t0)
