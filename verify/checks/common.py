"""Helpers shared by the checks."""
from __future__ import annotations

import z3

from ..order import mentions  # noqa: F401  (re-exported for the checks)
from ..report import FAILED, UNKNOWN, Finding  # noqa: F401


def locate(kernel, text: str):
    """1-based line of `text`'s statement in the device IR script, best effort."""
    if not text:
        return None
    probe = text.split(" = T.if_then_else")[0][:50].strip()
    if len(probe) < 8:
        return None
    for i, line in enumerate(kernel.script_lines, 1):
        if probe in line:
            return i
    return None


def site_finding(kernel, ctx, check, site, message, model=None, formulas=(), status=FAILED, extra=None):
    cex = ctx.counterexample(model, formulas) if model is not None else None
    if cex is not None and extra:
        cex.update(extra)
    return Finding(check=check, status=status, message=message,
                   buffer=site.buf.name if site is not None and site.buf is not None else None,
                   access=site.text if site is not None else None,
                   line=locate(kernel, site.text) if site is not None else None,
                   counterexample=cex)


def definite_finding(kernel, ctx, check, site, message, model, formulas, why):
    """A satisfiable query of `check`: FAILED where the model is exact for it, else (`why`: the
    constructs or orderings outside the model it depends on) UNKNOWN with the same counterexample.
    An unknown is never upgraded to a failure."""
    if not why:
        return site_finding(kernel, ctx, check, site, message, model, formulas)
    f = unknown(check, f"{message}; not definite: {why}", site, kernel)
    f.counterexample = ctx.counterexample(model, formulas)
    return f


def unknown(check, message, site=None, kernel=None):
    return Finding(check=check, status=UNKNOWN, message=message,
                   buffer=site.buf.name if site is not None and site.buf is not None else None,
                   access=site.text if site is not None else None,
                   line=locate(kernel, site.text) if (site is not None and kernel is not None) else None)


def byte_range(site):
    """(first byte, byte count) of an access relative to its buffer."""
    eb = site.extra.get("elem_bytes", site.buf.elem_bytes)
    return site.index * eb, site.count * eb


def abs_range(site):
    """(first byte, byte count) inside the shared region the buffer lives in."""
    off, n = byte_range(site)
    return off + (site.buf.base_byte or 0), n


def simplify_int(t):
    t = z3.simplify(t)
    return t.as_long() if z3.is_int_value(t) else None
