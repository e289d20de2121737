"""Argument roles of the intrinsics the extractor models, per op and form.

TVM registers TileLang's intrinsics with an argument count only (often -1, variadic), so the
roles below are read off TileLang 0.1.15's CUDA code generator (src/cuda/codegen/codegen_cuda.cc,
which consumes them) and its Python wrappers. An op can have several forms (`tl.tma_load`:
tiled through a descriptor, or the 1-D bulk copy); a form is chosen by the argument count and
the kinds of its arguments. A call whose form is not listed is reported by op name (UNKNOWN),
never guessed.

`match(call)` returns (form name, {role: argument}) where a role ending in '*' collects the
variadic middle arguments as a list; or None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from .tir import op_name, tirx


def is_ptr(e) -> bool:
    """A pointer expression into a buffer (tvm_access_ptr, address_of, handle_add_byte_offset)."""
    return isinstance(e, tirx.Call) and op_name(e) in (
        "tirx.tvm_access_ptr", "tirx.address_of", "tirx.handle_add_byte_offset", "tl.access_ptr")


def is_desc(e) -> bool:
    """A TMA descriptor: a kernel parameter (grid_constant handle) or a loaded descriptor."""
    return isinstance(e, tirx.Var) or (isinstance(e, tirx.Call) and op_name(e) == "tirx.tvm_struct_get")


def is_mbar(e) -> bool:
    return isinstance(e, tirx.BufferLoad) or (isinstance(e, tirx.IntImm) and int(e.value) == 0) or is_ptr(e)


@dataclass
class Form:
    name: str
    roles: tuple                       # role names; one may end with '*' (variadic)
    when: Optional[Callable] = None    # extra test on the argument list
    nargs: Optional[int] = None        # exact count (None: len(roles), or >= fixed roles if variadic)
    notes: str = field(default="")

    def bind(self, args):
        star = [i for i, r in enumerate(self.roles) if r.endswith("*")]
        if star:
            i = star[0]
            fixed = len(self.roles) - 1
            if len(args) < fixed:
                return None
            tail = len(self.roles) - i - 1
            out = {r: args[j] for j, r in enumerate(self.roles[:i])}
            out[self.roles[i][:-1]] = list(args[i:len(args) - tail])
            for j, r in enumerate(self.roles[i + 1:]):
                out[r] = args[len(args) - tail + j]
        else:
            want = self.nargs if self.nargs is not None else len(self.roles)
            if len(args) != want:
                return None
            out = {r: args[j] for j, r in enumerate(self.roles)}
        if self.when is not None and not self.when(args):
            return None
        return out


_WGMMA_SS = ("shape", "a_kmajor", "b_kmajor", "a_dtype", "b_dtype", "c_dtype", "a_desc", "a_off",
             "b_desc", "b_off", "c", "c_off", "scale_out", "scale_a", "scale_b")
_WGMMA_RS = ("shape", "b_kmajor", "a_dtype", "b_dtype", "c_dtype", "a", "a_off", "b_desc", "b_off",
             "c", "c_off", "scale_out", "scale_a", "scale_b")

SIGNATURES = {
    "tl.ptx_wgmma_ss": [Form("ss", _WGMMA_SS)],
    "tl.ptx_wgmma_rs": [Form("rs", _WGMMA_RS)],
    # tiled: tl::tma_load(desc, mbar, smem, coord..., eviction); 1-D bulk copy (LowerBulk1D):
    # tl::tma_load(smem, gmem, mbar, bytes, eviction)
    "tl.tma_load": [
        Form("bulk", ("smem", "gmem", "mbar", "bytes", "eviction"), when=lambda a: is_ptr(a[0]) and is_ptr(a[1])),
        Form("tiled", ("desc", "mbar", "smem", "coords*", "eviction"),
             when=lambda a: is_desc(a[0]) and is_mbar(a[1]) and is_ptr(a[2])),
    ],
    "tl.tma_store": [
        Form("bulk", ("gmem", "smem", "bytes", "reduce", "eviction"), when=lambda a: is_ptr(a[0]) and is_ptr(a[1])),
        Form("tiled", ("desc", "smem", "coords*", "reduce", "eviction"), when=lambda a: is_desc(a[0]) and is_ptr(a[1])),
    ],
    "tl.ptx_ldmatrix": [Form("ldmatrix", ("trans", "num", "smem", "local"))],
    "tl.ptx_stmatrix": [Form("stmatrix", ("trans", "num", "smem", "values*"))],
    "tl.initialize_wgmma_descriptor": [Form("init", ("desc", "ptr", "layout", "lbo", "sbo"))],
    "tl.increase_descriptor_offset": [Form("inc", ("desc", "offset"))],
    # cp.async: the TIR builtin counts bytes, TileLang's counts elements; optional predicate
    "tirx.ptx_cp_async": [Form("bytes", ("dst", "src", "bytes")), Form("bytes_pred", ("dst", "src", "bytes", "pred"))],
    "tl.ptx_cp_async": [Form("elems", ("dst", "src", "elems")), Form("elems_pred", ("dst", "src", "elems", "pred"))],
    "tirx.ptx_init_barrier_thread_count": [Form("init", ("mbar", "count"))],
    "tirx.ptx_arrive_barrier": [Form("arrive", ("mbar",))],
    "tl.ptx_cp_async_barrier_noinc": [Form("arrive", ("mbar",))],
    "tirx.ptx_arrive_barrier_expect_tx": [Form("arrive_tx", ("mbar", "bytes")),
                                          Form("arrive_tx_cta", ("mbar", "bytes", "cta", "pred"))],
    "tl.mbarrier_expect_tx": [Form("expect", ("mbar", "bytes"))],
    "tl.mbarrier_wait_parity": [Form("wait", ("mbar", "parity"))],
    "tl.named_barrier_arrive": [Form("arrive", ("id", "count"))],
    "tirx.tvm_storage_sync": [Form("block", ("scope",)), Form("named", ("scope", "id", "count"))],
    "tl.set_max_nreg": [Form("set", ("regs", "inc"))],
    "tl.warpgroup_wait": [Form("wait", ("n",))],
    "tl.wait_wgmma": [Form("wait", ("n",))],
    "tirx.ptx_wait_group": [Form("wait", ("n",))],
    "tl.tma_store_wait": [Form("wait", ("n",)), Form("wait_read", ("n", "read"))],
}

# width in bytes of the explicit vector memory intrinsics: (pointer role, write?)
VECTOR_MEMORY = {
    "tl.ldg32": 4, "tl.ldg64": 8, "tl.ldg128": 16, "tl.ldg256": 32,
    "tl.lds32": 4, "tl.lds64": 8, "tl.lds128": 16,
    "tl.stg32": 4, "tl.stg64": 8, "tl.stg128": 16, "tl.stg256": 32,
    "tl.sts32": 4, "tl.sts64": 8, "tl.sts128": 16,
}
SIGNATURES.update({op: [Form("plain", ("ptr",)), Form("pred", ("ptr", "pred"))]
                   for op in VECTOR_MEMORY if ".ld" in op})
SIGNATURES.update({op: [Form("plain", ("ptr", "value")), Form("pred", ("ptr", "value", "pred"))]
                   for op in VECTOR_MEMORY if ".st" in op})

# atomics: (pointer, value[, memory order...]); each updates its element(s) atomically
ATOMICS = {
    "tl.atomic_add_elem_op": 1, "tl.atomic_add_ret_elem_op": 1, "tl.atomic_addx2_elem_op": 2,
    "tl.atomic_addx2_ret_elem_op": 2, "tl.atomic_addx4_elem_op": 4, "tl.atomic_addx4_ret_elem_op": 4,
    "tl.atomic_max_elem_op": 1, "tl.atomic_max_ret_elem_op": 1, "tl.atomic_min_elem_op": 1,
    "tl.atomic_min_ret_elem_op": 1, "tl.atomic_or_elem_op": 1, "tl.atomic_store_elem_op": 1,
    "tl.atomic_load_elem_op": 1,
}
SIGNATURES.update({op: [Form("atomic", ("ptr", "value", "rest*"))] for op in ATOMICS})
SIGNATURES["tl.atomic_load_elem_op"] = [Form("atomic", ("ptr", "rest*"))]


def match(call):
    """(form name, roles) for a call of a listed op, None when its form is not listed."""
    forms = SIGNATURES.get(op_name(call))
    if not forms:
        return None
    args = list(call.args)
    for f in forms:
        try:
            bound = f.bind(args)
        except (IndexError, TypeError, AttributeError):
            bound = None
        if bound is not None:
            return f.name, bound
    return None


def registered_count(name) -> Optional[int]:
    """The argument count TVM registered for an op (-1: variadic), None if unknown."""
    try:
        return int(tirx.op.Op.get(name).num_inputs)
    except Exception:  # an op this TileLang does not register
        return None


__all__ = ["SIGNATURES", "VECTOR_MEMORY", "ATOMICS", "match", "is_ptr", "registered_count"]
