"""TIR PrimExpr -> Z3 terms.

Integers are mathematical (z3 Int); overflow is a separate obligation recorded per
arithmetic node, so that `bounds` can prove "no wrap-around" and then reason about
the exact values. Memory loads become applications of uninterpreted functions that
the extractor supplies (`load_fn`); anything the encoding does not model becomes a
fresh, unconstrained symbol, which is a sound over-approximation.

`to_bv` rewrites an Int term into 64-bit bit-vectors for the bank-mapping check.
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional

import z3

from .tir import tirx, op_name

DTYPE_RANGE = {
    "bool": (0, 1),
    "int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1),
    "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1),
    "uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
}


def is_int_dtype(dt) -> bool:
    s = str(dt)
    return s in DTYPE_RANGE and s != "bool"


def is_bool_dtype(dt) -> bool:
    return str(dt) == "bool"


@dataclass
class Symbols:
    """All z3 symbols created for one kernel, with their roles.

    role: 'shape' (kernel-wide), 'block' (one per CTA), 'thread', 'loop', 'unknown'
    (per executing thread: duplicated in two-thread encodings).
    """
    role: dict = field(default_factory=dict)        # symbol name -> role
    uf_info: dict = field(default_factory=dict)     # uf name -> (dtype, scope)
    monotone: dict = field(default_factory=dict)    # uf name -> (first value, length term, last value)
    counter: itertools.count = field(default_factory=itertools.count)
    pretty: dict = field(default_factory=dict)      # symbol name -> human name

    def int_sym(self, name: str, role: str, pretty: Optional[str] = None) -> z3.ArithRef:
        self.role[name] = role
        self.pretty[name] = pretty or name
        return z3.Int(name)

    def fresh(self, hint: str, sort: str = "int", role: str = "unknown"):
        name = f"?{hint}#{next(self.counter)}"
        self.role[name] = role
        self.pretty[name] = hint
        return z3.Bool(name) if sort == "bool" else z3.Int(name)

    def uf(self, name: str, arity: int, dtype: str, scope: str):
        self.uf_info[name] = (dtype, scope)
        return z3.Function(name, *([z3.IntSort()] * arity), z3.IntSort())


class Translator:
    """Translate TIR expressions over a variable environment into z3 terms."""

    def __init__(self, syms: Symbols, env: dict, load_fn: Callable, elect_fn: Callable):
        self.syms = syms
        self.env = env                  # tirx.Var -> z3 term
        self.load_fn = load_fn          # BufferLoad -> z3 term | None
        self.elect_fn = elect_fn        # tl_shuffle_elect(n) -> z3 Bool
        self.obligations = None         # list of (term, dtype, text) when collecting
        self.guards = []                # conditions under which the current subexpression runs
        self.ptr_fn = None              # tvm_access_ptr call -> None (records the access)
        self.free_fn = None             # free integer Var -> z3 term (shape variables by name)
        self.var_obligations = {}       # let-bound Var -> overflow obligations of its value
        self.addr_fn = None             # address_of call -> None (flags opaque pointers)
        self.call_fn = None             # Call -> term, or NotImplemented for the generic handling
        self.nonneg_vars = set()        # TIR variables known to be >= 0 (ids, loop indices, sizes)
        self.cur_call = None            # name of the opaque call whose arguments are being visited

    def collect(self):
        self.obligations = []
        return self

    def _oblige(self, term, dtype, node):
        if self.obligations is not None and is_int_dtype(dtype) and z3.is_arith(term):
            self.obligations.append((term, str(dtype), node))

    # -- entry points -------------------------------------------------------------
    def int(self, e) -> z3.ArithRef:
        t = self.expr(e)
        if z3.is_bool(t):
            return z3.If(t, z3.IntVal(1), z3.IntVal(0))
        return t

    def bool(self, e) -> z3.BoolRef:
        t = self.expr(e)
        if z3.is_bool(t):
            return t
        return t != 0

    def expr(self, e):
        if isinstance(e, int):
            return z3.IntVal(e)
        m = getattr(self, "_" + type(e).__name__, None)
        if m is None:
            return self._unknown(e)
        return m(e)

    def _unknown(self, e, hint="val"):
        dt = str(getattr(e, "dtype", "int32"))
        if is_bool_dtype(dt):
            return self.syms.fresh(hint, "bool")
        return self.syms.fresh(hint)

    # -- leaves ---------------------------------------------------------------------
    def _IntImm(self, e):
        if is_bool_dtype(e.dtype):
            return z3.BoolVal(bool(e.value))
        return z3.IntVal(int(e.value))

    def _FloatImm(self, e):
        return self._unknown(e, "float")

    def _StringImm(self, e):
        return self._unknown(e, "str")

    def _Var(self, e):
        if self.obligations is not None and e in self.var_obligations:
            self.obligations.extend(self.var_obligations[e])
        t = self.env.get(e)
        if t is None:
            if self.free_fn is not None and is_int_dtype(e.dtype):
                t = self.free_fn(e)
                if t is not None:
                    self.env[e] = t
                    return t
            return self._unknown(e, e.name)
        return t

    _SizeVar = _Var

    def _BufferLoad(self, e):
        if not (is_int_dtype(e.dtype) or is_bool_dtype(e.dtype)) or e.dtype.lanes != 1:
            self.load_fn(e)  # still record the access
            return self._unknown(e, "load")
        t = self.load_fn(e)
        if t is None:
            return self._unknown(e, "load")
        if is_bool_dtype(e.dtype) and not z3.is_bool(t):
            return t != 0
        return t

    # -- arithmetic -------------------------------------------------------------
    def _is_int(self, e) -> bool:
        return is_int_dtype(e.dtype) and e.dtype.lanes == 1

    def _binop(self, e, f):
        if not self._is_int(e):
            self.expr(e.a), self.expr(e.b)  # visit for loads
            return self._unknown(e)
        t = f(self.int(e.a), self.int(e.b))
        self._oblige(t, e.dtype, e)
        return t

    def _Add(self, e):
        return self._binop(e, lambda a, b: a + b)

    def _Sub(self, e):
        return self._binop(e, lambda a, b: a - b)

    def _Mul(self, e):
        return self._binop(e, lambda a, b: a * b)

    def _FloorDiv(self, e):
        return self._binop(e, floordiv)

    def _FloorMod(self, e):
        return self._binop(e, floormod)

    def _Div(self, e):
        # truncated division is floor division when the dividend is >= 0 and the divisor > 0
        return self._binop(e, floordiv if self._sign(e.a) >= 0 and self._sign(e.b) > 0 else truncdiv)

    def _Mod(self, e):
        return self._binop(e, floormod if self._sign(e.a) >= 0 and self._sign(e.b) > 0 else truncmod)

    def _sign(self, e):
        """1: provably > 0, 0: provably >= 0, -1: unknown (syntactic, from nonneg_vars)."""
        if isinstance(e, tirx.IntImm):
            v = int(e.value)
            return 1 if v > 0 else (0 if v == 0 else -1)
        if isinstance(e, (tirx.Var, tirx.SizeVar)):
            return 0 if e in self.nonneg_vars else -1
        if isinstance(e, (tirx.Add, tirx.Mul)):
            a, b = self._sign(e.a), self._sign(e.b)
            if a < 0 or b < 0:
                return -1
            return max(a, b) if isinstance(e, tirx.Add) else min(a, b)
        if isinstance(e, (tirx.FloorDiv, tirx.FloorMod)):
            return 0 if self._sign(e.a) >= 0 and self._sign(e.b) > 0 else -1
        if isinstance(e, tirx.Max):
            return max(self._sign(e.a), self._sign(e.b))
        if isinstance(e, tirx.Min):
            return min(self._sign(e.a), self._sign(e.b))
        if isinstance(e, tirx.Cast) and is_int_dtype(e.dtype):
            return self._sign(e.value)
        if isinstance(e, (tirx.Div, tirx.Mod)):
            return 0 if self._sign(e.a) >= 0 and self._sign(e.b) > 0 else -1
        return -1

    def _Min(self, e):
        if not self._is_int(e):
            self.expr(e.a), self.expr(e.b)
            return self._unknown(e)
        a, b = self.int(e.a), self.int(e.b)
        return z3.If(a <= b, a, b)

    def _Max(self, e):
        if not self._is_int(e):
            self.expr(e.a), self.expr(e.b)
            return self._unknown(e)
        a, b = self.int(e.a), self.int(e.b)
        return z3.If(a >= b, a, b)

    def _cmp(self, e, f):
        if not (is_int_dtype(e.a.dtype) or is_bool_dtype(e.a.dtype)) or e.a.dtype.lanes != 1:
            self.expr(e.a), self.expr(e.b)
            return self._unknown(e, "fcmp")
        a, b = self.expr(e.a), self.expr(e.b)
        if z3.is_bool(a) != z3.is_bool(b):
            a = z3.If(a, 1, 0) if z3.is_bool(a) else a
            b = z3.If(b, 1, 0) if z3.is_bool(b) else b
        return f(a, b)

    def _EQ(self, e):
        return self._cmp(e, lambda a, b: a == b)

    def _NE(self, e):
        return self._cmp(e, lambda a, b: a != b)

    def _LT(self, e):
        return self._cmp(e, lambda a, b: a < b)

    def _LE(self, e):
        return self._cmp(e, lambda a, b: a <= b)

    def _GT(self, e):
        return self._cmp(e, lambda a, b: a > b)

    def _GE(self, e):
        return self._cmp(e, lambda a, b: a >= b)

    def _guarded(self, g, e, as_bool=False):
        self.guards.append(g)
        try:
            return self.bool(e) if as_bool else self.expr(e)
        finally:
            self.guards.pop()

    def _And(self, e):
        if e.dtype.lanes != 1:
            self.expr(e.a), self.expr(e.b)
            return self._unknown(e)
        a = self.bool(e.a)
        return z3.And(a, self._guarded(a, e.b, True))  # C's && short-circuits

    def _Or(self, e):
        if e.dtype.lanes != 1:
            self.expr(e.a), self.expr(e.b)
            return self._unknown(e)
        a = self.bool(e.a)
        return z3.Or(a, self._guarded(z3.Not(a), e.b, True))

    def _Not(self, e):
        if e.dtype.lanes != 1:
            self.expr(e.a)
            return self._unknown(e)
        return z3.Not(self.bool(e.a))

    def _Select(self, e):
        c = self.expr(e.condition) if e.condition.dtype.lanes == 1 else self._unknown(e.condition)
        t, f = self.expr(e.true_value), self.expr(e.false_value)
        if e.dtype.lanes != 1 or not (is_int_dtype(e.dtype) or is_bool_dtype(e.dtype)):
            return self._unknown(e)
        c = c if z3.is_bool(c) else c != 0
        return _ite(c, t, f)

    def _Cast(self, e):
        src = e.value.dtype
        v = self.expr(e.value)
        if e.dtype.lanes != 1:
            return self._unknown(e)
        if is_int_dtype(e.dtype):
            if is_bool_dtype(src):
                return z3.If(v, 1, 0) if z3.is_bool(v) else v
            if is_int_dtype(src):
                lo, hi = DTYPE_RANGE[str(e.dtype)]
                slo, shi = DTYPE_RANGE[str(src)]
                if lo > slo or hi < shi:
                    self._oblige(v, e.dtype, e)
                return v
            return self._unknown(e, "fcast")
        if is_bool_dtype(e.dtype):
            if z3.is_bool(v):
                return v
            if is_int_dtype(src):
                return v != 0
            return self._unknown(e, "fcast")
        return self._unknown(e)

    def _Let(self, e):
        self.env[e.var] = self.expr(e.value)
        return self.expr(e.body)

    def _Broadcast(self, e):
        return self.expr(e.value)

    def _Ramp(self, e):
        self.expr(e.base)
        return self._unknown(e, "ramp")

    def _Call(self, e):
        name = op_name(e)
        args = list(e.args)
        if name in ("tirx.if_then_else",):
            if args[0].dtype.lanes == 1:
                c = self.bool(args[0])
                t, f = self._guarded(c, args[1]), self._guarded(z3.Not(c), args[2])
            else:
                self.expr(args[0])
                c = self._unknown(args[0])
                t, f = self.expr(args[1]), self.expr(args[2])
            if e.dtype.lanes != 1 or not (is_int_dtype(e.dtype) or is_bool_dtype(e.dtype)):
                return self._unknown(e)
            return _ite(c, t, f)
        if name in ("tirx.likely",):
            return self.expr(args[0])
        if name == "tl.tl_shuffle_elect":
            n = args[0]
            return self.elect_fn(int(n.value) if isinstance(n, tirx.IntImm) else None)
        if name in ("tirx.shift_right", "tirx.shift_left", "tirx.bitwise_and", "tirx.bitwise_or",
                    "tirx.bitwise_xor", "tirx.bitwise_not") and self._is_int(e):
            vals = [self.int(a) for a in args]
            t = bitop(name.split(".")[1], vals, str(e.dtype))
            self._oblige(t, e.dtype, e)
            return t
        if name == "tirx.clz" and self._is_int(e) and len(args) == 1 and is_int_dtype(args[0].dtype):
            return clz(self.int(args[0]), int(args[0].dtype.bits))
        if name == "tirx.tvm_access_ptr":
            if self.ptr_fn is not None:
                self.ptr_fn(e)
            return self._unknown(e, "ptr")
        if name == "tirx.address_of":
            if self.addr_fn is not None:
                self.addr_fn(e)
            return self._unknown(e, "ptr")
        if self.call_fn is not None:
            r = self.call_fn(e)
            if r is not NotImplemented:
                return r
        prev = self.cur_call
        self.cur_call = str(args[0].value) if name == "tirx.call_extern" and args \
            and isinstance(args[0], tirx.StringImm) else name
        try:
            for a in args:
                if isinstance(a, tirx.PrimExpr):
                    self.expr(a)
        finally:
            self.cur_call = prev
        return self._unknown(e, name.split(".")[-1])


def _ite(c, t, f):
    if z3.is_bool(t) != z3.is_bool(f):
        t = z3.If(t, 1, 0) if z3.is_bool(t) else t
        f = z3.If(f, 1, 0) if z3.is_bool(f) else f
    return z3.If(c, t, f)


def _const(t) -> Optional[int]:
    t = z3.simplify(t)
    return t.as_long() if z3.is_int_value(t) else None


def floordiv(a, b):
    c = _const(b)
    if c is not None:
        if c > 0:
            return a / b  # z3 Int division is Euclidean: floor for positive divisors
        if c < 0:
            return (-a) / (-b)
    return z3.If(b > 0, a / b, (-a) / (-b))


def floormod(a, b):
    c = _const(b)
    if c is not None and c > 0:
        return a % b  # Euclidean remainder: the floor remainder for positive divisors
    return a - b * floordiv(a, b)


def truncdiv(a, b):
    q = floordiv(a, b)
    # floor and truncation differ when the quotient is negative and inexact
    return z3.If(z3.And((a < 0) != (b < 0), a != b * q), q + 1, q)


def truncmod(a, b):
    return a - b * truncdiv(a, b)


def clz(x, width):
    """Leading zeros of the width-bit two's complement x: 0 for x < 0, width for x = 0, and
    width - k for 2^(k-1) <= x < 2^k (a chain of linear comparisons, no bit-vectors)."""
    r = z3.IntVal(0)
    for k in range(width - 1, 0, -1):
        r = z3.If(x < 2**k, width - k, r)
    return z3.If(x < 0, 0, z3.If(x == 0, width, r))


def bitop(name, vals, dtype):
    if name == "shift_right":
        c = _const(vals[1])
        if c is not None:
            return floordiv(vals[0], z3.IntVal(2**c))
    if name == "shift_left":
        c = _const(vals[1])
        if c is not None:
            return vals[0] * 2**c
    if name == "bitwise_and":
        for x, y in ((vals[0], vals[1]), (vals[1], vals[0])):
            c = _const(y)
            if c is not None and c >= 0 and (c + 1) & c == 0:
                return floormod(x, z3.IntVal(c + 1))
    if name in ("bitwise_xor", "bitwise_or") and len(vals) == 2:
        # with a small non-negative constant: bit by bit, in integer arithmetic (exact for
        # every integer in two's complement: bit j of x is floor(x / 2^j) mod 2)
        for x, y in ((vals[0], vals[1]), (vals[1], vals[0])):
            c = _const(y)
            if c is not None and 0 <= c < 2**16 and bin(c).count("1") <= 4:
                r = x
                for j in range(c.bit_length()):
                    if c >> j & 1:
                        bit = floormod(floordiv(x, z3.IntVal(2**j)), z3.IntVal(2))
                        r = r + (2**j - 2 * 2**j * bit if name == "bitwise_xor" else 2**j * (1 - bit))
                return r
    width = 64
    bvs = [z3.Int2BV(v, width) for v in vals]
    if name == "bitwise_and":
        r = bvs[0] & bvs[1]
    elif name == "bitwise_or":
        r = bvs[0] | bvs[1]
    elif name == "bitwise_xor":
        r = bvs[0] ^ bvs[1]
    elif name == "bitwise_not":
        r = ~bvs[0]
    elif name == "shift_right":
        r = bvs[0] >> bvs[1]
    else:
        r = bvs[0] << bvs[1]
    return _signed(r, width)


def _signed(bv, width):
    u = z3.BV2Int(bv)
    return z3.If(u >= 2**(width - 1), u - 2**width, u)


# -- Int -> BitVec (bank mapping) --------------------------------------------------

class ToBV:
    """Rewrite a quantifier-free Int/Bool formula into 64-bit bit-vectors.

    Sound for values that fit in 64 bits; division and modulo keep floor semantics.
    """
    W = 64

    def __init__(self):
        self.cache = {}
        self.funcs = {}

    def __call__(self, t):
        key = t.get_id()
        hit = self.cache.get(key)
        if hit is not None and hit[0].eq(t):
            return hit[1]
        r = self._conv(t)
        self.cache[key] = (t, r)
        return r

    def _conv(self, t):
        W = self.W
        if z3.is_int_value(t):
            return z3.BitVecVal(t.as_long(), W)
        if z3.is_true(t) or z3.is_false(t):
            return t
        if z3.is_const(t):
            if z3.is_bool(t):
                return t
            return z3.BitVec(t.decl().name(), W)
        k = t.decl().kind()
        if k == z3.Z3_OP_INT2BV:
            return self(t.children()[0])
        if k == z3.Z3_OP_BV2INT:
            return self(t.children()[0])
        ch = [self(c) for c in t.children()]
        if z3.is_bv(t):
            return t.decl()(*ch)
        if k == z3.Z3_OP_ADD:
            r = ch[0]
            for c in ch[1:]:
                r = r + c
            return r
        if k == z3.Z3_OP_SUB:
            r = ch[0]
            for c in ch[1:]:
                r = r - c
            return r
        if k == z3.Z3_OP_UMINUS:
            return -ch[0]
        if k == z3.Z3_OP_MUL:
            r = ch[0]
            for c in ch[1:]:
                r = r * c
            return r
        if k in (z3.Z3_OP_IDIV, z3.Z3_OP_DIV):
            return self._floordiv(ch[0], ch[1])
        if k == z3.Z3_OP_MOD:
            return ch[0] - ch[1] * self._floordiv(ch[0], ch[1])
        if k == z3.Z3_OP_ITE:
            return z3.If(ch[0], ch[1], ch[2])
        if k == z3.Z3_OP_LE:
            return ch[0] <= ch[1]
        if k == z3.Z3_OP_LT:
            return ch[0] < ch[1]
        if k == z3.Z3_OP_GE:
            return ch[0] >= ch[1]
        if k == z3.Z3_OP_GT:
            return ch[0] > ch[1]
        if k == z3.Z3_OP_EQ:
            return ch[0] == ch[1]
        if k == z3.Z3_OP_DISTINCT:
            return z3.Distinct(*ch)
        if k == z3.Z3_OP_AND:
            return z3.And(*ch)
        if k == z3.Z3_OP_OR:
            return z3.Or(*ch)
        if k == z3.Z3_OP_NOT:
            return z3.Not(ch[0])
        if k == z3.Z3_OP_IMPLIES:
            return z3.Implies(ch[0], ch[1])
        if k == z3.Z3_OP_UNINTERPRETED:
            name = t.decl().name()
            f = self.funcs.get(name)
            if f is None:
                f = z3.Function(name + "!bv", *([z3.BitVecSort(W)] * len(ch)), z3.BitVecSort(W))
                self.funcs[name] = f
            return f(*ch)
        raise NotImplementedError(f"bit-vector rewrite of {t.decl().name()}")

    def _floordiv(self, a, b):
        bc = z3.simplify(b)
        if z3.is_bv_value(bc):
            v = bc.as_signed_long()
            if v > 0 and v & (v - 1) == 0:
                return a >> (v.bit_length() - 1)
        q = a / b  # signed, truncating
        return z3.If(z3.And(z3.URem(a, b) != 0, (a < 0) != (b < 0)), q - 1, q)


# -- preconditions --------------------------------------------------------------------

def eval_condition(text: str, names: dict):
    """Evaluate a python-expression precondition over z3 Int shape variables."""
    return _PyToZ3(names).visit(ast.parse(text, mode="eval").body)


class _PyToZ3(ast.NodeVisitor):
    def __init__(self, names):
        self.names = names

    def generic_visit(self, node):
        raise ValueError(f"unsupported precondition syntax: {ast.dump(node)}")

    def visit_Constant(self, node):
        if isinstance(node.value, bool):
            return z3.BoolVal(node.value)
        if isinstance(node.value, int):
            return z3.IntVal(node.value)
        raise ValueError(f"unsupported constant {node.value!r}")

    def visit_Name(self, node):
        if node.id not in self.names:
            raise KeyError(node.id)
        return self.names[node.id]

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.Not):
            return z3.Not(v)
        return v

    def visit_BinOp(self, node):
        a, b = self.visit(node.left), self.visit(node.right)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.FloorDiv):
            return floordiv(a, b)
        if isinstance(op, ast.Mod):
            return floormod(a, b)
        if isinstance(op, ast.Pow):
            ca, cb = _const(a), _const(b)
            if ca is None or cb is None:
                raise ValueError("only constant powers are supported")
            return z3.IntVal(ca ** cb)
        raise ValueError(f"unsupported operator {type(op).__name__}")

    def visit_BoolOp(self, node):
        vals = [self.visit(v) for v in node.values]
        return z3.And(*vals) if isinstance(node.op, ast.And) else z3.Or(*vals)

    def visit_Compare(self, node):
        terms = [self.visit(node.left)] + [self.visit(c) for c in node.comparators]
        out = []
        for (a, b), op in zip(zip(terms, terms[1:]), node.ops):
            out.append({ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b,
                        ast.Eq: a == b, ast.NotEq: a != b}[type(op)])
        return z3.And(*out) if len(out) > 1 else out[0]

    def visit_Call(self, node):
        fn = node.func.id if isinstance(node.func, ast.Name) else None
        args = [self.visit(a) for a in node.args]
        if fn == "min":
            r = args[0]
            for x in args[1:]:
                r = z3.If(x < r, x, r)
            return r
        if fn == "max":
            r = args[0]
            for x in args[1:]:
                r = z3.If(x > r, x, r)
            return r
        raise ValueError(f"unsupported call {fn}")


def has_uninterpreted_app(t) -> bool:
    """True when `t` applies an uninterpreted function (a modelled memory read, for example)."""
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_app(x) and x.num_args() > 0 and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            return True
        stack.extend(x.children())
    return False


def subterms(term, seen, prune=None):
    """Each subterm of `term` whose id is not in `seen` (which it fills), outside quantifiers and
    below no subterm for which `prune` holds (that one is yielded, its children are not)."""
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
        if prune is None or not prune(t):
            stack.extend(t.children())


def reads_memory(t, uf_info) -> bool:
    """Whether `t` is a read of a buffer's value (verify.extract names them in `uf_info`; their
    scope is global or shared)."""
    if not (z3.is_app(t) and t.num_args() > 0 and t.decl().kind() == z3.Z3_OP_UNINTERPRETED):
        return False
    info = uf_info.get(t.decl().name())
    return info is not None and info[1] in ("global", "shared")


class BodyNames:
    """One uninterpreted function for each term body, up to the renaming of its arguments: a term
    over arguments (a1, ...) is named f(a1, ...), f the function of the term with the arguments
    replaced by holes, so the same body over other arguments (another thread's, another loop
    index's) is the same function. `name(t, args)` returns (application, function name, body,
    holes, whether the function is new)."""

    def __init__(self, prefix, simplify=False):
        self.prefix, self.simplify = prefix, simplify
        self.bodies = {}

    def name(self, t, args):
        holes = [z3.Int(f"{self.prefix}.arg{i}") for i in range(len(args))]
        body = z3.substitute(t, *zip(args, holes)) if args else t
        if self.simplify:
            body = z3.simplify(body)
        hit = self.bodies.get(body.get_id())
        fresh = hit is None or not hit[0].eq(body)
        if fresh:
            name = f"{self.prefix}#{len(self.bodies)}"
            f = z3.Function(name, *([z3.IntSort()] * len(args)), z3.IntSort()) if args else z3.Int(name)
            hit = self.bodies[body.get_id()] = (body, f, name)
        _, f, name = hit
        return (f(*args) if args else f), name, body, holes, fresh


_consts_cache: dict = {}


def consts_of(t) -> dict:
    """Name -> constant for every uninterpreted constant in `t` (cached per term)."""
    hit = _consts_cache.get(t.get_id())
    if hit is not None and hit[0].eq(t):
        return hit[1]
    acc = {}
    for x in subterms(t, set()):
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            acc[x.decl().name()] = x
    if len(_consts_cache) > 200000:
        _consts_cache.clear()
    _consts_cache[t.get_id()] = (t, acc)
    return acc
