"""kda_tile.kda_decode on the GPU, per decode step at H32 (HV = 32), pool P = 2N, random rows:

- ours: kda_tile.kda_decode (the released build through the generated host entry), device time
  per step (triton.testing.do_bench median) and host time per call (perf_counter_ns around each
  call, no sync inside the timed region, the queue drained every 32 calls outside it);
- fla: fla.ops.kda.fused_recurrent.fused_recurrent_kda_fwd in its pool mode (initial_state = the
  pool, ssm_state_indices, inplace_final_state, state_v_first) in the same process on the same
  inputs, after checking that both agree on one step from the same pool;
- cuDNN: a decode entry point of the cudnn frontend's linear_attention package if it has one
  (the output says which, or that there is none);
- copy: a device copy of the same state bytes (2 x N x HV x 128 x 128 x state bytes per step);
- floor: the device time of a trivial kernel (torch fill_ of one element), the launch floor.

    python bench/decode.py [--out DIR] [--quick]

Writes decode.json and decode.md to --out (default $OUT, else bench/results/); prints the table.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import kda_tile  # noqa: E402
from kda_kernels.reference import rel_err  # noqa: E402
from host_overhead import SYNC_EVERY, time_calls  # noqa: E402  (bench/'s per-call host timer)

H = HV = 32
NS = (1, 8, 64, 256, 1024)


def host_us(fn, iters=2000, warmup=200):
    return time_calls(fn, iters, warmup)["median_us"]


def cudnn_decode():
    """(name, callable maker) of a cuDNN frontend decode entry point, or (reason, None)."""
    try:
        import cudnn.linear_attention as cla
    except Exception as e:  # not installed, or no linear_attention package
        return f"no cuDNN frontend linear_attention ({type(e).__name__}: {e})", None
    names = sorted(n for n in dir(cla) if "decode" in n.lower() or "recurrent" in n.lower())
    if not names:
        return ("cudnn.linear_attention has no decode/recurrent entry point (exports: "
                + ", ".join(n for n in dir(cla) if not n.startswith("_")) + ")"), None
    return f"cudnn.linear_attention exposes {', '.join(names)}: not wired into this benchmark yet", None


def _inputs(N, state_dtype):
    """Fresh random token inputs, parameters, a pool of P = 2N rows, N distinct random rows."""
    gen = torch.Generator(device="cuda").manual_seed(N)
    P = 2 * N
    bf = torch.bfloat16
    rn = lambda *s: torch.randn(*s, generator=gen, device="cuda").to(bf)  # noqa: E731
    q, k, v, g, beta = rn(N, H, 128), rn(N, H, 128), rn(N, HV, 128), rn(N, HV, 128), rn(N, HV)
    A_log = torch.empty(HV, device="cuda").uniform_(0.0, 2.7, generator=gen)
    dt_bias = torch.randn(HV, 128, device="cuda", generator=gen) * 0.5
    pool = (torch.randn(P, HV, 128, 128, device="cuda", generator=gen) * 0.5).to(state_dtype)
    idx = torch.randperm(P, device="cuda", generator=gen)[:N].to(torch.int64)
    out = torch.empty(N, HV, 128, device="cuda", dtype=bf)
    kw = dict(A_log=A_log, dt_bias=dt_bias, state_pool=pool, state_indices=idx)
    ours = lambda: kda_tile.kda_decode(q, k, v, g, beta, **kw)  # noqa: E731
    ours_out = lambda: kda_tile.kda_decode(q, k, v, g, beta, **kw, out=out)  # noqa: E731
    return (q, k, v, g, beta), kw, out, ours, ours_out


def host_again(r):
    """Row r's host times once more, on fresh inputs (main() calls it in reverse row order, so
    that a row's host time can be told from the history before it)."""
    _, _, _, ours, ours_out = _inputs(r["N"], getattr(torch, r["state"]))
    ours()
    r["ours_host_again_us"] = host_us(ours)
    r["ours_out_host_again_us"] = host_us(ours_out)


def case(N, state_dtype, do_bench, fla_fwd):
    (q, k, v, g, beta), kw, _, ours, ours_out = _inputs(N, state_dtype)
    pool, idx, A_log, dt_bias = kw["state_pool"], kw["state_indices"], kw["A_log"], kw["dt_bias"]
    P = 2 * N
    r = dict(N=N, H=H, HV=HV, P=P, state=str(state_dtype)[6:])
    p0 = pool.clone()
    o_ours = ours().clone()
    pool_ours = pool.clone()
    pool.copy_(p0)
    if fla_fwd is not None:
        pool_fla = p0.clone()
        flat = [t.reshape(1, N, *t.shape[1:]) for t in (q, k, v, g, beta)]
        cu = torch.arange(N + 1, device="cuda", dtype=torch.int64)

        def fla():
            return fla_fwd(*flat, A_log=A_log, dt_bias=dt_bias, initial_state=pool_fla, inplace_final_state=True,
                           state_v_first=True, cu_seqlens=cu, ssm_state_indices=idx, use_qk_l2norm_in_kernel=True,
                           use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, lower_bound=-5.0)
        o_fla = fla()[0].reshape(N, HV, 128)
        r["agree_o_vs_fla"] = rel_err(o_fla.float(), o_ours.float())
        r["agree_pool_vs_fla"] = rel_err(pool_fla.float(), pool_ours.float())
        r["fla_us"] = do_bench(fla, warmup=25, rep=200, return_mode="median") * 1e3
        r["fla_host_us"] = host_us(fla, iters=500, warmup=50)
    state_bytes = 2 * N * HV * 128 * 128 * pool.element_size()
    # The copy moves state_bytes in all: it reads half of them and writes the other half.
    src = torch.empty(state_bytes // 2 // 4, device="cuda")
    dst = torch.empty_like(src)
    r["ours_us"] = do_bench(ours, warmup=25, rep=200, return_mode="median") * 1e3
    r["ours_out_us"] = do_bench(ours_out, warmup=25, rep=200, return_mode="median") * 1e3
    r["copy_us"] = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median") * 1e3
    r["ours_GBps"] = state_bytes / (r["ours_us"] * 1e-6) / 1e9
    r["copy_GBps"] = state_bytes / (r["copy_us"] * 1e-6) / 1e9
    r["pct_of_copy"] = 100.0 * r["copy_us"] / r["ours_us"]
    r["ours_host_us"] = host_us(ours)
    r["ours_out_host_us"] = host_us(ours_out)
    if "fla_us" in r:
        r["fla_vs_ours"] = r["fla_us"] / r["ours_us"]
    return r


def _f(x):
    return "-" if x is None else f"{x:.2f}"


def report(rows, meta) -> str:
    """The markdown table of decode.md (rows as case() returns them)."""
    floor_us, floor_note, cudnn_note = meta["launch_floor_us"], meta["launch_floor"], meta["cudnn"]
    lines = [f"kda_decode at H{H} (HV = {HV}), pool P = 2N, random rows; {meta['gpu']}; device times are "
             f"do_bench medians, host times perf_counter_ns medians per call (queue drained every {SYNC_EVERY}).",
             f"Launch floor {floor_us:.2f} us ({floor_note}). cuDNN: {cudnn_note}.", "",
             "Host again: the same rows timed once more at the end, in reverse order.", "",
             "| state | N | ours us | ours (out=) us | fla us | fla/ours | copy us | GB/s | % of copy | "
             "host us (ours / out= / fla) | host again (ours / out=) | o vs fla |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        agree = f"{r['agree_o_vs_fla']:.1e}" if r.get("agree_o_vs_fla") is not None else "-"
        lines.append(f"| {r['state']} | {r['N']} | {_f(r['ours_us'])} | {_f(r['ours_out_us'])} | {_f(r.get('fla_us'))} | "
                     f"{_f(r.get('fla_vs_ours'))} | {_f(r['copy_us'])} | {r['ours_GBps']:.0f} | {r['pct_of_copy']:.0f} | "
                     f"{_f(r['ours_host_us'])} / {_f(r['ours_out_host_us'])} / {_f(r.get('fla_host_us'))} | "
                     f"{_f(r.get('ours_host_again_us'))} / {_f(r.get('ours_out_host_again_us'))} | {agree} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or str(Path(__file__).parent / "results"))
    ap.add_argument("--quick", action="store_true", help="N = 1 and 64 only")
    args = ap.parse_args()
    from triton.testing import do_bench
    os.environ.setdefault("FLA_FLASH_KDA", "0")
    try:
        from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd as fla_fwd
    except Exception as e:
        print(f"fla: not available ({type(e).__name__}: {e})")
        fla_fwd = None
    cudnn_note, _ = cudnn_decode()
    print(f"cuDNN: {cudnn_note}", flush=True)
    one = torch.zeros(1, device="cuda")
    floor_us = do_bench(lambda: one.fill_(1.0), warmup=25, rep=200, return_mode="median") * 1e3
    floor_note = "do_bench median of a one-element torch fill_ kernel"
    print(f"launch floor: {floor_us:.2f} us ({floor_note})", flush=True)
    rows = []
    with torch.inference_mode():
        for state_dtype in (torch.float32, torch.bfloat16):
            for N in ((1, 64) if args.quick else NS):
                r = case(N, state_dtype, do_bench, fla_fwd)
                rows.append(r)
                print(json.dumps(r), flush=True)
        for r in reversed(rows):
            host_again(r)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, launch_floor_us=floor_us,
                launch_floor=floor_note, cudnn=cudnn_note)
    (out / "decode.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    text = report(rows, meta)
    (out / "decode.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
