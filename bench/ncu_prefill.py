"""One kda_prefill call inside a profiler range, for ncu --profile-from-start off: the kernels
the API picks at one shape (cu_seqlens, fp32 state in and out), after a warm-up call.

    ncu --profile-from-start off ... python bench/ncu_prefill.py H LEN[,LEN...] [HV]
"""
import sys

import torch


def main():
    from kda_kernels.reference import random_inputs
    from kda_tile import kda_prefill
    H = int(sys.argv[1])
    lens = [int(x) for x in sys.argv[2].split(",")]
    HV = int(sys.argv[3]) if len(sys.argv) > 3 else None
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int64)
    x = random_inputs(1, sum(lens), H, device="cuda", seed=1, cu_seqlens=cu, state_dtype=torch.float32, HV=HV)

    def call():
        return kda_prefill(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log=x["A_log"], dt_bias=x["dt_bias"],
                           initial_state=x["initial_state"], output_final_state=True, cu_seqlens=x["cu_seqlens"])
    with torch.inference_mode():
        call()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        call()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
