"""The four check families. Each `run(kernel, ctx, budget)` returns a list of CheckResult."""
from . import banks, barriers, bounds, layout

FAMILIES = (("bounds", bounds), ("layout", layout), ("barriers", barriers), ("banks", banks))
