"""Results: findings, per-check results, per-kernel reports, the table and the JSON."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

PROVED, FAILED, UNKNOWN = "proved", "failed", "unknown"
WARNING = "warning"   # a finding that does not stop a proof (an error under --strict)


@dataclass
class Finding:
    check: str
    status: str                    # FAILED | UNKNOWN
    message: str
    buffer: Optional[str] = None
    access: Optional[str] = None   # the IR statement
    line: Optional[int] = None     # line in the kernel's device IR script
    counterexample: Optional[dict] = None


@dataclass
class CheckResult:
    name: str
    category: str
    status: str
    detail: str = ""
    findings: list = field(default_factory=list)
    seconds: float = 0.0
    metrics: dict = field(default_factory=dict)


@dataclass
class KernelReport:
    name: str
    config: dict = field(default_factory=dict)
    ir_hash: str = ""
    checks: list = field(default_factory=list)
    lower_seconds: float = 0.0
    verify_seconds: float = 0.0
    error: Optional[str] = None
    proof_key: str = ""            # runner.proof_key: what the verdict is a function of
    carried: bool = False          # the verdict is an earlier run's for the same proof key

    @property
    def status(self) -> str:
        if self.error:
            return UNKNOWN
        st = {c.status for c in self.checks}
        if FAILED in st:
            return FAILED
        if UNKNOWN in st or not self.checks:
            return UNKNOWN
        return PROVED   # warnings do not stop a proof (--strict turns them into failures)

    def failed_categories(self) -> set:
        return {c.category for c in self.checks if c.status not in (PROVED, WARNING)}

    def to_json(self) -> dict:
        d = asdict(self)
        d["status"] = self.status
        return d


def check_result(name, category, findings, detail="", seconds=0.0, metrics=None, unknown_detail=None):
    seen, unique = set(), []
    for f in findings:   # one finding per distinct message and statement
        key = (f.status, f.message, f.access)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    findings = unique
    if any(f.status == FAILED for f in findings):
        status = FAILED
    elif any(f.status == UNKNOWN for f in findings):
        status = UNKNOWN
    elif findings:
        status = WARNING
    else:
        status = PROVED
    return CheckResult(name=name, category=category, status=status, detail=detail,
                       findings=findings, seconds=round(seconds, 3), metrics=metrics or {})


def table(reports) -> str:
    from . import CATEGORIES

    head = ["kernel", *CATEGORIES, "status", "lower s", "verify s"]
    rows = []
    for r in reports:
        cells = [r.name]
        for cat in CATEGORIES:
            cs = [c for c in r.checks if c.category == cat]
            if r.error or not cs:
                cells.append("-" if not r.error else "ERROR")
            elif any(c.status == FAILED for c in cs):
                cells.append("FAIL")
            elif any(c.status == UNKNOWN for c in cs):
                cells.append("UNKNOWN")
            elif any(c.status == WARNING for c in cs):
                cells.append("warn")
            else:
                extra = ""
                if cat == "banks":
                    deg = max((c.metrics.get("worst_degree", 1) for c in cs), default=1)
                    extra = f" (deg {deg})"
                cells.append("ok" + extra)
        cells += [r.status.upper() if r.status != PROVED else "proved",
                  f"{r.lower_seconds:.1f}", f"{r.verify_seconds:.1f}"]
        rows.append(cells)
    widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    fmt = lambda row: "  ".join(str(c).ljust(w) for c, w in zip(row, widths))  # noqa: E731
    lines = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
    return "\n".join(lines)


def failures_text(reports, limit_per_kernel=12) -> str:
    out = []
    for r in reports:
        if r.error:
            out.append(f"{r.name}: ERROR {r.error}")
        shown = 0
        for c in r.checks:
            for f in c.findings:
                if shown >= limit_per_kernel:
                    continue
                shown += 1
                where = f" [buffer {f.buffer}]" if f.buffer else ""
                line = f" (device IR line {f.line})" if f.line else ""
                out.append(f"{r.name}: {c.name} {f.status.upper()}{where}: {f.message}{line}")
                if f.access:
                    out.append(f"    at: {f.access}")
                if f.counterexample:
                    out.append(f"    counterexample: {json.dumps(f.counterexample, sort_keys=True)}")
        total = sum(len(c.findings) for c in r.checks)
        if total > shown:
            out.append(f"{r.name}: ... {total - shown} more findings in the JSON report")
    return "\n".join(out)


def write_json(path, reports, extra=None):
    doc = {"kernels": [r.to_json() for r in reports]}
    if extra:
        doc.update(extra)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True, default=str)
