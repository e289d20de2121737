"""The float64 reference lives in kda_kernels.reference; this name keeps working."""
from kda_kernels.reference import *  # noqa: F401,F403
