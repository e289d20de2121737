"""The argument checks of one entry, derived from its EntrySpec.

Both generators (Python, C++) render this same list, so the two entries enforce the same
rules with the same messages. Each rule is a small frozen record; the order is the order
in which the entry checks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import expr as X
from .spec import DTYPE_BYTES, EntrySpec, TensorParam


@dataclass(frozen=True)
class Presence:      # optional argument must be None / must be given
    arg: str
    required: bool   # True: must be a tensor; False: must be None
    why: str


@dataclass(frozen=True)
class IsTensor:
    arg: str


@dataclass(frozen=True)
class DType:
    arg: str
    dtype: str


@dataclass(frozen=True)
class NDim:
    arg: str
    ndim: int
    labels: str


@dataclass(frozen=True)
class Device:
    arg: str
    ref: Optional[str]   # None: this is the reference tensor (must be on the expected device type)


@dataclass(frozen=True)
class Bind:          # shape variable taken from a dimension
    arg: str
    dim: int
    var: str


@dataclass(frozen=True)
class Dim:           # dimension must equal an expression of bound variables
    arg: str
    dim: int
    expr: tuple
    note: str        # "(K)", "(T, from q.shape[1])", ...


@dataclass(frozen=True)
class Derive:
    var: str
    expr: tuple


@dataclass(frozen=True)
class Pre:           # shape precondition
    src: str
    expr: tuple
    vars: tuple
    arg: str         # argument the message names
    when: str        # "" or " when cu_seqlens is given"


@dataclass(frozen=True)
class Stride:
    arg: str
    dim: int
    expr: tuple


@dataclass(frozen=True)
class Align:
    arg: str
    nbytes: int
    why: str


@dataclass(frozen=True)
class NoAlias:
    out: str
    other: str
    why: str = "outputs must not alias inputs"


@dataclass(frozen=True)
class Scalar:
    arg: str


@dataclass(frozen=True)
class ScalarPre:
    arg: str
    src: str
    expr: tuple


@dataclass(frozen=True)
class Contents:      # validate="full" only: the index buffer's values (one host copy, one sync)
    arg: str         # "cu_seqlens" or "state_indices"
    length: str      # its length variable
    bound: str       # T for cu_seqlens, P for state_indices


def build_rules(spec: EntrySpec) -> list:
    rules: list = []
    contract = spec.contract
    present = {p.name: p for p in spec.inputs}
    outputs = {p.name: p for p in spec.outputs}
    cfg_desc = " + ".join(ks.build_name for ks in spec.kernels)

    def _labels(name: str, n: int) -> tuple:
        lab = contract.labels(name)
        return lab if lab is not None and len(lab) == n else tuple("?" * n)

    # Presence of optional inputs; every contract argument the IR lacks must be None.
    for name in contract.args:
        if name in present:
            if name in contract.optional:
                rules.append(Presence(name, True, f"this build ({cfg_desc}) reads {name}"))
        else:
            rules.append(Presence(name, False, f"this build ({cfg_desc}) takes no {name}"))
    for name, phrase in contract.no_output:
        if name not in outputs:
            rules.append(Presence(name, False, f"this build ({cfg_desc}) writes no {phrase}"))

    tensors: list[TensorParam] = list(spec.inputs)
    for p in tensors:
        rules.append(IsTensor(p.name))
        rules.append(DType(p.name, p.dtype))
        labels = _labels(p.name, len(p.shape))
        rules.append(NDim(p.name, len(p.shape), "[" + ", ".join(labels) + "]"))
    ref = tensors[0].name
    for p in tensors:
        rules.append(Device(p.name, None if p.name == ref else ref))

    bound: dict[str, str] = {}
    for p in tensors:
        labels = _labels(p.name, len(p.shape))
        for i, e in enumerate(p.shape):
            if e[0] == "var" and e[1] not in bound:
                bound[e[1]] = f"{p.name}.shape[{i}]"
                rules.append(Bind(p.name, i, e[1]))
                continue
            missing = [v for v in X.free_vars(e) if v not in bound]
            if missing:
                raise ValueError(f"{p.name}.shape[{i}] = {X.to_text(e)} uses {missing} before any input fixes it")
            if e[0] == "int":
                note = f"({labels[i]})"
            elif e[0] == "var":
                note = f"({labels[i]}, from {bound[e[1]]})"
            else:
                text = X.to_text(e)
                note = f"({labels[i]} = {text})" if labels[i] != text else f"({text})"
            rules.append(Dim(p.name, i, e, note))

    for var, e in spec.derived_vars:
        missing = [v for v in X.free_vars(e) if v not in bound]
        if missing:
            raise ValueError(f"derived {var} = {X.to_text(e)} uses unbound {missing}")
        rules.append(Derive(var, e))
        bound[var] = "derived"
    derived_defs = {(v, X.to_text(e)) for v, e in spec.derived_vars}

    for src, e, varlen_only in spec.preconditions:
        if e[0] == "eq" and e[1][0] == "var" and (e[1][1], X.to_text(e[2])) in derived_defs:
            continue  # the definition of a derived variable holds by construction
        vs = tuple(X.free_vars(e))
        if varlen_only:
            arg, when = "cu_seqlens", " when cu_seqlens is given"
        else:
            first = bound[vs[0]] if vs else "shapes"
            arg, when = first.split(".")[0] if first != "derived" else "shapes", ""
        rules.append(Pre(src, e, vs, arg, when))

    for p in tensors:
        for i, e in enumerate(p.strides):
            rules.append(Stride(p.name, i, e))
    for p in tensors:
        if p.align > DTYPE_BYTES[p.dtype]:
            why = "TMA" if p.tma else f"{p.vec_bytes}-byte vector access"
            rules.append(Align(p.name, p.align, why))

    # Caller-provided outputs get the same checks, plus no overlap with any input or each other.
    for p in spec.outputs:
        rules.append(IsTensor(p.name))
        rules.append(DType(p.name, p.dtype))
        rules.append(NDim(p.name, len(p.shape), "[" + ", ".join(_labels(p.name, len(p.shape))) + "]"))
        rules.append(Device(p.name, ref))
        labels = _labels(p.name, len(p.shape))
        for i, e in enumerate(p.shape):
            if e[0] == "int":
                note = f"({labels[i]})"
            elif e[0] == "var":
                note = f"({labels[i]}, from {bound[e[1]]})"
            else:
                text = X.to_text(e)
                note = f"({labels[i]} = {text})" if labels[i] != text else f"({text})"
            rules.append(Dim(p.name, i, e, note))
        for i, e in enumerate(p.strides):
            rules.append(Stride(p.name, i, e))
        if p.align > DTYPE_BYTES[p.dtype]:
            rules.append(Align(p.name, p.align, "TMA" if p.tma else f"{p.vec_bytes}-byte vector access"))
    outs = [p.name for p in spec.outputs]
    for j, o in enumerate(outs):
        for p in tensors:
            rules.append(NoAlias(o, p.name))
        for o2 in outs[:j]:
            rules.append(NoAlias(o, o2))
    # A tensor the kernel updates in place overlaps no other argument (outputs are covered above).
    for name in contract.inplace:
        for p in tensors:
            if p.name != name:
                rules.append(NoAlias(name, p.name, f"{name} is updated in place"))

    for s in spec.scalars:
        rules.append(Scalar(s.name))
    for src, e in spec.scalar_preconditions:
        vs = X.free_vars(e)
        rules.append(ScalarPre(vs[0], src, e))
    if contract.contents == "cu_seqlens" and "cu_seqlens" in present:
        rules.append(Contents("cu_seqlens", "N1", "T"))
    elif contract.contents == "state_indices" and "state_indices" in present:
        rules.append(Contents("state_indices", "N", "P"))
    return rules
