"""Jobs for the command line, runnable in worker processes (spawn needs importable functions)."""
from __future__ import annotations

import dataclasses
import importlib.util
import multiprocessing as mp
import os
import sys
from pathlib import Path


def _registry_job(name: str):
    from kda_kernels import registry
    return build_job(registry.BY_NAME[name])


def build_job(b):
    """The job that proves a kda_kernels Build as a release is proved (its config's
    preconditions, derived shape variables, bank budget; any cu_seqlens contents), whether or not
    the registry releases it."""
    from kda_kernels import registry

    from .runner import Job
    cfg = b.config
    return Job(name=b.name, factory=b.prim_func, pass_configs=registry.pass_configs(b),
               preconditions=list(cfg.preconditions()), derived=dict(cfg.derived_vars()),
               bank_budget=int(getattr(cfg, "bank_conflict_budget", 1)), config=b.config_dict(),
               strict=_strict(), release=True, any_contents=True,
               distinct=tuple(cfg.distinct()) if hasattr(cfg, "distinct") else (),
               rlimit=int(getattr(cfg, "verify_rlimit", 0)),
               written_once=tuple(cfg.written_once()) if hasattr(cfg, "written_once") else ())


def _strict() -> bool:
    return os.environ.get("KDA_VERIFY_STRICT") == "1"


def load_module(path: str):
    path = str(Path(path).resolve())
    name = "verify_user_" + Path(path).stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def module_jobs(path: str):
    """Jobs for every kernel of a user module.

    KERNELS: name -> @T.prim_func or zero-argument factory (required)
    PRECONDITIONS: name -> list of python-expression strings over shape variables
    BANK_BUDGET: name -> worst accepted bank-conflict degree (default 1: conflict-free)
    PASS_CONFIGS: name -> TileLang pass configs used to lower it (default none)
    MONOTONE: buffer name -> (length var, last value var), for cu_seqlens-like inputs
    ANY_CONTENTS: kernels whose memory safety must not rest on MONOTONE (bounds.any_contents)
    DISTINCT: buffers whose non-negative entries are pairwise distinct (state indices)
    WRITTEN_ONCE: name -> global output buffers each byte of which at most one store execution
        writes (barriers.written_once)
    RLIMIT: name -> Z3 resource units a query of that kernel may take, where more than the default
        (solver.RLIMIT) is needed; a verdict stays a function of the query alone
    """
    from .runner import MONOTONE, Job
    mod = load_module(path)
    kernels = getattr(mod, "KERNELS", None)
    if not isinstance(kernels, dict):
        raise SystemExit(f"{path}: no KERNELS dict")
    pre = getattr(mod, "PRECONDITIONS", {}) or {}
    budget = getattr(mod, "BANK_BUDGET", {}) or {}
    passes = getattr(mod, "PASS_CONFIGS", {}) or {}
    mono = getattr(mod, "MONOTONE", None)
    mutations = getattr(mod, "MUTATIONS", {}) or {}
    strict = set(getattr(mod, "STRICT", ()) or ())     # kernels whose warnings are errors
    any_contents = set(getattr(mod, "ANY_CONTENTS", ()) or ())
    distinct = tuple(getattr(mod, "DISTINCT", ()) or ())
    rlimits = getattr(mod, "RLIMIT", {}) or {}
    once = getattr(mod, "WRITTEN_ONCE", {}) or {}
    known = set(kernels) | set(mutations)
    for table, entries in (("PRECONDITIONS", pre), ("BANK_BUDGET", budget), ("PASS_CONFIGS", passes),
                           ("STRICT", strict), ("ANY_CONTENTS", any_contents), ("RLIMIT", rlimits),
                           ("WRITTEN_ONCE", once)):
        unknown = sorted(set(entries) - known)
        if unknown:
            raise SystemExit(f"{path}: {table} names {', '.join(map(repr, unknown))}, not kernels of KERNELS "
                             f"or MUTATIONS ({', '.join(sorted(known))})")
    for name, (base, _) in mutations.items():
        if base not in kernels:
            raise SystemExit(f"{path}: MUTATIONS[{name!r}] mutates {base!r}, not a kernel of KERNELS")
    jobs = []
    for name, fac in kernels.items():
        jobs.append(Job(name=name, factory=fac, pass_configs=dict(passes.get(name, {})),
                        preconditions=list(pre.get(name, [])), derived={},
                        bank_budget=int(budget.get(name, 1)),
                        monotone=dict(mono) if mono is not None else dict(MONOTONE),
                        lower_key=(path, name), strict=_strict() or name in strict,
                        any_contents=name in any_contents, distinct=distinct,
                        rlimit=int(rlimits.get(name, 0)), written_once=tuple(once.get(name, ()))))
    # MUTATIONS: name -> (kernel name in KERNELS, function rewriting its lowered device PrimFunc)
    for name, (base, fn) in mutations.items():
        b = next(j for j in jobs if j.name == base)
        jobs.append(dataclasses.replace(b, name=name, mutate=fn,
                                        preconditions=list(pre.get(name, b.preconditions)),
                                        bank_budget=int(budget.get(name, b.bank_budget)),
                                        rlimit=int(rlimits.get(name, b.rlimit)),
                                        written_once=tuple(once.get(name, b.written_once))))
    return jobs


def _work(spec):
    """Worker entry: spec = ('registry', name[, prior]) | ('module', path, name); prior: the
    build's proved manifest record, whose verdict carries over where the proof key and the lowered
    IR hash match it (runner.verify_job)."""
    from .runner import verify_job
    if spec[0] == "registry":
        return verify_job(_registry_job(spec[1]), prior=spec[2] if len(spec) > 2 else None)
    return verify_job(next(j for j in module_jobs(spec[1]) if j.name == spec[2]))


def _hash_work(name):
    """(name, lowered IR hash, lowering seconds, proof key) of a released build."""
    from kda_kernels import registry

    from .ir import ir_hash
    from .lowering import lower
    from .runner import proof_key
    b = registry.BY_NAME[name]
    func = b.prim_func()
    key = proof_key(build_job(b), func)
    low = lower(func, registry.pass_configs(b), b.name)
    return name, ir_hash(low.artifact), low.seconds, key


def single_threaded():
    """TVM's thread pool only adds contention when every core already runs a worker
    (lowering a K2 build: 2.2 s with the pool, 1.7 s without, on 2 cores)."""
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _warm():
    single_threaded()
    import tilelang  # noqa: F401  (import once per worker, before the first job)
    from . import checks  # noqa: F401


def _indexed(arg):
    i, fn, spec = arg
    return i, fn(spec)


def run_parallel(fn, specs, jobs, on_result=None):
    """Map fn over specs in `jobs` worker processes; results come back in the order of specs.
    `specs` may be a callable producing the list: the workers then import TileLang while the
    parent builds it. on_result(result, done, total) runs in the parent as each one finishes."""
    if jobs <= 1:
        specs = specs() if callable(specs) else specs
        out = []
        for s in specs:
            out.append(fn(s))
            if on_result is not None:
                on_result(out[-1], len(out), len(specs))
        return out
    ctx = mp.get_context("spawn")
    with ctx.Pool(processes=jobs, initializer=_warm) as pool:
        specs = specs() if callable(specs) else specs
        out = [None] * len(specs)
        done = 0
        for i, r in pool.imap_unordered(_indexed, [(i, fn, s) for i, s in enumerate(specs)], chunksize=1):
            out[i] = r
            done += 1
            if on_result is not None:
                on_result(r, done, len(specs))
        return out
