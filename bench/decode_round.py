"""The decode kernel (kda_kernels/decode.py) on the GPU, through TileLang's own JIT
launcher: correctness against the float64 reference, then time per step against fla's
fused_recurrent_kda in its serving mode (state pool + ssm_state_indices, updated in place).

    python bench/decode_round.py correctness   # 256 consecutive steps per case, <= 5e-3
    python bench/decode_round.py timing        # N = 1..1024 at H32, pool P = 2N, random rows
    python bench/decode_round.py smoke         # one case, one step (a hang costs seconds)

Correctness: fresh random inputs every step; o is poisoned with NaN before each call; padded
slots (index -1) must come back as zeros; pool rows no sequence owns must stay bit-identical.
Timing: triton do_bench medians; state bandwidth = 2 x N x HV x V x K x state bytes per step,
against a device copy of the same bytes.
"""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kda_kernels.decode import DecodeConfig, build_decode  # noqa: E402
from kda_kernels.reference import kda_decode, rel_err  # noqa: E402

TARGET = {"kind": "cuda", "arch": "sm_90a"}
_COMPILED = {}


def compiled(cfg):
    if cfg not in _COMPILED:
        import tilelang
        _COMPILED[cfg] = tilelang.compile(build_decode(cfg), target=TARGET, pass_configs=cfg.pass_configs())
    return _COMPILED[cfg]


def inputs(N, S, H, HV, gen, dev="cuda"):
    bf = torch.bfloat16

    def rn(*shape):
        return torch.randn(*shape, generator=gen, device=dev).to(bf)
    return dict(q=rn(N, S, H, 128), k=rn(N, S, H, 128), v=rn(N, S, HV, 128), g=rn(N, S, HV, 128), beta=rn(N, S, HV))


def pool_indices(N, P, gen, pad_every=5):
    rows = torch.randperm(P, generator=gen, device="cpu")[:N].to(torch.int64)
    rows[torch.arange(N) % pad_every == pad_every - 1] = -1
    return rows.cuda()


def case(N, S, H, HV, state_dtype, steps, fast=False, seed=0, **variant):
    cfg = DecodeConfig(state_dtype=state_dtype, fast_math=fast, **variant)  # S is a shape variable
    assert cfg.token_axis or S == 1
    kern = compiled(cfg)
    drop = (lambda t: t) if cfg.token_axis else (lambda t: t.squeeze(1))
    gen = torch.Generator(device="cuda").manual_seed(seed)
    P = 2 * N
    sdt = getattr(torch, state_dtype)
    A_log = torch.empty(HV, device="cuda").uniform_(0.0, 2.7, generator=gen)
    dt_bias = torch.randn(HV, 128, device="cuda", generator=gen) * 0.5
    pool = (torch.randn(P, HV, 128, 128, device="cuda", generator=gen) * 0.5).to(sdt)
    ref_pool = pool.double()
    idx = pool_indices(N, P, torch.Generator().manual_seed(seed))
    owned = torch.zeros(P, dtype=torch.bool, device="cuda")
    owned[idx[idx >= 0]] = True
    untouched = pool[~owned].clone()
    worst_o = 0.0
    pad_ok = True
    for step in range(steps):
        x = inputs(N, S, H, HV, gen)
        o = torch.full((N, S, HV, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
        kern(*(drop(x[n]) for n in ("q", "k", "v", "g", "beta")), A_log, dt_bias, idx, -5.0, 128 ** -0.5, pool,
             drop(o))
        ro, ref_pool = kda_decode(x["q"], x["k"], x["v"], x["g"], x["beta"], state_pool=ref_pool, state_indices=idx,
                                  A_log=A_log, dt_bias=dt_bias, lower_bound=-5.0)
        live = idx >= 0
        worst_o = max(worst_o, rel_err(o[live], ro[live]))
        pad_ok = pad_ok and bool((o[~live] == 0).all())
    torch.cuda.synchronize()
    err_pool = rel_err(pool[owned].double(), ref_pool[owned])
    same = bool(torch.equal(pool[~owned], untouched))
    return dict(case=f"N={N} S={S} H={H} HV={HV} {cfg.name}", steps=steps,
                err_o=worst_o, err_pool=err_pool, padded_zero=pad_ok, other_rows_untouched=same,
                ok=worst_o <= 5e-3 and err_pool <= 5e-3 and pad_ok and same)


def correctness(smoke=False):
    cases = [(7, 1, 4, 4, "float32", 4)] if smoke else [
        (1, 1, 4, 4, "float32", 256), (7, 1, 4, 4, "float32", 256), (64, 1, 2, 8, "float32", 256),
        (64, 1, 4, 4, "bfloat16", 256), (16, 4, 2, 8, "float32", 64), (33, 1, 4, 4, "float32", 64, True)]
    rows = []
    for i, c in enumerate(cases):
        t0 = time.perf_counter()
        r = case(*c[:6], fast=len(c) > 6 and c[6], seed=i)
        r["seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(r)
        print(json.dumps(r), flush=True)
    bad = [r for r in rows if not r["ok"]]
    print(f"decode correctness: {len(rows)} cases, {len(bad)} bad; worst o {max(r['err_o'] for r in rows):.2e}, "
          f"worst pool {max(r['err_pool'] for r in rows):.2e}")
    return rows


def timing():
    from triton.testing import do_bench
    os.environ.setdefault("FLA_FLASH_KDA", "0")
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd
    H = HV = 32
    rows = []
    for N in (1, 8, 64, 256, 1024):
        gen = torch.Generator(device="cuda").manual_seed(N)
        P = 2 * N
        x = inputs(N, 1, H, HV, gen)
        A_log = torch.empty(HV, device="cuda").uniform_(0.0, 2.7, generator=gen)
        dt_bias = torch.randn(HV, 128, device="cuda", generator=gen) * 0.5
        pool = torch.randn(P, HV, 128, 128, device="cuda", generator=gen) * 0.5
        idx = torch.randperm(P, device="cuda")[:N].to(torch.int64)
        o = torch.empty(N, 1, HV, 128, device="cuda", dtype=torch.bfloat16)
        kern = compiled(DecodeConfig())
        ours = lambda: kern(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log, dt_bias, idx, -5.0, 128 ** -0.5, pool, o)  # noqa: E731
        flat = {n: t.reshape(1, N, *t.shape[2:]) for n, t in x.items()}
        cu = torch.arange(N + 1, device="cuda", dtype=torch.int64)
        pool_fla = pool.clone()

        def fla():
            return fused_recurrent_kda_fwd(flat["q"], flat["k"], flat["v"], flat["g"], flat["beta"], A_log=A_log,
                                           dt_bias=dt_bias, initial_state=pool_fla, inplace_final_state=True,
                                           state_v_first=True, cu_seqlens=cu, ssm_state_indices=idx,
                                           use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                                           use_beta_sigmoid_in_kernel=True, lower_bound=-5.0)
        # agreement first (one step from the same pool)
        p0 = pool.clone()
        ours()
        o_ours = o.clone()
        pool_fla.copy_(p0)
        o_fla = fla()[0].reshape(N, 1, HV, 128)
        pool.copy_(p0)
        agree = rel_err(o_fla.float(), o_ours.float())
        state_bytes = 2 * N * HV * 128 * 128 * 4
        src = torch.empty(state_bytes // 8, device="cuda")
        dst = torch.empty_like(src)
        t_copy = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
        t_ours = do_bench(ours, warmup=25, rep=200, return_mode="median")
        t_fla = do_bench(fla, warmup=25, rep=200, return_mode="median")
        r = dict(N=N, H=H, HV=HV, P=P, ours_us=t_ours * 1e3, fla_us=t_fla * 1e3, copy_us=t_copy * 1e3,
                 ours_GBps=state_bytes / (t_ours * 1e-3) / 1e9, copy_GBps=state_bytes / (t_copy * 1e-3) / 1e9,
                 fla_vs_ours=t_fla / t_ours, agree_o_vs_fla=agree)
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"{'N':>5} {'ours us':>9} {'fla us':>9} {'copy us':>9} {'ours GB/s':>10} {'% of copy':>9} {'fla/ours':>8}")
    for r in rows:
        print(f"{r['N']:>5} {r['ours_us']:>9.2f} {r['fla_us']:>9.2f} {r['copy_us']:>9.2f} {r['ours_GBps']:>10.0f} "
              f"{100 * r['ours_GBps'] / r['copy_GBps']:>8.0f}% {r['fla_vs_ours']:>8.2f}")
    return rows


# bf16 and fp32 pools: value-block width, threads, programs per SM the registers must allow
SWEEP = [dict(block_v=32, min_blocks=mb) for mb in (5, 6, 8)] + [
    dict(block_v=16, min_blocks=8), dict(block_v=16, min_blocks=12), dict(block_v=64, min_blocks=4)]


# one-token builds, narrower value blocks for few sequences (more programs, shorter rows)
SWEEP_SMALL_N = [dict(block_v=bv, min_blocks=mb, token_axis=False) for bv, mb in ((32, 8), (16, 8), (16, 12), (8, 12))]


# fp32 pools: the value-block width of both released forms (session 12), at every N of bench/decode.py
SWEEP_F32 = [dict(block_v=bv, min_blocks=8, token_axis=ta) for ta in (False, True) for bv in (32, 16)]


def sweep(variants=None, Ns=(1, 64, 1024), states=("bfloat16", "float32")):
    """Each variant: 8 steps against the reference at N = 64 (and the one-token form), then
    do_bench medians at Ns (H32, P = 2N) against a copy of the state bytes."""
    from triton.testing import do_bench
    H = HV = 32
    rows = []
    variants = variants or SWEEP + [dict(block_v=32, min_blocks=8, token_axis=False)]
    one = torch.zeros(1, device="cuda")
    floor = do_bench(lambda: one.fill_(1.0), warmup=25, rep=200, return_mode="median") * 1e3
    print(f"launch floor {floor:.2f} us", flush=True)
    for sd in states:
        for i, var in enumerate(variants):
            cfg = DecodeConfig(state_dtype=sd, **var)
            t0 = time.perf_counter()
            try:
                c = case(64, 1, 4, 8, sd, 8, seed=i, **var)
            except Exception as e:  # a variant that does not compile or launch is a row, not the end
                print(json.dumps(dict(variant=cfg.name, var=var, error=repr(e)[:300])), flush=True)
                continue
            r = dict(variant=cfg.name, var=var, state=sd, ok=c["ok"], err_o=c["err_o"], err_pool=c["err_pool"],
                     compile_and_check_s=round(time.perf_counter() - t0, 1))
            kern = compiled(cfg)
            esize = 4 if sd == "float32" else 2
            for N in Ns:
                gen = torch.Generator(device="cuda").manual_seed(N)
                x = inputs(N, 1, H, HV, gen)
                if not cfg.token_axis:
                    x = {n: t.squeeze(1) for n, t in x.items()}
                A_log = torch.empty(HV, device="cuda").uniform_(0.0, 2.7, generator=gen)
                dt_bias = torch.randn(HV, 128, device="cuda", generator=gen) * 0.5
                pool = (torch.randn(2 * N, HV, 128, 128, device="cuda", generator=gen) * 0.5).to(getattr(torch, sd))
                idx = torch.randperm(2 * N, device="cuda")[:N].to(torch.int64)
                o = torch.empty_like(x["v"])
                t = do_bench(lambda: kern(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log, dt_bias, idx, -5.0,
                                          128 ** -0.5, pool, o), warmup=25, rep=200, return_mode="median")
                nbytes = N * HV * 128 * 128 * esize     # the state once; a step reads and writes it
                src = torch.empty(nbytes // 4, device="cuda")
                dst = torch.empty_like(src)
                tc = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
                r[f"N{N}_us"] = round(t * 1e3, 2)
                r[f"N{N}_copy_pct"] = round(100 * tc / t, 1)
            rows.append(r)
            print(json.dumps(r), flush=True)
    print(f"{'variant':<34} {'ok':>3} " + " ".join(f"{'N' + str(N) + ' us':>9} {'%copy':>6}" for N in Ns))
    for r in rows:
        print(f"{r['variant'] + ' mb' + str(r['var'].get('min_blocks')):<34} {'y' if r['ok'] else 'N':>3} "
              + " ".join(f"{r[f'N{N}_us']:>9.2f} {r[f'N{N}_copy_pct']:>6.1f}" for N in Ns))
    return rows


def ncu():
    """One launch of each released decode configuration's one-token build at N = NCU_N (default
    1024), H32, for `ncu -k regex:kda_decode` (the device_round.sh `decode_api` mode); at N = 1 also
    one one-element fill_, do_bench's launch floor."""
    from kda_kernels.registry import decode_block_v
    H = HV = 32
    N = int(os.environ.get("NCU_N", "1024"))
    if N == 1:
        torch.zeros(1, device="cuda").fill_(1.0)
    for sd in ("bfloat16", "float32"):
        cfg = DecodeConfig(state_dtype=sd, token_axis=False, block_v=decode_block_v(sd, False))
        kern = compiled(cfg)
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = {n: t.squeeze(1) for n, t in inputs(N, 1, H, HV, gen).items()}
        A_log, dt_bias = torch.zeros(HV, device="cuda"), torch.zeros(HV, 128, device="cuda")
        pool = torch.randn(2 * N, HV, 128, 128, device="cuda", generator=gen).to(getattr(torch, sd))
        idx = torch.randperm(2 * N, device="cuda")[:N].to(torch.int64)
        o = torch.empty_like(x["v"])
        kern(x["q"], x["k"], x["v"], x["g"], x["beta"], A_log, dt_bias, idx, -5.0, 128 ** -0.5, pool, o)
        torch.cuda.synchronize()
    return []


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "smoke"
    out = Path(os.environ.get("OUT", "/tmp"))
    rows = {"smoke": lambda: correctness(smoke=True), "correctness": correctness, "timing": timing, "sweep": sweep, "ncu": ncu,
            "sweep_small_n": lambda: sweep(SWEEP_SMALL_N, (1, 8, 64)),
            "sweep_f32": lambda: sweep(SWEEP_F32, (1, 8, 64, 256, 1024), ("float32",))}[what]()
    (out / f"decode_{what}.json").write_text(json.dumps(rows, indent=1))
