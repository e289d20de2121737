"""The explicit model the checks work on: buffers, loops, program tree and sites.

A *site* is one static operation in the device program: a memory access (load, store,
or an intrinsic's shared/global operand) or a synchronization event. Each site carries
its enclosing loops, its path condition (enclosing `if`s and expression guards), and
its position in the program tree, all as z3 terms over the kernel's symbols.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import z3

THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass
class BufInfo:
    name: str
    scope: str              # 'global' | 'shared' | 'local' | 'barrier' | 'descriptor'
    dtype: str
    elem_bytes: int
    size: Optional[z3.ArithRef]   # elements; None when unknown
    base_byte: Optional[int] = None   # byte offset inside the merged dynamic shared buffer
    region: str = ""              # the allocation it lives in (shared)
    readonly: bool = False
    size_source: str = ""


@dataclass(eq=False)
class Loop:
    id: int
    var: str
    sym: z3.ArithRef
    lo: z3.ArithRef
    extent: z3.ArithRef
    kind: str
    depth: int


@dataclass(eq=False)
class Block:
    items: list = field(default_factory=list)
    owner: object = None          # LoopNode | IfNode | None (root)
    branch: str = ""              # 'then' | 'else' under an IfNode


@dataclass(eq=False)
class LoopNode:
    loop: Loop
    body: Block
    parent: Block = None
    pos: int = 0


@dataclass(eq=False)
class IfNode:
    cond: z3.BoolRef
    then: Block
    else_: Block
    parent: Block = None
    pos: int = 0
    text: str = ""


@dataclass(eq=False)
class Site:
    id: int
    kind: str                     # 'access' | 'sync' | 'mbar' | 'fence' | 'exit' (thread_return)
    op: str                       # detail, see extract.py
    loops: tuple
    conds: tuple                  # z3 Bool path conditions
    text: str
    top: int                      # index of the enclosing top-level statement
    cond_depths: tuple = ()       # number of enclosing loops where each condition arose
    parent: Block = None
    pos: int = 0
    # memory access
    buf: Optional[BufInfo] = None
    index: Optional[z3.ArithRef] = None     # first element
    count: Optional[z3.ArithRef] = None     # elements touched (contiguous span)
    lanes: int = 1
    stride: int = 1
    read: bool = False
    write: bool = False
    async_proxy: bool = False
    obligations: list = field(default_factory=list)   # (term, dtype, node text) overflow checks
    # synchronization
    bar_key: object = None        # ('sync',) | ('named', id)
    bar_count: Optional[z3.ArithRef] = None
    mbar: Optional[tuple] = None  # (buffer name, index term)
    parity: Optional[z3.ArithRef] = None
    tx_bytes: Optional[z3.ArithRef] = None
    extra: dict = field(default_factory=dict)

    @property
    def shared(self) -> bool:
        return self.buf is not None and self.buf.scope == "shared"


@dataclass
class Kernel:
    name: str
    func_name: str
    syms: object                  # z3expr.Symbols
    shape: dict                   # shape var name -> z3 Int
    blocks: dict                  # 'blockIdx.x' -> (sym, extent term)
    threads: dict                 # 'threadIdx.x' -> (sym, extent int)
    bufs: dict                    # name -> BufInfo
    root: Block
    sites: list
    loops: list
    unsupported: list             # (text, reason): constructs the encoding cannot decide
    opaque_calls: list = field(default_factory=list)     # (text, callee): extern calls, no ordering modelled
    # callees of opaque_calls known to touch no memory and order nothing: call_pure_extern's, and
    # call_extern's whose definition in the kernel's imported source is scalar arithmetic
    # (extract.arithmetic_helpers)
    pure_calls: frozenset = frozenset()
    dyn_shared_bytes: int = 0
    static_shared_bytes: int = 0
    shared_regions: dict = field(default_factory=dict)   # region name -> size in bytes
    alignment_map: dict = field(default_factory=dict)    # buffer -> alignment TileLang required
    readonly: set = field(default_factory=set)
    tma_descs: dict = field(default_factory=dict)
    layouts: dict = field(default_factory=dict)
    preconditions: list = field(default_factory=list)    # z3 Bool over shape syms
    precondition_texts: list = field(default_factory=list)
    precondition_errors: list = field(default_factory=list)   # ("name"|"text", what) problems
    kernel_variables: list = field(default_factory=list)     # names preconditions may use
    script_lines: list = field(default_factory=list)
    monotone: dict = field(default_factory=dict)          # buffer -> (length sym, last value sym)
    distinct: frozenset = frozenset()                     # buffers whose non-negative entries differ
    source_buffers: dict = field(default_factory=dict)    # tensor name -> source-level Buffer
    registers: dict = field(default_factory=dict)         # induction register -> {"init", "incs"}
    register_values: dict = field(default_factory=dict)   # placeholder -> value term
    placeholders: dict = field(default_factory=dict)      # placeholder name -> register
    counts: object = None                                  # verify.counting.Counts, built on demand
    extent_defs: dict = field(default_factory=dict)        # named loop trip counts (extract._name_extents)
    written_once: tuple = ()                               # output buffers barriers.written_once checks
    written_once_all: bool = False                         # ... and they must be all it writes (releases)

    @property
    def num_threads(self) -> int:
        n = 1
        for _, ext in self.threads.values():
            n *= ext
        return n

    def thread_linear(self, subst=None):
        """Linear thread id term (x + X*y + X*Y*z)."""
        t = z3.IntVal(0)
        mul = 1
        for tag in THREAD_TAGS:
            if tag in self.threads:
                sym, ext = self.threads[tag]
                if subst is not None:
                    sym = subst(sym)
                t = t + sym * mul
                mul *= ext
        return t

    def thread_split(self, lin):
        """(symbol, index) for each thread dimension of linear thread id `lin` (the inverse of
        thread_linear); `lin` is a Python int, a numpy int array or a z3 Int term."""
        out = []
        for tag in THREAD_TAGS:
            if tag in self.threads:
                sym, ext = self.threads[tag]
                out.append((sym, lin % ext))
                lin = lin / ext if isinstance(lin, z3.ArithRef) else lin // ext
        return out
