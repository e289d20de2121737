"""K1Config.short_out (session 32; released in 33 as registry stage "k1_short", proved by
`python -m verify` with the other released builds): sequences of at most one chunk as one kernel
that writes o = Mqk (Ab v) (and with short_ht the final state U0^T kr) and no workspace. Its
parameters and its name; its numbers are bench/short_round.py's (GPU), its routing
tests/test_api_short.py's."""
import pytest
import torch

from kda_kernels.configs import K1Config


def _cfg(varlen, ht=False):
    return K1Config(varlen=varlen, short_out=True, short_ht=ht, mqk_diag=True, rsqrt_nr=True, early_loads=True,
                    lean_prologue=True)


@pytest.mark.parametrize("ht", [False, True])
@pytest.mark.parametrize("varlen", [False, True])
def test_short_build_takes_o_and_no_workspace(varlen, ht):
    from kda_kernels.k1_prepare import build_k1
    f = build_k1(_cfg(varlen, ht))
    names = [f.buffer_map[p].name if p in f.buffer_map else p.name for p in f.params]
    assert names == ["q", "k", "v", "g", "beta", "A_log", "dt_bias"] + (["cu_seqlens"] if varlen else []) \
        + ["lower_bound", "scale", "o"] + (["ht"] if ht else [])
    assert _cfg(varlen, ht).name.startswith("k1_prepare_" + ("varlen" if varlen else "fixed") + "_short"
                                            + ("_ht" if ht else ""))


def test_workspace_builds_take_no_o():
    from kda_kernels.k1_prepare import build_k1
    f = build_k1(K1Config(varlen=True, skip_holes=True, mqk_diag=True, u0_in_k2=True, lean_prologue=True))
    names = {f.buffer_map[p].name for p in f.params if p in f.buffer_map}
    assert "o" not in names and {"Wk", "qd", "kr", "Ab", "Mqk", "gC"} <= names


def test_short_out_rejects_other_forms():
    from kda_kernels.k1_prepare import build_k1
    with pytest.raises(AssertionError, match="short_out"):
        build_k1(K1Config(varlen=True, short_out=True, u0_in_k2=True, lean_prologue=True))


@pytest.mark.parametrize("varlen", [False, True])
def test_pairwise_form_takes_the_short_signature(varlen):
    """short_chunks > 1 (the pairwise form, released with 4): the same parameters as the one-chunk builds, a
    name that says how many chunks, and fixed batches bounded by them."""
    from kda_kernels.k1_prepare import build_k1
    cfg = K1Config(varlen=varlen, short_out=True, short_ht=True, short_chunks=4, min_blocks=4, rsqrt_nr=True,
                   early_loads=True, lean_prologue=True)
    f = build_k1(cfg)
    names = [f.buffer_map[p].name if p in f.buffer_map else p.name for p in f.params]
    assert names == ["q", "k", "v", "g", "beta", "A_log", "dt_bias"] + (["cu_seqlens"] if varlen else []) \
        + ["lower_bound", "scale", "o", "ht"]
    assert "_short_ht_n4_" in cfg.name
    assert ("T <= 64" in cfg.preconditions()) == (not varlen)
    with pytest.raises(AssertionError, match="short_chunks"):
        build_k1(K1Config(varlen=varlen, short_chunks=4, u0_in_k2=True, lean_prologue=True))


def _pairwise_buffers(q, k, v, g, beta, *, A_log, dt_bias, cu_seqlens, n_max=4, lkr=False):
    """The pairwise kernel's dataflow (k1_prepare, short_chunks = n_max) in float64: krs and U as
    n_max x 16 rows, zero where no chunk has reached; chunk j writes kr_j into its krs rows first,
    forms P = Wk_j krs^T and Q = qd_j krs^T over all rows, U_j = U0_j - P U and o_j = Mqk_j U_j + Q U,
    then puts U_j into its U rows and decays the earlier krs rows by gC_j. Final state U^T krs.
    lkr (K1Config.last_kr_regs): krs and U keep n_max - 1 chunks' rows; the last chunk's kr goes to
    registers (zero for every other chunk) and each sequence's last chunk's U stays in v_s (zero
    where none ran); final state U^T krs + v_s^T kr_last."""
    from kda_kernels import reference as R
    tk = R._tokens(q, k, v, g, beta, gate_kind="safe", A_log=A_log, dt_bias=dt_bias, lower_bound=-5.0, scale=None,
                   cu_seqlens=cu_seqlens, use_qk_l2norm=True, use_beta_sigmoid=True)
    N, H, K, V, C = tk.N, tk.H, tk.K, v.shape[-1], R.CHUNK
    n_chunks, idx, take = R._chunk_rows(tk, C)
    assert n_chunks <= n_max
    NR = (n_max - 1 if lkr else n_max) * C
    krs = torch.zeros(N * H, NR, K, dtype=torch.float64)
    Ua = torch.zeros(N * H, NR, V, dtype=torch.float64)
    krl = torch.zeros(N * H, C, K, dtype=torch.float64)
    v_s = torch.zeros(N * H, C, V, dtype=torch.float64)
    o = torch.zeros(tk.dummy + 1, H, V, dtype=torch.float64)
    for j in range(n_chunks):
        b = take(tk.beta, j)
        kd, qd, kr, gC, _, A, Mqk = R._chunk_prepare(take(tk.q, j), take(tk.k, j), take(tk.g, j), b)
        Ab = A * b.unsqueeze(-2)
        rows = slice(j * C, (j + 1) * C)
        if j * C < NR:
            krs[:, rows] = kr
        krl = kr if lkr and j == n_max - 1 else torch.zeros_like(krl)
        P = (Ab @ kd) @ krs.transpose(-1, -2)
        Q = qd @ krs.transpose(-1, -2)
        Uj = Ab @ take(tk.v, j) - P @ Ua
        oj = Mqk @ Uj + Q @ Ua
        if j * C < NR:
            Ua[:, rows] = Uj
        ran = (idx[:, j] != tk.dummy).any(-1).repeat_interleave(H)      # rows of sequences with chunk j
        v_s[ran] = Uj[ran]
        krs[:, :j * C] *= gC.unsqueeze(-2)
        o.index_copy_(0, idx[:, j].reshape(-1), oj.reshape(N, H, C, V).transpose(1, 2).reshape(N * C, H, V))
    S = krs.transpose(-1, -2) @ Ua          # [N H, K, V]
    if lkr:
        S = S + krl.transpose(-1, -2) @ v_s
    return o[:tk.dummy].reshape(tk.B, tk.T, H, V), R._final_state(S, N, H, K, V)


@pytest.mark.parametrize("lkr", [False, True], ids=["all_rows", "last_kr_regs"])
@pytest.mark.parametrize("lens", [[64], [1, 0, 64, 17, 33, 16, 48, 63], [5, 40, 0]], ids=str)
def test_pairwise_dataflow_matches_the_recurrence(lens, lkr):
    """The kernel's order of buffer writes (kr_j in krs before P and Q, U_j after o_j, the decay
    last) gives the recurrence's o and final state: the algebra the GPU round checks in bf16. With
    last_kr_regs the last chunk's kr and U sit apart from krs and U, and sequences of fewer chunks
    add their last U against zero kr."""
    from kda_kernels.reference import kda_recurrent, random_inputs, rel_err
    cu = [0] + torch.tensor(lens).cumsum(0).tolist()
    x = random_inputs(1, cu[-1], 2, K=32, V=24, dtype=torch.float64, seed=sum(lens), cu_seqlens=cu)
    args = [x[n] for n in ("q", "k", "v", "g", "beta")]
    kw = dict(A_log=x["A_log"], dt_bias=x["dt_bias"], cu_seqlens=x["cu_seqlens"])
    o_ref, s_ref = kda_recurrent(*args, lower_bound=-5.0, output_final_state=True, **kw)
    o, s = _pairwise_buffers(*args, **kw, lkr=lkr)
    assert o_ref.norm() > 0.1 and s_ref.norm() > 0.1
    assert rel_err(o, o_ref) < 1e-10 and rel_err(s, s_ref) < 1e-10


def test_pairwise_rows_and_programs_an_sm():
    """The released pairwise builds (lean layout) keep three chunks' kr and U rows in shared memory
    (the last chunk's only matter to the state): their dynamic shared memory plus the 1 KB each
    block reserves fits four programs into an SM's 228 KB, as their registers (min_blocks 4) do.
    With the final state the last chunk's kr waits in registers (last_kr_regs, session 39; before
    it those builds kept all four chunks' rows and fit three)."""
    from host_codegen.spec import read_kernel
    from kda_kernels import registry
    sm_bytes, reserved = 228 * 1024, 1024
    for ht in (False, True):
        for varlen in (False, True):
            b = registry.find("k1_short", varlen=varlen, short_ht=ht, short_chunks=4)
            assert b.config.short_lean_rows and b.config.min_blocks == 4 and b.config.last_kr_regs == ht
            kind, smem = read_kernel(b).smem
            assert kind == "int"
            assert sm_bytes // (smem + reserved) == 4, (b.name, smem)


def _barriers_a_chunk(script: str) -> int:
    """Barriers one pass of the chunk loop (`for jc`) executes, from the lowered device script:
    each tvm_storage_sync inside the loop times the extents of the constant loops around it.
    None may sit under a condition on jc (verify orders chunks by equal barrier counts)."""
    import re
    stack, total, last_if = [], 0, {}
    for line in script.splitlines():
        if not line.strip():
            continue
        ind, t = len(line) - len(line.lstrip()), line.strip()
        while stack and stack[-1][0] >= ind:
            stack.pop()
        m = re.match(r"for (\w+) in (?:T\.unroll|range|T\.serial)\((\d+)\)", t)
        if t.startswith("for jc"):
            stack.append((ind, 1, "jc"))
        elif m:
            stack.append((ind, int(m.group(2)), m.group(1)))
        elif t.startswith("for "):
            stack.append((ind, 1, "?"))
        elif t.startswith("if "):
            last_if[ind] = "if jc" if re.search(r"\bjc\b", t) else "if"
            stack.append((ind, 1, last_if[ind]))
        elif t.startswith("else"):
            stack.append((ind, 1, last_if.get(ind, "if")))
        elif "tvm_storage_sync" in t and any(s[2] == "jc" for s in stack):
            assert not any(s[2] == "if jc" for s in stack), line
            n = 1
            for s in stack:
                n *= s[1]
            total += n
    return total


@pytest.mark.parametrize("ht", [False, True])
def test_pairwise_lean_layout_passes_few_barriers(ht):
    """The released pairwise form (short_lean_rows, 128 threads) passes 19 barriers a chunk in
    TileLang 0.1.15's lowering, with the final state or without; session 34's layout (64 threads,
    all rows), 84 (two in each row of the column pass, one in each row of the end-of-chunk decay)."""
    import dataclasses
    from kda_kernels import registry
    from verify import lowering
    b = registry.find("k1_short", varlen=True, short_ht=ht, short_chunks=4)
    counts = {}
    for lean in (True, False):
        cfg = b.config if lean else dataclasses.replace(b.config, short_lean_rows=False, threads=64,
                                                        next_early=False, inv_blocks=False, col_quads=False,
                                                        last_kr_regs=False)
        counts[lean] = _barriers_a_chunk(lowering.lower(b.factory()(cfg), cfg.pass_configs(), name=cfg.name).device_script)
    assert b.config.short_lean_rows and counts[True] <= 24 and counts[False] >= 3 * counts[True], counts


def test_pairwise_form_runs_four_warps_a_program():
    """The released pairwise builds run 128 threads (two a column pair, session 36) at min_blocks
    4 (128 registers a thread: registers, like shared memory, allow four programs, 16 warps, an
    SM), and their L, Mqk and P, Q products are each one 32-row product of stacked operands: four
    warps find no partition of a 16-row product's 16 columns (TileLang refuses to lower it)."""
    import re
    from kda_kernels import registry
    from verify import lowering
    for ht in (False, True):
        for varlen in (False, True):
            b = registry.find("k1_short", varlen=varlen, short_ht=ht, short_chunks=4)
            assert b.config.threads == 128 and b.config.min_blocks == 4, b.name
    # (the build lowers at all: the stacked products are what make it lower)
    script = lowering.lower(b.prim_func(), b.config.pass_configs(), name=b.name).device_script
    assert re.search(r'T\.launch_thread\("threadIdx\.x", 128\)', script), "128 threads a program"


def test_pairwise_form_keeps_the_next_chunk_in_flight():
    """The released pairwise builds issue chunk 0's q, k, g copies before the chunk loop and each
    later chunk's during the chunk before (K1Config.next_early, session 37): in the loop v's group
    is committed before the next chunk's, and v's wait is wait_group(1), which retires the older
    group only (verify's barriers.race proves that order; tests/seeded/barrier_bugs.py:
    next_in_flight_newest is the wrong one). The zero fill past the last chunk is waited for
    after the loop."""
    import re
    from kda_kernels import registry
    from verify import lowering
    for ht in (False, True):
        b = registry.find("k1_short", varlen=True, short_ht=ht, short_chunks=4)
        assert b.config.next_early, b.name
        lines = lowering.lower(b.prim_func(), b.config.pass_configs(), name=b.name).device_script.splitlines()
        top = next(i for i, x in enumerate(lines) if x.strip().startswith("for jc"))
        ind = len(lines[top]) - len(lines[top].lstrip())
        end = next(i for i in range(top + 1, len(lines))
                   if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= ind)
        before, loop, after = lines[:top], lines[top:end], lines[end:]
        q_copy = re.compile(r"T\.ptx_cp_async\(.*k_s.*\bq,")
        assert any(q_copy.search(x) for x in before), "chunk 0's q copy before the loop"
        calls = [x.strip() for x in loop if "ptx_commit_group" in x or "ptx_wait_group" in x or q_copy.search(x)]
        waits = [x for x in calls if "wait_group" in x]
        assert waits == ["T.ptx_wait_group(0)", "T.ptx_wait_group(1)"], calls
        at = calls.index("T.ptx_wait_group(1)")
        assert calls[at - 1] == "T.ptx_commit_group()" and q_copy.search(calls[at - 2]), calls
        assert calls[at - 3] == "T.ptx_commit_group()", calls    # v's group, the older one
        assert any("ptx_wait_group(0)" in x for x in after)


def test_pairwise_column_pass_over_channel_quads():
    """The released pairwise builds without the final state run the column pass over four
    channels and four rows a thread (K1Config.col_quads, session 38): its stores of kd, qd (fp16
    and bf16), ki and kr are 4-element vectors, and the quarters' gate totals go through shuffles
    (three up the warp, one from the last quarter, in a loop over the four channels). With the final state the builds
    keep channel pairs (slower there on an H100)."""
    import re
    from kda_kernels import registry
    from verify import lowering
    for ht in (False, True):
        b = registry.find("k1_short", varlen=True, short_ht=ht, short_chunks=4)
        assert b.config.col_quads == (not ht), b.name
        script = lowering.lower(b.prim_func(), b.config.pass_configs(), name=b.name).device_script
        # a vector store is staged as NAME_local_cast[0:4] = T.Cast("float16x4", ...) in the script
        quads = len(re.findall(r'_local_cast(?:_\d+)?\[0:4\] = T\.Cast\("b?float16x4"', script))
        ups = script.count("T.shfl_up_sync(")
        if ht:
            assert quads == 0 and ups == 0, (quads, ups)
        else:
            assert quads == 6 and ups == 3, (quads, ups)
