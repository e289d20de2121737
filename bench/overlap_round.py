"""K1 beside K2 (issue 13): can K1's chunks for window w + 1 run on the SMs that K2's chain leaves
idle while K2 runs window w? Measured before any kernel is changed, through TileLang's JIT with the
released K1 and K2 configurations, at H96 1x8192 (one sequence, so a window of the token axis is a
contiguous view of every input and of o).

    python bench/overlap_round.py [W ...]      # window sizes in chunks of 16 tokens (default 16 32 64 128)

Rows (ms, triton do_bench median; the multi-launch rows are one CUDA graph each, so the host's
launch rate does not enter):
  serial      K1 then K2 over the whole sequence (the released pair's order)
  concurrent  K1 on one stream and K2 on another, over independent workspaces (an upper bound on
              what overlapping the two can give)
  win W       windows of W chunks on one stream: K1(w), K2(w) with the fp32 state carried
              between windows (ping-pong buffers); workspace of one window
  pipe W      the same windows on two streams, K1(w + 1) beside K2(w); a ring of two windows'
              workspaces (K1(w) waits for K2(w - 2))
Each windowed form is first checked against the serial pair (o and the final state, relative
error against float64), outputs poisoned with NaN.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import k1_round  # noqa: E402
from kda_kernels.configs import K2Config  # noqa: E402
from kda_kernels.reference import kda_recurrent, rel_err  # noqa: E402

C = 16
T, H = 8192, 96
K2CFG = K2Config(varlen=False, initial_state="float32", final_state=True)


def k1_args(d, t0, t1, ws):
    sl = lambda x: x[:, t0:t1]  # noqa: E731
    return [sl(d["q"]), sl(d["k"]), sl(d["v"]), sl(d["g"]), sl(d["beta"]), d["A_log"], d["dt_bias"],
            -5.0, 128 ** -0.5] + list(ws.values())


def plan(d, W, h0, o, ht, ring, streams):
    """Launch list for windows of W chunks: returns a function that enqueues them."""
    k1 = k1_round.compiled(k1_round.k1_config(k1_round.RELEASED, False))
    k2 = k1_round.compiled(K2CFG)
    tw = W * C
    assert T % tw == 0, (T, W)
    nwin = T // tw
    states = [h0, torch.empty_like(h0), torch.empty_like(h0)]

    def go():
        cur = torch.cuda.current_stream()
        done_k1 = [torch.cuda.Event() for _ in range(nwin)]
        done_k2 = [torch.cuda.Event() for _ in range(nwin)]
        a, b = streams if streams else (cur, cur)
        a.wait_stream(cur)
        b.wait_stream(cur)
        for w in range(nwin):
            t0, t1 = w * tw, min(T, (w + 1) * tw)
            ws = ring[w % len(ring)]
            with torch.cuda.stream(a):
                if w >= len(ring):
                    a.wait_event(done_k2[w - len(ring)])
                k1(*k1_args(d, t0, t1, ws))
                done_k1[w].record(a)
            with torch.cuda.stream(b):
                b.wait_event(done_k1[w])
                src = states[0] if w == 0 else states[1 + (w - 1) % 2]
                dst = ht if w == nwin - 1 else states[1 + w % 2]
                k2(*ws.values(), src, o[:, t0:t1], dst)
                done_k2[w].record(b)
        cur.wait_stream(a)
        cur.wait_stream(b)
    return go


def graphed(fn):
    """fn captured as one CUDA graph (its replay), or fn itself where capture fails (reported)."""
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            fn()
    except Exception as e:  # timed eagerly then: the host's launch rate enters, so say so
        print(json.dumps(dict(graph_capture_failed=f"{type(e).__name__}: {str(e)[-200:]}")), flush=True)
        torch.cuda.synchronize()
        return fn
    return g.replay


def main():
    from triton.testing import do_bench
    Ws = [int(a) for a in sys.argv[1:]] or [16, 32, 64, 128]
    k1_round.prewarm([k1_round.k1_config(k1_round.RELEASED, False), K2CFG])
    d = k1_round.inputs(1, T, H, None, seed=11)
    h0 = torch.randn(1, H, 128, 128, device="cuda")
    ref_o, ref_ht = kda_recurrent(d["q"], d["k"], d["v"], d["g"], d["beta"], A_log=d["A_log"], dt_bias=d["dt_bias"],
                                  lower_bound=-5.0, initial_state=h0, output_final_state=True)
    side = (torch.cuda.Stream(), torch.cuda.Stream())
    rows = []

    def row(label, fn, o, ht):
        o.fill_(float("nan"))
        ht.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = max(rel_err(o.double(), ref_o), rel_err(ht.double(), ref_ht)) if o is not None else None
        ms = do_bench(fn, warmup=10, rep=200, return_mode="median")
        r = dict(label=label, ms=ms, err=err)
        rows.append(r)
        print(json.dumps(r), flush=True)

    # whole-sequence pair, and the two kernels side by side on independent workspaces
    NC = T // C
    ws_a, ws_b = k1_round.workspace(H, NC), k1_round.workspace(H, NC)
    o, ht = torch.empty_like(d["v"]), torch.empty_like(h0)
    row("serial", graphed(plan(d, NC, h0, o, ht, [ws_a], None)), o, ht)
    k1 = k1_round.compiled(k1_round.k1_config(k1_round.RELEASED, False))
    k2 = k1_round.compiled(K2CFG)
    k1(*k1_args(d, 0, T, ws_b))
    o2, ht2 = torch.empty_like(d["v"]), torch.empty_like(h0)

    def conc():
        cur = torch.cuda.current_stream()
        for s in side:
            s.wait_stream(cur)
        with torch.cuda.stream(side[1]):
            k2(*ws_b.values(), h0, o2, ht2)
        with torch.cuda.stream(side[0]):
            k1(*k1_args(d, 0, T, ws_a))
        for s in side:
            cur.wait_stream(s)
    ms_k1 = do_bench(graphed(lambda: k1(*k1_args(d, 0, T, ws_a))), warmup=10, rep=200, return_mode="median")
    ms_k2 = do_bench(graphed(lambda: k2(*ws_b.values(), h0, o2, ht2)), warmup=10, rep=200, return_mode="median")
    for lab, ms in (("K1 alone", ms_k1), ("K2 alone", ms_k2)):
        rows.append(dict(label=lab, ms=ms, err=None))
        print(json.dumps(rows[-1]), flush=True)
    ms_c = do_bench(graphed(conc), warmup=10, rep=200, return_mode="median")
    rows.append(dict(label="concurrent", ms=ms_c, err=None))
    print(json.dumps(rows[-1]), flush=True)
    for W in Ws:
        ring = [k1_round.workspace(H, W), k1_round.workspace(H, W)]
        mb = sum(x.numel() * x.element_size() for x in ring[0].values()) / 2 ** 20
        row(f"win {W} ({mb:.0f} MB)", graphed(plan(d, W, h0, o, ht, ring[:1], None)), o, ht)
        row(f"pipe {W} ({2 * mb:.0f} MB)", graphed(plan(d, W, h0, o, ht, ring, side)), o, ht)
    print(f"{'H96 1x8192, fixed, fp32 state in and out':44s} {'ms':>8s} {'err':>8s}")
    for r in rows:
        print(f"{r['label']:44s} {r['ms']:8.3f} " + ("" if r["err"] is None else f"{r['err']:8.1e}"))


if __name__ == "__main__":
    main()
