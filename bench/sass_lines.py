"""Static SASS of kernel builds on the CPU: instruction counts by opcode and by line of the CUDA
source TileLang generates, side by side, to find where one form spends instructions another does
not (no GPU: nvcc compiles sm_90a here).

    python bench/sass_lines.py K1_SPEC [K1_SPEC ...]         # bench/k1_round.py variant strings (varlen builds)
    python bench/sass_lines.py --fixed K1_SPEC [...]          # ... as fixed-batch builds
    python bench/sass_lines.py --build NAME [--build NAME]    # released builds by name
    python bench/sass_lines.py --build NAME+next_early=True   # ... with config fields changed
    options: --top N (lines and opcodes shown, default 25), --keep DIR (the .cu and .sass files)

Counts are static: straight-line code counts once per program, a loop body once, slow paths
and both sides of a branch in full. Weigh a line by the warps that run it (a `tx < 32` branch
runs on one warp of four) before reading it as time. Needs nvcc, nvdisasm and cuobjdump (triton's copies are
found if they are not on PATH).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def tool(name):
    path = shutil.which(name)
    if path:
        return path
    import triton
    cand = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if cand.exists():
        return str(cand)
    raise SystemExit(f"{name}: not found on PATH or in triton's bin folder")


def build_of(label, varlen=True):
    """The Build of a k1_round spec (a varlen build, or fixed with varlen False), or of a released
    build (label "build:NAME"), or of one with config fields changed ("build:NAME+field=value+...",
    values as Python literals)."""
    import ast
    import dataclasses
    from kda_kernels import registry
    if label.startswith("build:"):
        name, *changes = label[6:].split("+")
        b = registry.BY_NAME[name]
        if changes:
            kv = dict(c.split("=", 1) for c in changes)
            b = registry.Build(b.stage, dataclasses.replace(b.config, **{k: ast.literal_eval(v) for k, v in kv.items()}))
        return b
    import k1_round
    return registry.Build("k1", k1_round.k1_config(label, varlen))


def disassemble(build, workdir):
    """(CUDA source, nvdisasm -g listing, register and spill line) of one build, its cubin made
    as the release's are (host_codegen.cpp_entry.compile_cuda: TileLang's nvcc flags, line info)."""
    import tilelang
    from host_codegen.cpp_entry import compile_cuda
    from kda_kernels import registry
    src = tilelang.compile(build.prim_func(), target=registry.TARGET,
                           pass_configs=build.config.pass_configs()).get_kernel_source()
    Path(workdir, "k.cu").write_text(src)
    cubin = os.path.join(workdir, "k.cubin")
    Path(cubin).write_bytes(compile_cuda(src, build))
    usage = subprocess.run([tool("cuobjdump"), "-res-usage", cubin], capture_output=True, text=True).stdout
    regs = " ".join(x.strip() for x in usage.splitlines() if "REG:" in x)
    return src, subprocess.run([tool("nvdisasm"), "-g", "-c", cubin], capture_output=True, text=True).stdout, regs


def counts(sass):
    """({opcode: n}, {(file, line): n}) over the instructions of the disassembly."""
    ops, lines, cur = collections.Counter(), collections.Counter(), None
    for text in sass.splitlines():
        m = re.search(r'//## File "([^"]+)", line (\d+)', text)
        if m:
            cur = (os.path.basename(m.group(1)), int(m.group(2)))
            continue
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", text)
        if m:
            ops[m.group(2)] += 1
            lines[cur] += 1
    return ops, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specs", nargs="*")
    ap.add_argument("--build", action="append", default=[])
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--keep")
    ap.add_argument("--fixed", action="store_true", help="build the K1_SPECs as fixed-batch builds")
    args = ap.parse_args()
    labels = args.specs + [f"build:{b}" for b in args.build]
    if not labels:
        ap.error("give k1_round specs or --build NAME")
    results = {}
    for label in labels:
        work = tempfile.mkdtemp() if not args.keep else os.path.join(args.keep, re.sub(r"[^\w.-]", "_", label))
        os.makedirs(work, exist_ok=True)
        src, sass, regs = disassemble(build_of(label, not args.fixed), work)
        ops, lines = counts(sass)
        results[label] = (ops, lines, src.splitlines())
        print(f"{label}: {sum(ops.values())} instructions; {regs}")
    names = list(results)
    print("\nopcode       " + " ".join(f"{i:>7d}" for i in range(len(names))))
    allops = set().union(*(r[0] for r in results.values()))
    for op in sorted(allops, key=lambda o: -max(results[n][0][o] for n in names))[:args.top]:
        print(f"{op:12s} " + " ".join(f"{results[n][0][op]:7d}" for n in names))
    for i, n in enumerate(names):
        ops, lines, src = results[n]
        print(f"\n[{i}] {n}: lines of the generated source by instructions")
        # the generated source is the one .cu file (its name is the compiler's temporary)
        own = [(c, f, ln) for (f, ln), c in ((k, v) for k, v in lines.items() if k) if f.endswith(".cu")]
        for c, _, ln in sorted(own, reverse=True)[:args.top]:
            print(f"  {c:5d}  L{ln:<5d} {src[ln - 1].strip()[:110] if ln <= len(src) else ''}")
        other = collections.Counter()
        for key, c in lines.items():
            other["(no line)" if key is None else key[0]] += c
        print("  by file: " + ", ".join(f"{f} {c}" for f, c in other.most_common(6)))


if __name__ == "__main__":
    main()
