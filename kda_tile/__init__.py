"""kda_tile: Kimi Delta Attention forward for NVIDIA Hopper, in TileLang."""
from .api import kda_prefill

__version__ = "0.1.0"
__all__ = ["kda_prefill", "__version__"]
