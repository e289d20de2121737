"""The model itself: preconditions that mean something, and constructs outside the encoding.

model.preconditions: every name in a precondition is a kernel variable (a misspelt name would
be a new unconstrained symbol), and the preconditions together with the launch can be met
(contradictory preconditions would make every check hold vacuously).
model.params: every tensor parameter is its own buffer (parameters that TileLang bound to one
buffer, annotated with one shared T.Tensor object, make a kernel read one tensor in place of
the others while every memory check still holds).
model.unsupported: constructs the encoding does not model (UNKNOWN; a kernel with any is not
proved).
"""
from __future__ import annotations

from ..report import FAILED, UNKNOWN, Finding, check_result

CATEGORY = "model"


def run(k, ctx, budget=None):
    out = [check_result("model.preconditions", CATEGORY, _preconditions(k, ctx),
                        f"{len(k.precondition_texts)} preconditions")]
    shared = getattr(k, "shared_params", [])
    fs = [Finding(check="model.params", status=FAILED,
                  message=f"parameters {', '.join(names)} are one buffer in the kernel (give each its own "
                          f"T.Tensor annotation): every access to any of them goes to one tensor's memory")
          for names in shared]
    out.append(check_result("model.params", CATEGORY, fs, "tensor parameters are distinct buffers"))
    if k.unsupported:
        fs = [Finding(check="model.unsupported", status=UNKNOWN, message=f"{why}: {text}")
              for text, why in k.unsupported]
        out.append(check_result("model.unsupported", CATEGORY, fs, f"{len(fs)} constructs outside the encoding"))
    return out


def _preconditions(k, ctx):
    findings = []
    for kind, e in k.precondition_errors:
        msg = (f"a precondition names {e!r}, which is not a variable of the kernel (its variables: "
               f"{', '.join(sorted(k.kernel_variables)) or 'none'})" if kind == "name"
               else f"precondition {e} cannot be read")
        findings.append(Finding(check="model.preconditions", status=FAILED, message=msg))
    res, m = ctx.solve(ctx.shape_facts() + ctx.block_facts() + ctx.thread_facts())
    if res == "unsat":
        findings.append(Finding(
            check="model.preconditions", status=FAILED,
            message="the preconditions (with the argument types and the launch) cannot all hold: "
                    "every check would be proved vacuously",
            counterexample={"preconditions": list(k.precondition_texts)}))
    elif res == "unknown":
        findings.append(Finding(check="model.preconditions", status=UNKNOWN,
                                message=f"satisfiability of the preconditions not decided ({m})"))
    return findings


__all__ = ["run"]
