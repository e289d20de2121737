"""Data flows one way: kernels (kda_kernels) -> lowered IR -> verify and host_codegen -> the
API (kda_tile). Every import written in a package's files (function bodies included) may name
only the packages below it."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {  # package -> the project packages its files may import
    "kda_kernels": {"kda_kernels"},
    "verify": {"verify", "kda_kernels"},
    "host_codegen": {"host_codegen", "kda_kernels"},
    "kda_tile": {"kda_tile", "kda_kernels", "host_codegen", "verify"},
}


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down(package):
    bad = []
    for f in sorted((ROOT / package).rglob("*.py")):
        for line, top in _imports(f):
            if top in ALLOWED and top not in ALLOWED[package]:
                bad.append(f"{f.relative_to(ROOT)}:{line} imports {top}")
    assert not bad, "\n".join(bad)
