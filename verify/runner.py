"""Verify kernels: lower, extract the model, run the four check families."""
from __future__ import annotations

import functools
import time
import traceback
from dataclasses import dataclass, field

from . import mutate, solver
from .checks import FAMILIES
from .extract import extract
from .lowering import lower
from .report import PROVED, KernelReport

MONOTONE = {"cu_seqlens": ("N1", "T")}   # buffer -> (its length var, its last value var)
_LOWERED: dict = {}


@dataclass
class Job:
    """One kernel to verify: a prim_func (or factory) plus what the checks need to know."""
    name: str
    factory: object                      # zero-argument callable returning the prim_func
    pass_configs: dict = field(default_factory=dict)
    preconditions: list = field(default_factory=list)
    derived: dict = field(default_factory=dict)
    bank_budget: int = 1
    monotone: dict = field(default_factory=lambda: dict(MONOTONE))
    config: dict = field(default_factory=dict)
    only: tuple = ()                     # restrict to these check families (tests)
    mutate: object = None                # device PrimFunc -> device PrimFunc (IR-level mutants)
    lower_key: object = None             # share one lowering between jobs with the same key
    strict: bool = False                 # warnings (bounds.guarded) are errors
    release: bool = False                # a kda_tile release build (see verify.guards)
    any_contents: bool = False           # bounds also without the MONOTONE assumption
    distinct: tuple = ()                 # buffers whose non-negative entries are pairwise distinct
    rlimit: int = 0                      # Z3 units a query may take, when above solver.DEFAULT_RLIMIT
    written_once: tuple = ()             # global outputs each byte of which one execution writes


def verify_lowered(lowered, job: Job, report: KernelReport, phase: list = None) -> KernelReport:
    """Runs the checks on a lowered kernel into report; phase[0] names the step under way (for
    the error of a step that raises)."""
    phase = [""] if phase is None else phase
    t0 = time.perf_counter()
    before = dict(solver.stats)
    solver.stats["rlimit_max"] = 0
    phase[0] = "extracting the model"
    k = extract(lowered, job.preconditions, job.derived, job.monotone, name=job.name, distinct=job.distinct)
    k.written_once = tuple(job.written_once)
    k.written_once_all = job.release and bool(job.written_once)
    rlimit = solver.DEFAULT_RLIMIT
    if job.rlimit and rlimit:      # a kernel's own budget raises the default, never lowers it (0: none)
        rlimit = max(rlimit, job.rlimit)
    ctx = solver.Ctx(k, rlimit=rlimit)
    for cat, mod in FAMILIES:
        if job.only and cat not in job.only:
            continue
        phase[0] = f"the {cat} checks"
        report.checks.extend(mod.run(k, ctx, job.bank_budget))
    if job.any_contents and k.monotone and (not job.only or "bounds" in job.only):
        from .checks.bounds import any_contents
        phase[0] = "bounds.any_contents"
        report.checks.append(any_contents(lowered, job))
    from .checks import model
    phase[0] = "the model checks"
    report.checks.extend(model.run(k, ctx))
    from .guards import guarded_accesses
    phase[0] = "bounds.guarded"
    g = guarded_accesses(lowered, job, k) if not job.only or "bounds" in job.only else None
    if g is not None:
        report.checks.append(g)
    if job.strict:
        from .report import FAILED, WARNING
        for c in report.checks:
            if c.status == WARNING:
                c.status = FAILED
                for f in c.findings:
                    f.status = FAILED
    report.verify_seconds = round(time.perf_counter() - t0, 2)
    # Solver work of this kernel (an attribute, carried to the parent with the report): queries,
    # memo hits, unknowns and Z3 resource units. Deterministic for a given process history
    # (resource units, unlike seconds, do not depend on machine speed or load).
    report.solver_stats = {
        "queries": solver.stats["queries"] - before["queries"],
        "cached": solver.stats["cached"] - before["cached"],
        "unknown": solver.stats["unknown"] - before["unknown"],
        "rlimit": solver.stats["rlimit"] - before["rlimit"],
        "rlimit_max_query": solver.stats["rlimit_max"],
        "rlimit_limit": rlimit,
        "solver_seconds": round(solver.stats["seconds"] - before["seconds"], 2),
    }
    solver.stats["rlimit_max"] = max(before["rlimit_max"], solver.stats["rlimit_max"])
    return report


def progress_line(report: KernelReport, done: int, total: int) -> str:
    """One line per finished kernel: position, name, verdict, seconds (lowering + checks) and the
    slowest check."""
    verdict = "ERROR" if report.error else report.status.upper()
    slow = max(report.checks, key=lambda c: c.seconds, default=None)
    slowest = f"slowest {slow.name} {slow.seconds:.1f} s" if slow is not None else ""
    if report.error:
        slowest = report.error.splitlines()[0][:100]
    elif report.carried:
        slowest = "carried over (proof key and IR hash of its proved record)"
    w = len(str(total))
    return (f"[{done:{w}d}/{total}] {report.name:44s} {verdict:8s} {report.lower_seconds + report.verify_seconds:6.1f} s "
            f"(lower {report.lower_seconds:.1f}, checks {report.verify_seconds:.1f})  {slowest}")


@functools.lru_cache(maxsize=None)
def verifier_digest() -> str:
    """sha256 over the verifier's own source files (verify/**/*.py): any edit to a check, the
    model, the extraction or the solver setup changes it, whether or not VERSION was bumped.
    Read once a process (every proof key asks for it)."""
    import hashlib
    from pathlib import Path
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def proof_key(job: Job, func) -> str:
    """What a release job's verdict is a function of: the TileLang program before lowering (its
    printed script), the pass configs, the toolchain that lowers it (TileLang, TVM, the target),
    every input of the checks that is not IR (preconditions, derived variables, bank budget,
    monotone buffers, any_contents, distinct, the resource limit, strict, written_once), the verifier's sources
    and Z3's version. Lowering and the checks are deterministic, so two runs with one key reach
    one verdict; `python -m verify` carries a proved record over to a build whose key is the
    record's (and whose lowered IR hash it confirms) instead of proving it again."""
    import hashlib
    import json

    import z3
    from kda_kernels import buildkey

    from . import VERSION
    from .lowering import TARGET
    assert job.mutate is None and not job.only, "proof keys are for whole, unmutated jobs"
    inputs = {
        "program": hashlib.sha256(func.script().encode()).hexdigest(),
        "pass_configs": sorted((k, repr(v)) for k, v in job.pass_configs.items()),
        "toolchain": buildkey.toolchain(), "target": TARGET,
        "preconditions": list(job.preconditions), "derived": sorted((k, repr(v)) for k, v in job.derived.items()),
        "bank_budget": job.bank_budget, "monotone": sorted((k, list(v)) for k, v in job.monotone.items()),
        "release": job.release, "any_contents": job.any_contents, "distinct": list(job.distinct),
        "rlimit": job.rlimit, "default_rlimit": solver.DEFAULT_RLIMIT, "strict": job.strict,
        "written_once": list(job.written_once),
        "verifier": [VERSION, verifier_digest()], "z3": z3.get_full_version(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def carried_report(job: Job, prior: dict, key: str, ir_hash: str) -> KernelReport:
    """The report of a build whose proof key and lowered IR hash are a proved record's: its
    checks are that record's, nothing is asked of Z3 again."""
    from .report import CheckResult
    report = KernelReport(name=job.name, config=job.config, ir_hash=ir_hash, proof_key=key, carried=True)
    report.checks = [CheckResult(name=n, category=n.split(".")[0], status=PROVED,
                                 detail="carried over: proved for this proof key and IR hash by an earlier run")
                     for n in prior["checks_passed"]]
    report.solver_stats = {}
    return report


def verify_job(job: Job, keep=None, prior: dict = None) -> KernelReport:
    """Lowers and checks one job. prior: a proved manifest record of this build (proof_key,
    ir_hash, checks_passed); where the job's proof key and lowered IR hash are the record's, the
    record's verdict is carried over (carried_report) instead of running the checks."""
    from .lowering import Lowered  # noqa: F401
    report = KernelReport(name=job.name, config=job.config)
    phase = [""]
    try:
        lowered = _LOWERED.get(job.lower_key) if job.lower_key is not None else None
        if lowered is None:
            phase[0] = "building the kernel (its factory)"
            func = job.factory() if callable(job.factory) and not _is_prim_func(job.factory) else job.factory
            if job.release and job.mutate is None and not job.only:
                phase[0] = "the proof key"
                report.proof_key = proof_key(job, func)
            phase[0] = "lowering"
            lowered = lower(func, job.pass_configs, job.name)
            report.lower_seconds = round(lowered.seconds, 2)
            if job.lower_key is not None:
                _LOWERED[job.lower_key] = lowered
        from .ir import ir_hash
        phase[0] = "hashing the lowered IR"
        report.ir_hash = ir_hash(lowered.artifact)
        if (prior and report.proof_key and prior.get("status") == PROVED
                and prior.get("proof_key") == report.proof_key and prior.get("ir_hash") == report.ir_hash):
            carried = carried_report(job, prior, report.proof_key, report.ir_hash)
            carried.lower_seconds = report.lower_seconds
            return carried
        if job.mutate is not None:
            phase[0] = "the mutation"
            lowered = mutate.applied(lowered, job.mutate)
            report.ir_hash = ""
        if keep is not None:
            keep[job.name] = lowered
        verify_lowered(lowered, job, report, phase)
    except Exception as e:  # report, never crash the whole run
        where = f"in {phase[0]}: " if phase[0] else ""
        report.error = f"{where}{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
    return report


def _is_prim_func(x) -> bool:
    from .tir import tirx
    return isinstance(x, tirx.PrimFunc)
