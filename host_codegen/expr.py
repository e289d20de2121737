"""A small integer-expression language shared by the IR reader and the code generators.

An expression is a nested tuple: ("int", 16), ("float", 0.5), ("var", "NC"),
(op, a, b) for op in ADD/SUB/MUL/FLOORDIV/FLOORMOD/MIN/MAX/POW, comparisons
(EQ NE LT LE GT GE), ("and", a, b), ("or", a, b), ("not", a), ("neg", a).
Tuples are hashable and print deterministically, so specs built from them can be
hashed and compared. TIR PrimExprs and the Python-expression strings of a config's
preconditions both convert into this form; it renders back to Python and to C++.
"""
from __future__ import annotations

import ast

BINOPS = ("add", "sub", "mul", "floordiv", "floormod", "min", "max", "pow")
CMPOPS = ("eq", "ne", "lt", "le", "gt", "ge")

_PY_SYM = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "pow": "**",
           "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_C_SYM = {"add": "+", "sub": "-", "mul": "*", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
          "gt": ">", "ge": ">="}


class UnsupportedExpr(ValueError):
    pass


def from_tir(e) -> tuple:
    """Convert a TIR PrimExpr over shape variables (and integer constants) to an Expr."""
    from tilelang import tvm
    from tvm import tirx

    if isinstance(e, int):
        return ("int", int(e))
    if isinstance(e, tirx.IntImm):
        return ("int", int(e.value))
    if isinstance(e, tirx.FloatImm):
        return ("float", float(e.value))
    if isinstance(e, tirx.Var):
        return ("var", e.name)
    if isinstance(e, tirx.Cast):
        # Integer widening/narrowing casts of shape arithmetic: the generated code works in
        # int64 throughout and the preconditions keep every value inside int32.
        if not (str(e.dtype).startswith("int") or str(e.dtype).startswith("uint")):
            raise UnsupportedExpr(f"non-integer cast {e}")
        return from_tir(e.value)
    table = {tirx.Add: "add", tirx.Sub: "sub", tirx.Mul: "mul", tirx.FloorDiv: "floordiv",
             tirx.FloorMod: "floormod", tirx.Min: "min", tirx.Max: "max", tirx.EQ: "eq",
             tirx.NE: "ne", tirx.LT: "lt", tirx.LE: "le", tirx.GT: "gt", tirx.GE: "ge",
             tirx.And: "and", tirx.Or: "or"}
    for cls, op in table.items():
        if isinstance(e, cls):
            return (op, from_tir(e.a), from_tir(e.b))
    if isinstance(e, (tirx.Div, tirx.Mod)):
        # Truncating division on shape arithmetic, which is never negative here.
        op = "floordiv" if isinstance(e, tirx.Div) else "floormod"
        return (op, from_tir(e.a), from_tir(e.b))
    raise UnsupportedExpr(f"cannot convert TIR expression {e!r} ({type(e).__name__})")


def from_py(src: str) -> tuple:
    """Parse a Python expression string (a config precondition) into an Expr."""
    return _from_ast(ast.parse(src, mode="eval").body)


def _from_ast(n) -> tuple:
    if isinstance(n, ast.Constant):
        if isinstance(n.value, bool):
            return ("int", int(n.value))
        if isinstance(n.value, int):
            return ("int", n.value)
        if isinstance(n.value, float):
            return ("float", n.value)
    if isinstance(n, ast.Name):
        return ("var", n.id)
    if isinstance(n, ast.BinOp):
        ops = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv",
               ast.Mod: "floormod", ast.Pow: "pow"}
        for cls, op in ops.items():
            if isinstance(n.op, cls):
                return (op, _from_ast(n.left), _from_ast(n.right))
    if isinstance(n, ast.UnaryOp):
        if isinstance(n.op, ast.USub):
            inner = _from_ast(n.operand)
            if inner[0] in ("int", "float"):
                return (inner[0], -inner[1])
            return ("neg", inner)
        if isinstance(n.op, ast.Not):
            return ("not", _from_ast(n.operand))
    if isinstance(n, ast.BoolOp):
        op = "and" if isinstance(n.op, ast.And) else "or"
        out = _from_ast(n.values[0])
        for v in n.values[1:]:
            out = (op, out, _from_ast(v))
        return out
    if isinstance(n, ast.Compare):
        ops = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
        parts, left = [], _from_ast(n.left)
        for op, right in zip(n.ops, n.comparators):
            r = _from_ast(right)
            parts.append((ops[type(op)], left, r))
            left = r
        out = parts[0]
        for p in parts[1:]:
            out = ("and", out, p)
        return out
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("min", "max") \
            and len(n.args) == 2:
        return (n.func.id, _from_ast(n.args[0]), _from_ast(n.args[1]))
    raise UnsupportedExpr(f"unsupported precondition syntax: {ast.dump(n)}")


def free_vars(e: tuple) -> list[str]:
    out: list[str] = []

    def walk(x):
        if x[0] == "var":
            if x[1] not in out:
                out.append(x[1])
        elif x[0] not in ("int", "float"):
            for a in x[1:]:
                walk(a)
    walk(e)
    return out


def evaluate(e: tuple, env: dict):
    k = e[0]
    if k in ("int", "float"):
        return e[1]
    if k == "var":
        return env[e[1]]
    if k == "neg":
        return -evaluate(e[1], env)
    if k == "not":
        return not evaluate(e[1], env)
    a = evaluate(e[1], env)
    if k == "and":
        return a and evaluate(e[2], env)
    if k == "or":
        return a or evaluate(e[2], env)
    b = evaluate(e[2], env)
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "floordiv": lambda: a // b, "floormod": lambda: a % b, "min": lambda: min(a, b),
            "max": lambda: max(a, b), "pow": lambda: a ** b, "eq": lambda: a == b,
            "ne": lambda: a != b, "lt": lambda: a < b, "le": lambda: a <= b,
            "gt": lambda: a > b, "ge": lambda: a >= b}[k]()


def simplify(e: tuple) -> tuple:
    """Fold constant subexpressions (keeps generated code short and stable)."""
    k = e[0]
    if k in ("int", "float", "var"):
        return e
    args = tuple(simplify(a) for a in e[1:])
    if all(a[0] in ("int", "float") for a in args):
        v = evaluate((k,) + args, {})
        if isinstance(v, bool):
            return ("int", int(v))
        return ("float", v) if isinstance(v, float) else ("int", v)
    if k == "mul" and ("int", 1) in args:
        return args[1] if args[0] == ("int", 1) else args[0]
    return (k,) + args


def to_py(e: tuple, name=lambda v: v) -> str:
    k = e[0]
    if k == "int":
        return str(e[1])
    if k == "float":
        return repr(e[1])
    if k == "var":
        return name(e[1])
    if k == "neg":
        return f"(-{to_py(e[1], name)})"
    if k == "not":
        return f"(not {to_py(e[1], name)})"
    if k in ("min", "max"):
        return f"{k}({to_py(e[1], name)}, {to_py(e[2], name)})"
    if k in ("and", "or"):
        return f"({to_py(e[1], name)} {k} {to_py(e[2], name)})"
    return f"({to_py(e[1], name)} {_PY_SYM[k]} {to_py(e[2], name)})"


def to_text(e: tuple) -> str:
    """Human-readable form for error messages: Python syntax without outer parentheses."""
    s = to_py(e)
    return s[1:-1] if s.startswith("(") and s.endswith(")") and _balanced(s[1:-1]) else s


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def to_c(e: tuple, name=lambda v: v) -> str:
    """C++ rendering; integer arithmetic in int64_t. floordiv/floormod use helpers that are
    exact for the non-negative operands shape arithmetic has, and correct for negatives."""
    k = e[0]
    if k == "int":
        return f"int64_t({e[1]})"
    if k == "float":
        return repr(float(e[1]))
    if k == "var":
        return name(e[1])
    if k == "neg":
        return f"(-{to_c(e[1], name)})"
    if k == "not":
        return f"(!{to_c(e[1], name)})"
    if k == "and":
        return f"({to_c(e[1], name)} && {to_c(e[2], name)})"
    if k == "or":
        return f"({to_c(e[1], name)} || {to_c(e[2], name)})"
    if k == "floordiv":
        return f"kda_floordiv({to_c(e[1], name)}, {to_c(e[2], name)})"
    if k == "floormod":
        return f"kda_floormod({to_c(e[1], name)}, {to_c(e[2], name)})"
    if k in ("min", "max"):
        return f"std::{k}<int64_t>({to_c(e[1], name)}, {to_c(e[2], name)})"
    if k == "pow":
        if e[1][0] == "int" and e[2][0] == "int" and e[2][1] >= 0:
            return f"int64_t({e[1][1] ** e[2][1]})"
        raise UnsupportedExpr("pow with non-constant operands")
    return f"({to_c(e[1], name)} {_C_SYM[k]} {to_c(e[2], name)})"
