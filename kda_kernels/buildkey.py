"""The gate key of a build: a hash of everything its lowered IR is a function of.

    key_inputs(build) = {
        "sources":  {"kda_kernels/k1_prepare.py": sha256, "kda_kernels/_math.py": ..., ...},
        "factory":  "kda_kernels.k1_prepare:build_k1",   "config": asdict(config),
        "pass_configs": {...}, "tilelang": "0.1.15", "tvm": "0.25.dev0",
        "target": {"kind": "cuda", "arch": "sm_90a"}, ...}
    gate_key(build) = sha256 of that, as sorted JSON

`sources` holds the factory's module, the config class's module and, transitively, every
`kda_kernels` module they import (read from their syntax trees, so nothing is imported and a
new import is picked up by itself). `python -m verify` stores the key and its inputs next to
the proved IR hash in verify/manifest.json; the release gate serves a build only when its
key matches, and so never lowers a build to decide. Everything here is machine-independent
(relative paths, file contents, version strings) so that the committed manifest matches on
every machine, and nothing imports TileLang.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import re
from dataclasses import asdict
from pathlib import Path

# Bump when the key's composition changes: every record then reads as stale.
KEY_VERSION = 1
PACKAGE = "kda_kernels"
PACKAGE_DIR = Path(__file__).resolve().parent


# -- sources ---------------------------------------------------------------------------------

def module_file(module: str, root: Path = None):
    """The file of a `kda_kernels` module (a package resolves to its __init__.py), or None."""
    root = PACKAGE_DIR if root is None else Path(root)
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py") if len(parts) > 1 else None, base / "__init__.py"):
        if cand is not None and cand.is_file():
            return cand
    return None


def _imported_modules(path: Path, module: str, root: Path, data: bytes) -> set:
    return set(_imports_of(str(path), module, str(root), hashlib.sha256(data).hexdigest(), data))


@functools.lru_cache(maxsize=None)
def _imports_of(path: str, module: str, root: str, digest: str, data: bytes) -> frozenset:
    """The `kda_kernels` modules one file imports, anywhere in it (function bodies included).
    Cached per file content: a file is parsed once per process (~3 ms for the largest)."""
    path, root = Path(path), Path(root)
    is_pkg = path.name == "__init__.py"
    out = set()
    tree = ast.parse(data, filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == PACKAGE or a.name.startswith(PACKAGE + "."):
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = module.split(".") if is_pkg else module.split(".")[:-1]
                pkg = pkg[:len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                continue
            names_a_module = False
            for a in node.names:
                sub = f"{base}.{a.name}"
                if a.name != "*" and module_file(sub, root) is not None:
                    out.add(sub)
                    names_a_module = True
                else:
                    out.add(base)
            if base != PACKAGE and not names_a_module:
                out.add(base)
    return frozenset(out)


def source_files(modules, root: Path = None) -> dict:
    """{relative path: sha256 of the bytes} of `modules` and every kda_kernels module they
    import, transitively."""
    root = PACKAGE_DIR if root is None else Path(root)
    todo, seen, files = list(modules), set(), {}
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        path = module_file(m, root)
        if path is None:
            raise LookupError(f"{m}: no source file under {root}")
        rel = PACKAGE + "/" + path.relative_to(root).as_posix()
        data = path.read_bytes()
        files[rel] = hashlib.sha256(data).hexdigest()
        todo.extend(_imported_modules(path, m, root, data) - seen)
    return dict(sorted(files.items()))


# -- toolchain -------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def toolchain() -> dict:
    """TileLang's and its bundled TVM's versions, read without importing either."""
    return {"tilelang": importlib.metadata.version("tilelang"), "tvm": _tvm_version()}


def _tvm_version() -> str:
    spec = importlib.util.find_spec("tilelang")   # locates the package; imports nothing
    if spec is not None and spec.origin:
        libinfo = Path(spec.origin).parent / "3rdparty" / "tvm" / "python" / "tvm" / "libinfo.py"
        try:
            m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', libinfo.read_text(), re.M)
            if m:
                return m.group(1)
        except OSError:
            pass
    from tilelang import tvm  # another layout: ask TVM itself (slow, but right)
    return str(tvm.__version__)


# -- the key ---------------------------------------------------------------------------------

def _factory_module(build) -> str:
    return build.factory_path.split(":")[0]


def _key_inputs(build, root=None) -> dict:
    from . import registry
    cfg = build.config
    cls = type(cfg)
    return {
        "key_version": KEY_VERSION,
        "stage": build.stage,
        "factory": build.factory_path,
        "config_class": f"{cls.__module__}.{cls.__qualname__}",
        "config": asdict(cfg),
        "pass_configs": dict(cfg.pass_configs()),
        "sources": source_files({_factory_module(build), cls.__module__}, root),
        **toolchain(),
        "target": dict(registry.TARGET),
    }


@functools.lru_cache(maxsize=None)
def _cached(build):
    inputs = _key_inputs(build)
    return inputs, digest(inputs)


def key_inputs(build, root=None) -> dict:
    """What the build's lowered IR is a function of (see the module docstring). `root`: read
    the sources from another copy of the package (tests); the default is cached per process."""
    return _key_inputs(build, root) if root is not None else _cached(build)[0]


def digest(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":"),
                                     default=str).encode()).hexdigest()


def gate_key(build, root=None) -> str:
    return digest(_key_inputs(build, root)) if root is not None else _cached(build)[1]


def explain(recorded, current: dict) -> list:
    """What differs between a record's key inputs and the build's now, in words."""
    if not isinstance(recorded, dict):
        return ["the record has no gate key (written by an older `python -m verify`)"]
    out = []
    rs, cs = recorded.get("sources", {}), current.get("sources", {})
    for f in sorted(set(rs) | set(cs)):
        if f not in cs:
            out.append(f"{f} is no longer a source of the build")
        elif f not in rs:
            out.append(f"{f} is a new source of the build")
        elif rs[f] != cs[f]:
            out.append(f"{f} changed")
    rc, cc = recorded.get("config", {}), current.get("config", {})
    for k in sorted(set(rc) | set(cc)):
        if rc.get(k, "<absent>") != cc.get(k, "<absent>"):
            out.append(f"config.{k} {rc.get(k, '<absent>')!r} -> {cc.get(k, '<absent>')!r}")
    for k in sorted(set(recorded) | set(current)):
        if k in ("sources", "config"):
            continue
        if recorded.get(k) != current.get(k):
            out.append(f"{k} {recorded.get(k)!r} -> {current.get(k)!r}")
    return out or ["the key differs"]
