"""K2's programs on the H200 as a small event simulation: launch order as the grid gives it today
(the sequence fastest, then the head block) against longest sequence first (issue 9's "programs
run longest-first"; not built). It predicts the gain before a kernel is written.

    python bench/lpt_sim.py

Model: 132 SMs, two K2 programs an SM (25% occupancy, 256 threads and 47.6 KB each); a program is
its sequence's 16-token chunks plus a prologue (state load and ring fill, PRO us), one chunk step
taking STEP[k] us while k programs share the SM (0.85 with two, bench/NOTES.md session 15; 0.60
with one, between session 15's 0.55 and session 3's 0.64); a freed slot takes the next program in
launch order on the SM holding the fewest (the block scheduler's breadth-first fill). Calibration:
H96 1x8192 0.438 ms against 0.435 measured (K2 alone), H96 16x1024 0.687 against 0.69-0.74.
"""
SM, SLOTS = 132, 2
STEP = {1: 0.60, 2: 0.85}
PRO = 2.0

SHAPES = [(96, [8192]), (96, [1300, 547, 2048, 963, 271, 3063]), (64, [1300, 547, 2048, 963, 271, 3063]),
          (96, [1024] * 16), (96, [1024] * 8), (32, [100, 5000, 300, 20000, 7368]), (96, [4000, 100, 100, 3992])]


def simulate(progs):
    """Makespan in us of programs (chunk counts, in launch order)."""
    remaining, on_sm = {}, [[] for _ in range(SM)]
    t, qi = 0.0, 0

    def dispatch():
        nonlocal qi
        while qi < len(progs):
            best = min(range(SM), key=lambda s: (len(on_sm[s]), s))
            if len(on_sm[best]) >= SLOTS:
                return
            remaining[qi] = progs[qi] + PRO / STEP[1]
            on_sm[best].append(qi)
            qi += 1
    dispatch()
    while any(on_sm):
        dt = min(remaining[p] * STEP[len(s)] for s in on_sm for p in s)
        t += dt
        for s in on_sm:
            r = STEP[len(s)] if s else 1
            for p in list(s):
                remaining[p] -= dt / r
                if remaining[p] <= 1e-9:
                    s.remove(p)
        dispatch()
    return t


def programs(H, lens, longest_first, C=16):
    chunks = [-(-n // C) for n in lens]
    order = [chunks[n] for _ in range(2 * H) for n in range(len(lens))]
    return sorted(order, reverse=True) if longest_first else order


def main():
    print(f"{'shape':34s} {'today ms':>9s} {'longest first':>14s} {'ratio':>6s}")
    for H, lens in SHAPES:
        a, b = simulate(programs(H, lens, False)), simulate(programs(H, lens, True))
        name = f"H{H} " + (f"{len(lens)}x{lens[0]}" if len(set(lens)) == 1 else str(lens))
        print(f"{name:34s} {a / 1e3:9.3f} {b / 1e3:14.3f} {b / a:6.3f}")


if __name__ == "__main__":
    main()
