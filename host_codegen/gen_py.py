"""Renders an EntrySpec's rules and launch into Python source (stage A entry).

The generated module defines (prefill's contract; another family's arguments follow its own)
    validate(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
             o=None, final_state=None, expect_device="cuda", validate="fast") -> dict
    launch(k1, k2, <same arguments>) -> (o, final_state or None)
where k1, k2 are callables taking every kernel parameter in order (tilelang JITKernels). A
one-kernel entry's launch takes k1 alone; with one output it returns that output.
"""
from __future__ import annotations

from . import expr as X
from . import rules as R
from .spec import EntrySpec

_TORCH_DTYPE = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32", "float64": "float64",
                "int32": "int32", "int64": "int64", "uint8": "uint8", "int8": "int8", "bool": "bool"}


def _v(name: str) -> str:
    return f"_v_{name}"


def _py(e) -> str:
    return X.to_py(e, _v)


def signature(spec: EntrySpec) -> str:
    c = spec.contract
    return ", ".join(c.args + c.scalars + tuple(f"{o}=None" for o in c.outputs))



def _render_rules(spec: EntrySpec, rules: list) -> list[str]:
    L: list[str] = []
    out_names = {p.name for p in spec.outputs}
    for r in rules:
        guard = ""
        arg = getattr(r, "arg", None) or getattr(r, "out", None)
        if arg in out_names:
            guard = f"if {arg} is not None: "
        if isinstance(r, R.Presence):
            if r.required:
                L.append(f"if {r.arg} is None: raise TypeError({r.arg!r} + ': expected a tensor ({r.why}), got None')")
            else:
                L.append(f"if {r.arg} is not None: raise ValueError({r.arg!r} + ': expected None ({r.why}), got ' + type({r.arg}).__name__)")
        elif isinstance(r, R.IsTensor):
            L.append(f"{guard}_is_tensor({r.arg!r}, {r.arg})")
        elif isinstance(r, R.DType):
            L.append(f"{guard}_dtype({r.arg!r}, {r.arg}, _torch.{_TORCH_DTYPE[r.dtype]})")
        elif isinstance(r, R.NDim):
            L.append(f"{guard}_ndim({r.arg!r}, {r.arg}, {r.ndim}, {r.labels!r})")
        elif isinstance(r, R.Device):
            if r.ref is None:
                L.append(f"if {r.arg}.device.type != expect_device: raise ValueError("
                         f"{r.arg!r} + ': expected a ' + expect_device + ' tensor, got device ' + str({r.arg}.device))")
            else:
                L.append(f"{guard}_same_device({r.arg!r}, {r.arg}, {r.ref!r}, {r.ref})")
        elif isinstance(r, R.Bind):
            L.append(f"{_v(r.var)} = {r.arg}.shape[{r.dim}]")
        elif isinstance(r, R.Dim):
            L.append(f"{guard}_dim({r.arg!r}, {r.arg}, {r.dim}, {_py(r.expr)}, {r.note!r})")
        elif isinstance(r, R.Derive):
            L.append(f"{_v(r.var)} = {_py(r.expr)}")
        elif isinstance(r, R.Pre):
            got = " + ', ' + ".join(f"'{v} = ' + str({_v(v)})" for v in r.vars)
            L.append(f"if not {_py(r.expr)}: raise ValueError({r.arg!r} + ': expected {r.src}{r.when}, got ' + {got})")
        elif isinstance(r, R.Stride):
            L.append(f"{guard}_stride({r.arg!r}, {r.arg}, {r.dim}, {_py(r.expr)})")
        elif isinstance(r, R.Align):
            L.append(f"{guard}_align({r.arg!r}, {r.arg}, {r.nbytes}, {r.why!r})")
        elif isinstance(r, R.NoAlias):
            L.append(f"{guard}_no_alias({r.out!r}, {r.out}, {r.other!r}, {r.other}, {r.why!r})")
        elif isinstance(r, R.Scalar):
            if r.arg == "scale":
                L.append(f"if scale is None: scale = {float(spec.head_dim) ** -0.5!r}")
            L.append(f"{r.arg} = _scalar({r.arg!r}, {r.arg})")
        elif isinstance(r, R.ScalarPre):
            L.append(f"if not {X.to_py(r.expr)}: raise ValueError({r.arg!r} + ': expected {r.src}, got {r.arg} = ' + repr({r.arg}))")
        elif isinstance(r, R.Contents):
            fn = "_check_cu_contents" if r.arg == "cu_seqlens" else "_check_state_indices"
            L.append(f"if validate == 'full': {fn}({r.arg}, {_v(r.bound)})")
        else:
            raise TypeError(r)
    return L


_HELPERS = '''
def _is_tensor(name, x):
    if not isinstance(x, _torch.Tensor):
        raise TypeError(name + ': expected a torch.Tensor, got ' + type(x).__name__)

def _dtype(name, x, dt):
    if x.dtype != dt:
        raise TypeError(name + ': expected dtype ' + str(dt)[6:] + ', got ' + str(x.dtype)[6:])

def _ndim(name, x, n, labels):
    if x.dim() != n:
        raise ValueError(name + ': expected ' + str(n) + ' dimensions ' + labels + ', got ' + str(x.dim()))

def _same_device(name, x, ref_name, ref):
    if x.device != ref.device:
        raise ValueError(name + ': expected device ' + str(ref.device) + ' (the device of ' + ref_name + '), got ' + str(x.device))

def _dim(name, x, i, want, note):
    got = x.shape[i]
    if got != want:
        raise ValueError(name + '.shape[' + str(i) + ']: expected ' + str(want) + ' ' + note + ', got ' + str(got))

def _stride(name, x, i, want):
    if x.shape[i] != 1 and x.stride(i) != want:
        raise ValueError(name + '.stride(' + str(i) + '): expected ' + str(want) + ' (contiguous), got ' + str(x.stride(i)))

def _align(name, x, n, why):
    r = x.data_ptr() % n
    if r:
        raise ValueError(name + ': expected data_ptr % ' + str(n) + ' == 0 (' + why + '), got data_ptr % ' + str(n) + ' == ' + str(r))

def _span(x):
    p = x.data_ptr()
    return p, p + x.numel() * x.element_size()

def _no_alias(name, x, other_name, other, why):
    if other is None or x.numel() == 0 or other.numel() == 0:
        return
    a0, a1 = _span(x)
    b0, b1 = _span(other)
    if a0 < b1 and b0 < a1:
        raise ValueError(name + ': expected no overlap with ' + other_name + ' (' + why + '), got overlapping memory')

def _scalar(name, x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(name + ': expected a float, got ' + type(x).__name__)
    return float(x)

def _check_cu_contents(cu, T):
    c = cu.tolist()
    if c[0] != 0:
        raise ValueError('cu_seqlens[0]: expected 0, got ' + str(c[0]))
    for i in range(1, len(c)):
        if c[i] < c[i - 1]:
            raise ValueError('cu_seqlens[' + str(i) + ']: expected >= ' + str(c[i - 1]) + ' (cu_seqlens[' + str(i - 1) + '], non-decreasing), got ' + str(c[i]))
    if c[-1] != T:
        raise ValueError('cu_seqlens[' + str(len(c) - 1) + ']: expected ' + str(T) + ' (T), got ' + str(c[-1]))

def _check_state_indices(idx, P):
    owner = {}
    for i, x in enumerate(idx.tolist()):
        if x != -1 and not 0 <= x < P:
            raise ValueError('state_indices[' + str(i) + ']: expected -1 (padding) or a pool row in [0, ' + str(P) + ') (P = state_pool.shape[0]), got ' + str(x))
        if x >= 0:
            if x in owner:
                raise ValueError('state_indices[' + str(i) + ']: expected a pool row no other sequence updates, got ' + str(x) + ' (also state_indices[' + str(owner[x]) + '])')
            owner[x] = i
'''


def generate(spec: EntrySpec) -> str:
    rules = R.build_rules(spec)
    sig = signature(spec)
    contract = spec.contract
    shape_vars = sorted({r.var for r in rules if isinstance(r, (R.Bind, R.Derive))})
    L = [f"# Generated by host_codegen.gen_py for {spec.name}. Do not edit.",
         f"# key {spec.key}"]
    L += [f"# k{i + 1} ir_hash {ks.ir_hash}" for i, ks in enumerate(spec.kernels)]
    L += ["import os as _os", "import torch as _torch", _HELPERS, "",
          f"def validate({sig}, expect_device='cuda', validate='fast'):",
          "    if validate != 'fast' and validate != 'full':",
          "        raise ValueError(\"validate: expected 'fast' or 'full', got \" + repr(validate))"]
    L += ["    " + s for s in _render_rules(spec, rules)]
    env = ", ".join(f"{v!r}: {_v(v)}" for v in shape_vars)
    L.append(f"    return {{{env}, 'lower_bound': lower_bound, 'scale': scale}}")
    L.append("")

    # Launch: allocate the workspace and outputs, call each kernel in order.
    fns = [f"k{i + 1}" for i in range(len(spec.kernels))]
    L.append(f"def launch({', '.join(fns)}, {sig}, validate='fast'):")
    L.append(f"    _env = globals()['validate']({', '.join(a.split('=')[0] for a in sig.split(', '))}, validate=validate)")
    for v in shape_vars:
        L.append(f"    {_v(v)} = _env[{v!r}]")
    L.append("    lower_bound = _env['lower_bound']; scale = _env['scale']")
    L.append("    _dev = q.device")
    local = {}
    for w in spec.workspace:
        shape = ", ".join(_py(s) for s in w.shape)
        L.append(f"    _ws_{w.name} = _torch.empty(({shape},), dtype=_torch.{_TORCH_DTYPE[w.dtype]}, device=_dev)")
        local[w.name] = f"_ws_{w.name}"
    L.append("    _poison = _os.environ.get('KDA_TILE_POISON') == '1'")
    if spec.workspace:
        L.append("    if _poison:")
    for w in spec.workspace:
        L.append(f"        _ws_{w.name}.fill_(float('nan'))")
    for p in spec.outputs:
        shape = ", ".join(_py(s) for s in p.shape)
        L.append(f"    if {p.name} is None:")
        L.append(f"        {p.name} = _torch.empty(({shape},), dtype=_torch.{_TORCH_DTYPE[p.dtype]}, device=_dev)")
        L.append(f"        if _poison: {p.name}.fill_(float('nan'))")
    derived = {v for v, _ in spec.derived_vars}   # scalar parameters the entry computes
    for ks, fn in zip(spec.kernels, fns):
        args = []
        for p in ks.params:
            computed = p.kind == "scalar" and p.name in derived
            args.append(_v(p.name) if computed else local.get(p.name, contract.public(p.name)))
        L.append(f"    {fn}({', '.join(args)})")
    have = {p.name for p in spec.outputs}
    L.append(f"    return {', '.join(o if o in have else 'None' for o in contract.outputs)}")
    L.append("")
    return "\n".join(L)


def generate_fast(spec: EntrySpec) -> str:
    """The lowest-overhead Python front of the C++ entry. `make(fn, slow, flags)` returns
    call(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale) -> (o, final_state)
    which calls fn with `flags` (8: the entry returns o alone, so one tensor crosses back instead of
    a tuple) and allocates final_state itself: like initial_state where the IR gives both the
    same shape and dtype, else from the dims that bind each shape variable. Anything unexpected
    while allocating goes to `slow`, whose errors name the argument."""
    rules = R.build_rules(spec)
    source = {r.var: f"{r.arg}.shape[{r.dim}]" for r in rules if isinstance(r, R.Bind)}
    args = ", ".join(spec.contract.args + spec.contract.scalars)
    L = [f"# Generated by host_codegen.gen_py.generate_fast for {spec.name}. Do not edit.",
         f"# key {spec.key}", "import torch as _torch", "", "", "def make(_fn, _slow, _flags=8):"]
    if spec.contract.outputs == ("o",):   # one fresh output: the entry returns it alone (flags bit 3)
        L += [f"    def call({args}):", f"        return _fn({args}, None, _flags)", "    return call", ""]
        return "\n".join(L)
    ht = next((p for p in spec.outputs if p.name == "final_state"), None)
    h0 = next((p for p in spec.inputs if p.name == "initial_state"), None)
    if ht is None:
        L += [f"    def call({args}):",
              f"        return _fn({args}, None, None, _flags), None"]
    else:
        if h0 is not None and h0.dtype == ht.dtype and tuple(h0.shape) == tuple(ht.shape):
            L += ["    _empty_like = _torch.empty_like", "    _cf = _torch.contiguous_format"]
            alloc = "_empty_like(initial_state, memory_format=_cf)"
        else:
            L += ["    _empty = _torch.empty", f"    _dt = _torch.{_TORCH_DTYPE[ht.dtype]}"]
            shape = ", ".join(X.to_py(e, lambda v: source[v]) for e in ht.shape)
            alloc = f"_empty(({shape},), dtype=_dt, device=q.device)"
        L += [f"    def call({args}):",
              "        try:",
              f"            _ht = {alloc}",
              "        except Exception:",
              f"            return _slow({args})",
              f"        return _fn({args}, None, _ht, _flags), _ht"]
    L += ["    return call", ""]
    return "\n".join(L)
