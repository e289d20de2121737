"""Rewrite a lowered device PrimFunc, for IR-level mutations in the seeded-bug corpus.

A mutation returns a new device PrimFunc; `verify` then checks it exactly as it checks
any lowered kernel (the corpus uses this for low-level protocol bugs that TileLang's
front end would never emit: wrong mbarrier counts, wrong parity, a dropped fence...).
"""
from __future__ import annotations

import dataclasses

from .tir import op_name, tirx


def applied(lowered, fn):
    """The lowered kernel with fn applied to its device PrimFunc (its script printed again)."""
    dev = fn(lowered.device_func)
    return dataclasses.replace(lowered, device_func=dev, device_script=dev.script())


def _transform(func, postorder, kinds=("tirx.Call", "tirx.Evaluate", "tirx.Bind")):
    from tvm.tirx.stmt_functor import ir_transform
    body = ir_transform(func.body, None, postorder, list(kinds))
    return func.with_body(body)


def rewrite_call(func, op: str, fn, nth: int = 0):
    """Replace the nth call (in program order) of intrinsic `op` by fn(call)."""
    count = [0]
    target = _nth_index(func, op, nth)

    def post(node):
        if isinstance(node, tirx.Call) and op_name(node) == op:
            i = count[0]
            count[0] += 1
            if i == target:
                return fn(node)
        return None
    return _transform(func, post, ["tirx.Call"])


def with_arg(call, i: int, value):
    """A copy of `call` whose argument i is `value`."""
    args = list(call.args)
    args[i] = value if isinstance(value, tirx.PrimExpr) else tirx.const(value, args[i].dtype)
    return tirx.Call(call.dtype, call.op, args)


def drop_call(func, op: str, nth: int = 0):
    """Remove the nth Evaluate(call to `op`) statement."""
    count = [0]
    target = _nth_index(func, op, nth)

    def post(node):
        if isinstance(node, tirx.Evaluate) and isinstance(node.value, tirx.Call) and op_name(node.value) == op:
            i = count[0]
            count[0] += 1
            if i == target:
                return tirx.Evaluate(tirx.const(0, "int32"))
        return None
    return _transform(func, post, ["tirx.Evaluate"])


def rebind(func, var_name: str, fn):
    """Replace the value bound to the variable named `var_name` by fn(old value)."""
    def post(node):
        if isinstance(node, tirx.Bind) and str(node.var.name) == var_name:
            return tirx.Bind(node.var, fn(node.value))
        return None
    return _transform(func, post, ["tirx.Bind"])


def rewrite_if(func, match, fn):
    """Replace the condition of every IfThenElse statement whose condition's text satisfies
    match(text) by fn(condition)."""
    def post(node):
        if isinstance(node, tirx.IfThenElse) and match(str(node.condition)):
            return tirx.IfThenElse(fn(node.condition), node.then_case, node.else_case)
        return None
    return _transform(func, post, ["tirx.IfThenElse"])


def set_attr(func, key: str, value):
    return func.with_attr(key, value)


def _nth_index(func, op, nth):
    """Index, in the traversal order of ir_transform, of the nth call in program order."""
    from tvm.tirx.stmt_functor import post_order_visit
    calls = []

    def v(n):
        if isinstance(n, tirx.Call) and op_name(n) == op:
            calls.append(n)
    post_order_visit(func.body, v)
    if nth < 0:
        nth += len(calls)
    if not 0 <= nth < len(calls):
        raise IndexError(f"{op}: no call #{nth} (found {len(calls)})")
    return nth
