"""Small TIR helpers shared by the kernel factories."""
from tilelang import tvm
from tvm import tirx


def drop_params(func, names):
    """The PrimFunc without the named parameters. A factory writes one signature holding every
    optional tensor and leaves the absent ones unused; dropping them keeps them out of the IR
    that `verify` and `host_codegen` read."""
    used = set()

    def visit(node):
        if isinstance(node, tirx.Var):
            used.add(node)
        elif isinstance(node, (tirx.BufferLoad, tirx.BufferStore)):
            used.add(node.buffer.data)

    tirx.stmt_functor.post_order_visit(func.body, visit)
    keep, buffer_map, dropped = [], {}, set()
    for p in func.params:
        buf = func.buffer_map.get(p)
        name = buf.name if buf is not None else p.name
        if name in names:
            dropped.add(name)
            if (buf is not None and buf.data in used) or p in used:
                raise ValueError(f"parameter {name} is used by the kernel body")
            continue
        keep.append(p)
        if buf is not None:
            buffer_map[p] = buf
    if set(names) - dropped:
        raise ValueError(f"no parameters named {sorted(set(names) - dropped)}")
    return tirx.PrimFunc(keep, func.body, func.ret_type, buffer_map, func.attrs)
