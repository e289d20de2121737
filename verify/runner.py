"""Verify kernels: lower, extract the model, run the four check families."""
from __future__ import annotations

import dataclasses
import time
import traceback
from dataclasses import dataclass, field

from . import solver
from .checks import FAMILIES
from .extract import extract
from .lowering import lower
from .report import KernelReport

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


def verify_lowered(lowered, job: Job, report: KernelReport) -> KernelReport:
    t0 = time.perf_counter()
    k = extract(lowered, job.preconditions, job.derived, job.monotone, name=job.name)
    ctx = solver.Ctx(k)
    for cat, mod in FAMILIES:
        if job.only and cat not in job.only:
            continue
        report.checks.extend(mod.run(k, ctx, job.bank_budget))
    from .checks import model
    report.checks.extend(model.run(k, ctx))
    from .guards import guarded_accesses
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
    return report


def verify_job(job: Job, keep=None) -> KernelReport:
    from .lowering import Lowered  # noqa: F401
    report = KernelReport(name=job.name, config=job.config)
    try:
        lowered = _LOWERED.get(job.lower_key) if job.lower_key is not None else None
        if lowered is None:
            func = job.factory() if callable(job.factory) and not _is_prim_func(job.factory) else job.factory
            lowered = lower(func, job.pass_configs, job.name)
            report.lower_seconds = round(lowered.seconds, 2)
            if job.lower_key is not None:
                _LOWERED[job.lower_key] = lowered
        from .ir import ir_hash
        report.ir_hash = ir_hash(lowered.artifact)
        if job.mutate is not None:
            dev = job.mutate(lowered.device_func)
            lowered = dataclasses.replace(lowered, device_func=dev, device_script=dev.script())
            report.ir_hash = ""
        if keep is not None:
            keep[job.name] = lowered
        verify_lowered(lowered, job, report)
    except Exception as e:  # report, never crash the whole run
        report.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
    return report


def _is_prim_func(x) -> bool:
    from .tir import tirx
    return isinstance(x, tirx.PrimFunc)
