"""K1 beside resident chains (the one number a grid-level fused forward rests on; session 22,
prepared, not run).

A grid-level fused forward would keep K2's chains resident (one program a head, launched first)
and run K1's programs on what the chains leave of each SM, passing chunks through a bounded ring
in L2 instead of a whole-sequence workspace (issue 13's <= 64 MB). It pays only if K1 keeps most
of its throughput beside the chains: each chain holds a 128 x 128 fp32 state (16K registers, a
quarter of an SM's file) and K2's program 112 KB of shared memory at 32-token chunks with two
consumers. Session 13's overlap_round ran the two side by side inside one CUDA graph, where K1's
programs took every slot first (`bench/NOTES.md`, round 13a). Here K2 goes first on a
high-priority stream, eagerly, then K1 on a low-priority one, over independent workspaces.

    python bench/coresident.py [H [T [PAIRS]]]   # default H96 T8192 c2,16; one sequence (varlen builds)

PAIRS: comma-separated keys of PAIRS (c2, 32, 32m2, 16, 32s5, 32s6m1). Session 27 asks it where K2's chains leave SMs
idle (H32 1x32768: 64 chains on 132 SMs), the number a pipeline of time slabs rests on.

    python bench/coresident.py passA [H [T]]     # default H8 T65536: the split's K1 beside its pass A

passA (session 39): the sequence split's 32-token K1 beside its pass A (the released plan's L,
two consumers, lean identity rows), pass A first on the high-priority stream, over independent
workspaces; the number a K1 that hands pass A its chunks through flags rests on (bench/NOTES.md,
session 39's "Next"). Pass A's maps after the side-by-side run are checked bit for bit against
its run alone.

Rows (ms, median of 30 event-timed runs after one untimed: stage_times.event_ms): K1 alone, K2 alone, K2 then K1 side by
side, and the sum. The released 32-token K1 and the 32-token K2 with two consumers (one program
a head), and the released 16-token pair.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import k1_round  # noqa: E402
from stage_times import event_ms  # noqa: E402
from kda_tile import _launch  # noqa: E402
from kda_kernels.configs import K2Config  # noqa: E402

PAIRS = {"c2": ("32-token, K2 two consumers", k1_round.RELEASED_CH32,
                 K2Config(varlen=True, u0_in_k2=True, chunk=32, consumers=2, min_blocks=1)),
         "32": ("32-token (released)", k1_round.RELEASED_CH32,
                K2Config(varlen=True, u0_in_k2=True, chunk=32, min_blocks=1)),
         # the 32-token K2 as released until session 29 (two programs' registers an SM)
         "32m2": ("32-token, K2 min_blocks 2", k1_round.RELEASED_CH32,
                  K2Config(varlen=True, u0_in_k2=True, chunk=32)),
         "16": ("16-token (released)", k1_round.RELEASED, K2Config(varlen=True, u0_in_k2=True)),
         # session 29: the ring's depth, and the chain's SM to itself (min_blocks 1 takes every
         # register, so no K1 program shares a chain's SM: released since)
         "32s5": ("32-token, K2 5 slots", k1_round.RELEASED_CH32,
                  K2Config(varlen=True, u0_in_k2=True, chunk=32, stages=5)),
         "32s6m1": ("32-token, K2 6 slots, SM alone", k1_round.RELEASED_CH32,
                    K2Config(varlen=True, u0_in_k2=True, chunk=32, stages=6, min_blocks=1))}


def pass_a_beside_k1(H=8, T=65536):
    import os
    os.environ.setdefault("SPLIT_CHUNK", "32")
    import split_round
    from kda_kernels.configs import split_plan
    L, G = split_plan(1, T, H, split_round.CH)
    k1cfg = k1_round.k1_config(split_round.K1_SPEC, True)
    k1_round.prewarm([k1cfg, split_round.k2(split_round.NWS[0], split_round.LEANS[0], mode="map")])
    d = k1_round.inputs(1, T, H, [T], seed=5)
    s_hi = torch.cuda.Stream(priority=-1)
    s_lo = torch.cuda.Stream(priority=0)
    go1, ws_a = k1_round.run_k1(split_round.K1_SPEC, d)     # K1 into its own workspace
    go1b, ws_b = k1_round.run_k1(split_round.K1_SPEC, d)    # pass A's workspace, written once
    go1b()
    go_a = split_round.split_calls(d, ws_b, L, None, nw=split_round.NWS[0], lean=split_round.LEANS[0])[0]
    go_a()
    torch.cuda.synchronize()
    ref = go_a.maps.clone()

    def both():
        cur = torch.cuda.current_stream()
        s_hi.wait_stream(cur)
        s_lo.wait_stream(cur)
        with torch.cuda.stream(s_hi):
            go_a()
        with torch.cuda.stream(s_lo):
            go1()
        cur.wait_stream(s_hi)
        cur.wait_stream(s_lo)
    go_a.maps.fill_(float("nan"))
    both()
    torch.cuda.synchronize()
    r = dict(H=H, T=T, L=L, G=G, same_maps=bool(torch.equal(go_a.maps, ref)),
             k1=event_ms(go1, 30), pass_a=event_ms(go_a, 30), both=event_ms(both, 30))
    r["sum"] = r["k1"] + r["pass_a"]
    print(json.dumps(r), flush=True)
    print(f"{'H%d 1x%d (L %d, G %d)' % (H, T, L, G):28s} {'K1':>7s} {'pass A':>7s} {'sum':>7s} {'side by side':>13s} maps")
    print(f"{'':28s} {r['k1']:7.3f} {r['pass_a']:7.3f} {r['sum']:7.3f} {r['both']:13.3f} "
          + ("same" if r["same_maps"] else "DIFFER"))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "passA":
        return pass_a_beside_k1(*(int(x) for x in sys.argv[2:4]))
    H = int(sys.argv[1]) if len(sys.argv) > 1 else 96
    T = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
    pairs = [PAIRS[x] for x in (sys.argv[3] if len(sys.argv) > 3 else "c2,16").split(",")]
    k1_round.prewarm([k1_round.k1_config(spec, True) for _, spec, _ in pairs] + [k2 for _, _, k2 in pairs])
    d = k1_round.inputs(1, T, H, [T], seed=5)
    s_hi = torch.cuda.Stream(priority=-1)   # lower is higher; torch takes -1 (high) and 0 (low)
    s_lo = torch.cuda.Stream(priority=0)
    rows, ref_o = [], None
    for label, spec, k2cfg in pairs:
        k1cfg = k1_round.k1_config(spec, True)
        ch = k1cfg.chunk
        NC = _launch.workspace_slots(1, T, 1, True, ch)
        ws_a, ws_b = k1_round.workspace(H, NC, True, ch), k1_round.workspace(H, NC, True, ch)
        named = dict(d, cu_seqlens=d["cu"], lower_bound=-5.0, scale=128 ** -0.5)
        k1 = k1_round.compiled(k1cfg)
        k2 = k1_round.compiled(k2cfg)
        a1 = k1_round.args_for(k1cfg, dict(named, **ws_a))
        o = torch.empty_like(d["v"])
        a2 = k1_round.args_for(k2cfg, dict(ws_b, v=d["v"], cu_seqlens=d["cu"], o=o))
        k1(*k1_round.args_for(k1cfg, dict(named, **ws_b)))   # K2's workspace, written once
        torch.cuda.synchronize()

        def both():
            cur = torch.cuda.current_stream()
            s_hi.wait_stream(cur)
            s_lo.wait_stream(cur)
            with torch.cuda.stream(s_hi):
                k2(*a2)
            with torch.cuda.stream(s_lo):
                k1(*a1)
            cur.wait_stream(s_hi)
            cur.wait_stream(s_lo)
        o.fill_(float("nan"))
        k2(*a2)
        torch.cuda.synchronize()
        if ref_o is None:
            ref_o = o.clone()
        r = dict(pair=label, H=H, T=T, same_o_as_first=bool(torch.equal(o, ref_o)),
                 k1=event_ms(lambda: k1(*a1), 30), k2=event_ms(lambda: k2(*a2), 30), both=event_ms(both, 30))
        r["sum"] = r["k1"] + r["k2"]
        rows.append(r)
        print(json.dumps(r), flush=True)
    print(f"{'pair (H%d 1x%d)' % (H, T):32s} {'K1':>7s} {'K2':>7s} {'sum':>7s} {'side by side':>13s} o")
    for r in rows:
        print(f"{r['pair']:32s} {r['k1']:7.3f} {r['k2']:7.3f} {r['sum']:7.3f} {r['both']:13.3f} "
              + ("same" if r["same_o_as_first"] else "DIFFERS"))


if __name__ == "__main__":
    main()
