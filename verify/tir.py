"""The bundled TVM's TIR namespace and small helpers over it."""
from __future__ import annotations

import re

from tilelang import tvm  # noqa: F401  (makes the bundled tvm importable)
from tvm import tirx  # noqa: E402


def op_name(call) -> str:
    """'tirx.if_then_else', 'tl.tma_load', ... for a Call node; '' when not an Op call."""
    op = getattr(call, "op", None)
    name = getattr(op, "name", None)
    return str(name) if name is not None else ""


def int_value(e):
    """Python int of an IntImm (or int), else None."""
    if isinstance(e, int):
        return e
    if isinstance(e, tirx.IntImm):
        return int(e.value)
    return None


_FREE_DECL = re.compile(r"^[A-Za-z_]\w* = T\.")


def short(node, limit: int | None = 160) -> str:
    """One-line text of an IR node, for reports (whole when limit is None)."""
    try:
        text = node.script() if hasattr(node, "script") else str(node)
    except Exception:  # some nodes cannot print standalone
        text = str(node)
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not ln.strip().startswith("#") and not _FREE_DECL.match(ln.strip())]
    text = " ".join(lines)
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."
