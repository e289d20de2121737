"""The public PyTorch API."""
import os
from typing import Optional

import torch

from kda_kernels import registry
from kda_kernels import configs as _configs

from . import gate

_STATE_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16"}


def _env_choice(name: str, choices: dict):
    """choices[value] of an environment variable, None where unset or empty; any other value
    stops the import with an error naming it."""
    raw = os.environ.get(name, "")
    if not raw:
        return None
    if raw not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(sorted(choices))} or unset, got {raw!r}")
    return choices[raw]


def select_builds(*, varlen: bool, fast_math: bool, initial_state_dtype: Optional[str], output_final_state: bool,
                  split: bool = False, chunk: int = 16, spp: int = 1):
    """(K1, K2) for chunks of `chunk` tokens, K2 walking `spp` sequences a program (spp
    configs.SPP_LONGEST_FIRST: (K1, the order, K2 one sequence a program through it); spp
    configs.TWO_CONSUMERS: K2 with two consumer warpgroups a program; spp configs.VSS_ONE: one
    consumer with v^T as wgmma's shared operand, K1 writing Ab's bf16 halves), or with `split`
    (K1, pass A, scan, pass C): the sequence split (configs.SPLIT_CHUNK-token chunks), where the
    scan (in `spp` parts: configs.scan_parts) reads the initial state and writes the final state.
    spp SHORT_FORM or PAIRWISE_FORM: (the short form over one or configs.PAIRWISE_CHUNKS chunks,)
    alone, for any fast_math (no initial state)."""
    if spp in (SHORT_FORM, PAIRWISE_FORM):
        return (registry.find("k1_short", varlen=varlen, short_ht=output_final_state,
                              short_chunks=1 if spp == SHORT_FORM else _configs.PAIRWISE_CHUNKS),)
    from .slabs import ab_halves
    vss = ab_halves(split, spp)
    k1 = registry.find("k1", varlen=varlen, fast_math=fast_math, chunk=_configs.SPLIT_CHUNK if split else chunk,
                       ab_halves=vss)
    if split:
        return (k1, registry.find("k2_map", varlen=varlen),
                registry.find("k2_scan", varlen=varlen, initial_state=initial_state_dtype,
                              final_state=output_final_state, parts=spp),
                registry.find("k2_seg", varlen=varlen))
    if spp == _configs.SPP_LONGEST_FIRST:
        return (k1, registry.find("k2_order"),
                registry.find("k2", varlen=varlen, initial_state=initial_state_dtype, final_state=output_final_state,
                              chunk=chunk, seqs_per_program=1, longest_first=True, consumers=1))
    two = spp == _configs.TWO_CONSUMERS
    k2 = registry.find("k2", varlen=varlen, initial_state=initial_state_dtype, final_state=output_final_state,
                       chunk=chunk, seqs_per_program=1 if two or vss else spp, longest_first=False,
                       consumers=2 if two else 1, v_ss=vss)
    return k1, k2


# _plan's spp for the short form (configs.SHORT_TOKENS) and its pairwise form
# (configs.PAIRWISE_TOKENS): one kernel, no K2
SHORT_FORM = -3
PAIRWISE_FORM = -4
# True (the default since session 35): every call the short form can serve takes it; False
# (KDA_TILE_SHORT=0 at import, or set_short(False)): none. Its GPU tests pass through the host
# entry and it beats the two-kernel path at issue 9's rows (H100, round 35: 8192 x 16 2.01 ms
# against 5.70, 2048 x 64 3.94 against 5.60; bench/NOTES.md).
SHORT = _env_choice("KDA_TILE_SHORT", {"1": True, "0": False}) is not False


def set_short(on: bool) -> None:
    """The short form for every call it can serve (True, the default) or none (False)."""
    global SHORT
    _require_bool("on", on)
    SHORT = on


def path_forced() -> bool:
    """Whether a KDA_TILE_* setting forces a path (FORCE_SPLIT, FORCE_CHUNK, FORCE_SPP, or
    LONGEST_FIRST on): the short form is off then."""
    return FORCE_SPLIT is not None or FORCE_CHUNK is not None or FORCE_SPP is not None or LONGEST_FIRST is True


def takes_short(q, cu_seqlens, initial_state, max_seqlen) -> int:
    """The chunks of the short form a call takes (0: none): no initial state, and every sequence
    at most configs.SHORT_TOKENS tokens (1) or configs.PAIRWISE_TOKENS (configs.PAIRWISE_CHUNKS)
    by the shapes alone (a fixed batch's T) or by the caller's max_seqlen (varlen). No sync. Off
    under any FORCE_* setting and while SHORT is False."""
    if not SHORT or initial_state is not None or path_forced():
        return 0
    if cu_seqlens is None:
        try:
            longest = q.shape[1]
        except (AttributeError, IndexError, TypeError):
            return 0
        if longest < 1:
            return 0
    elif max_seqlen is None:
        return 0
    else:
        longest = max_seqlen
    if longest <= _configs.SHORT_TOKENS:
        return 1
    return _configs.PAIRWISE_CHUNKS if longest <= _configs.PAIRWISE_TOKENS else 0


def _short_spp(n: int) -> int:
    """_plan's spp for takes_short's n chunks"""
    return SHORT_FORM if n == 1 else PAIRWISE_FORM


def _check_max_seqlen(max_seqlen, q, cu_seqlens):
    """max_seqlen: None or an int >= 0; with a fixed batch, at least its T (a varlen call's is
    the caller's promise: a longer sequence's o rows and state come back NaN from the short form)."""
    if max_seqlen is None:
        return
    if not isinstance(max_seqlen, int) or isinstance(max_seqlen, bool) or max_seqlen < 0:
        raise ValueError(f"max_seqlen: expected None or an int >= 0, got {max_seqlen!r}")
    if cu_seqlens is None and isinstance(q, torch.Tensor) and q.dim() >= 2 and max_seqlen < q.shape[1]:
        raise ValueError(f"max_seqlen: expected at least T = {q.shape[1]} (q.shape[1]) for a fixed batch, "
                         f"got {max_seqlen}")


def _by_shape(q, v, cu_seqlens, memo, rule, default):
    """rule(N, T, HV) for the call's N packed sequences of T tokens in all (a fixed batch counts
    as B sequences), memoized in memo; default for malformed arguments or an empty dimension."""
    try:
        if cu_seqlens is None:
            key = (q.shape[0], q.shape[0] * q.shape[1], v.shape[2])
        else:
            key = (cu_seqlens.shape[0] - 1, q.shape[1], v.shape[2])
        return memo[key]
    except KeyError:
        memo[key] = rule(*key) if min(key) >= 1 else default
        return memo[key]
    except (AttributeError, IndexError, TypeError):
        return default


def _chunk_rule(N, T, HV):
    return 32 if _configs.use_chunk32(N, T, HV) else 16


def chunk_for(q, v, cu_seqlens) -> int:
    """The chunk size of an unsplit call: 32 where configs.use_chunk32 says so from the shapes
    alone (no sync), else 16, with or without fast_math. FORCE_CHUNK (16 or 32; KDA_TILE_CHUNK at
    import) forces it. Malformed arguments give 16."""
    if FORCE_CHUNK is not None:
        return FORCE_CHUNK
    try:
        if q.shape[1] < _configs.CHUNK32_MIN_TOKENS:   # no sequence that long: the host-bound calls leave here
            return 16
    except (AttributeError, IndexError, TypeError):
        return 16
    return _by_shape(q, v, cu_seqlens, _CHUNK, _chunk_rule, 16)


def _two_rule(N, T, HV):
    if _configs.use_two_consumers(N, T, HV):
        return _configs.TWO_CONSUMERS
    return _configs.VSS_ONE if _configs.use_vss_one(N, T, HV) else 1


# (N, T, HV) -> chunk_for's answer; (N, T, HV) -> _plan's K2 form for a 32-token call
_CHUNK: dict = {}
_TWO: dict = {}
FORCE_CHUNK = _env_choice("KDA_TILE_CHUNK", {"16": 16, "32": 32})


def spp_for(q, v, cu_seqlens) -> int:
    """Sequences a K2 program walks in an unsplit 16-token call: configs.use_spp from the shapes
    alone (no sync). FORCE_SPP (1 or one of configs.SPPS; KDA_TILE_SPP at import) forces it.
    A varlen call of one sequence a program that runs longest first (LONGEST_FIRST,
    configs.use_longest_first) gives configs.SPP_LONGEST_FIRST. Malformed arguments give 1."""
    if FORCE_SPP is not None:
        spp = FORCE_SPP
    else:
        spp = _by_shape(q, v, cu_seqlens, _SPP, _configs.use_spp, 1)
    if spp == 1 and cu_seqlens is not None and LONGEST_FIRST is not False \
            and _by_shape(q, v, cu_seqlens, _LF, _lf_rule, False):
        return _configs.SPP_LONGEST_FIRST
    return spp


def _lf_rule(N, T, HV):
    if LONGEST_FIRST is None:
        return _configs.use_longest_first(N, T, HV)
    return 2 <= N <= _configs.LF_MAX_SEQS


# (N, T, HV) -> spp_for's answer; (N, T, HV) -> whether a varlen call runs longest first
_SPP: dict = {}
_LF: dict = {}
FORCE_SPP = _env_choice("KDA_TILE_SPP", {str(n): n for n in (1,) + _configs.SPPS})
# None: configs.use_longest_first decides; True: every varlen call of 2 to LF_MAX_SEQS sequences
# that takes one sequence a program runs longest first; False: none (KDA_TILE_LONGEST_FIRST=1 or 0)
LONGEST_FIRST = _env_choice("KDA_TILE_LONGEST_FIRST", {"1": True, "0": False})


def set_longest_first(on: Optional[bool]) -> None:
    """K2 longest first for every varlen call it can take (True), none (False), or as
    configs.use_longest_first says (None)."""
    global LONGEST_FIRST
    if on is not None and on is not True and on is not False:
        raise TypeError(f"on: expected True, False or None, got {on!r}")
    LONGEST_FIRST = on
    _LF.clear()


def use_split(q, v, cu_seqlens) -> bool:
    """Whether a call takes the sequence split (issue 9): when the shapes alone give the average
    sequence SPLIT_MIN_G segments or more (kda_kernels.configs.split_plan; the entry derives the
    same plan). FORCE_SPLIT (True or False; from KDA_TILE_SPLIT=1 or 0 at import) forces it on or
    off. Malformed arguments give False: the unsplit entry's checks then name them."""
    if FORCE_SPLIT is not None:
        return FORCE_SPLIT
    try:
        if q.shape[1] < _SPLIT_MIN_TOKENS:   # the host-bound calls leave here
            return False
    except (AttributeError, IndexError, TypeError):
        return False
    return _by_shape(q, v, cu_seqlens, _SPLIT, _configs.use_split, False)


# (N, T, HV) -> use_split's answer
_SPLIT: dict = {}


def scan_parts_for(q, v, cu_seqlens) -> int:
    """The parts of a split call's scan (ScanConfig.parts): configs.scan_parts from the shapes
    alone. Malformed arguments give 1."""
    return _by_shape(q, v, cu_seqlens, _SCANP, _configs.scan_parts, 1)


# (N, T, HV) -> scan_parts_for's answer
_SCANP: dict = {}
# the fewest tokens (per sequence, so in q.shape[1] too) a split call has: its average sequence
# has SPLIT_MIN_G segments of SPLIT_MIN_CHUNKS chunks or more
_SPLIT_MIN_TOKENS = (_configs.SPLIT_MIN_G * _configs.SPLIT_MIN_CHUNKS - 1) * 16 + 1
# None: the rule decides; True or False: every call takes the split or not (tests, benchmarks)
FORCE_SPLIT = _env_choice("KDA_TILE_SPLIT", {"1": True, "0": False})
# below this many tokens in q.shape[1] neither rule applies: no split, 16-token chunks
_RULES_MIN_TOKENS = min(_SPLIT_MIN_TOKENS, _configs.CHUNK32_MIN_TOKENS)
_RULES_MIN_ELEMS = _RULES_MIN_TOKENS * 128   # q's elements: fewer, and no q row is that long


# Issue 13's memory point (kda_tile.slabs): a one-sequence call whose K1 -> K2 workspace would
# exceed WORKSPACE_LIMIT bytes runs as consecutive slabs under it. None: no limit (the default
# until the slabs' cost is measured on the H200; bench/slab_probe.py). KDA_TILE_WORKSPACE_MB at
# import, or set_workspace_limit().
def _env_count(name: str) -> Optional[int]:
    """A positive integer environment variable, None where unset or empty."""
    raw = os.environ.get(name, "")
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n <= 0:
        raise ValueError(f"{name}: expected a positive integer, got {raw!r}")
    return n


WORKSPACE_LIMIT = (_env_count("KDA_TILE_WORKSPACE_MB") or 0) << 20 or None
# (N, T, HV) -> slab tokens (0: one call)
_SLAB: dict = {}


def set_workspace_limit(nbytes: Optional[int]) -> None:
    """Caps the workspace of one-sequence calls at `nbytes` (None: no cap); see kda_tile.slabs."""
    global WORKSPACE_LIMIT
    if nbytes is not None and (not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0):
        raise ValueError(f"nbytes: expected a positive int or None, got {nbytes!r}")
    WORKSPACE_LIMIT = nbytes
    _SLAB.clear()
    _PIPE.clear()


def _one_sequence_plan(T, HV):
    """_plan's (split, chunk) for one sequence of T tokens."""
    split = FORCE_SPLIT if FORCE_SPLIT is not None else T >= _SPLIT_MIN_TOKENS and _configs.use_split(1, T, HV)
    if split:
        return True, _configs.SPLIT_CHUNK
    if FORCE_CHUNK is not None:
        return False, FORCE_CHUNK
    return False, _chunk_rule(1, T, HV) if T >= _configs.CHUNK32_MIN_TOKENS else 16


def _pipe_form(T, HV, chunk):
    """The K2 form (_plan's spp) of the pipeline's slabs: the whole call's, so that the pipeline
    gives its o bit for bit (one sequence a program, with v_ss where configs.use_vss_one says so
    for a 32-token call: only where the rule would not pipeline it)."""
    return _configs.VSS_ONE if chunk == 32 and _two_rule(1, T, HV) == _configs.VSS_ONE else 1


def _slab_form(T, HV):
    """_plan of one slab of T tokens (a one-sequence varlen call), from stand-in shapes: slabs
    whose forms differ (a 32-token tail with one consumer, say) take two entries, two workspaces."""
    meta = dict(device="meta")
    return _plan(torch.empty((1, T, 1, 1), **meta), torch.empty((1, T, HV, 1), **meta),
                 torch.empty((2,), dtype=torch.int64, **meta))


def _slab_rule(N, T, HV):
    from . import slabs
    if N != 1 or WORKSPACE_LIMIT is None:
        return 0
    return slabs.slab_tokens(T, HV, WORKSPACE_LIMIT, lambda t: _slab_form(t, HV))


def _check_whole(q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
                 cu_seqlens, fast_math, out, final_state_out):
    """Runs the checks of the entry a one-sequence call would take whole, for the paths that run it
    in slabs."""
    if final_state_out is not None and not output_final_state:
        raise ValueError("final_state_out: given, but output_final_state is False")
    _out_types(out, final_state_out)
    entry = _gated_entry(*_prepare(initial_state, output_final_state, cu_seqlens, fast_math,
                                   *_entry_plan(q, v, cu_seqlens)))
    try:
        entry.validate_only(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
                            o=out, final_state=final_state_out)
    except (TypeError, ValueError) as e:
        raise _renamed_outputs(e) from None
    except RuntimeError:
        _device_types(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, cu_seqlens=cu_seqlens,
                      initial_state=initial_state, out=out, final_state_out=final_state_out)
        raise


def _slabbed(tokens, q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
             cu_seqlens, fast_math, out, final_state_out):
    """kda_prefill of one sequence as slabs of `tokens` tokens, once the whole call's arguments pass
    the checks of the entry it would have taken."""
    from . import slabs
    _check_whole(q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
                 cu_seqlens, fast_math, out, final_state_out)
    return slabs.run(kda_prefill, tokens, q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound,
                     scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                     cu_seqlens=cu_seqlens, fast_math=fast_math, out=out, final_state_out=final_state_out)


# The slab pipeline (kda_tile.slabs.run_pipelined): a one-sequence unsplit call that
# configs.use_pipeline takes (PIPELINE None), or every such call (True; KDA_TILE_PIPELINE=1 at
# import) or none (False; KDA_TILE_PIPELINE=0). PIPE_SLABS slabs (KDA_TILE_PIPE_SLABS), fewer where
# a slab would be shorter than slabs.MIN_TOKENS (or, as the rule picks, than configs.PIPE_MIN_SLAB),
# more where WORKSPACE_LIMIT needs smaller ones.
PIPELINE = _env_choice("KDA_TILE_PIPELINE", {"1": True, "0": False})
PIPE_SLABS = _env_count("KDA_TILE_PIPE_SLABS") or _configs.PIPE_SLABS
# (N, T, HV) -> the pipeline's slab tokens (0: not pipelined)
_PIPE: dict = {}


def _pipe_rule(N, T, HV):
    from . import slabs
    if N != 1:
        return 0
    split, chunk = _one_sequence_plan(T, HV)
    if split or not (PIPELINE if PIPELINE is not None else _configs.use_pipeline(N, T, HV)):
        return 0
    n = PIPE_SLABS
    if PIPELINE is None:
        n = max(1, min(n, T // _configs.PIPE_MIN_SLAB))
    while True:
        tokens = -(-T // n)
        tokens = max(slabs.MIN_TOKENS, -(-tokens // slabs.ALIGN) * slabs.ALIGN)
        if tokens >= T:
            return 0
        fits = WORKSPACE_LIMIT is None or slabs.pipeline_workspace_bytes(tokens, HV, chunk, True,
                                                                         _pipe_form(T, HV, chunk)) <= WORKSPACE_LIMIT
        if fits or tokens == slabs.MIN_TOKENS:
            return tokens
        n += 1


def set_pipeline(on: Optional[bool]) -> None:
    """The slab pipeline for every one-sequence unsplit call it can take (True), none (False), or
    as configs.use_pipeline says (None)."""
    global PIPELINE
    if on is not None and on is not True and on is not False:
        raise TypeError(f"on: expected True, False or None, got {on!r}")
    PIPELINE = on
    _PIPE.clear()


def _pipelined(tokens, q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
               cu_seqlens, fast_math, out, final_state_out):
    """kda_prefill of one sequence as the slab pipeline, once the whole call's arguments pass the
    checks of the entry it would have taken."""
    from . import slabs
    _check_whole(q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state, output_final_state,
                 cu_seqlens, fast_math, out, final_state_out)
    _, chunk = _one_sequence_plan(q.shape[1], v.shape[2])
    spp = _pipe_form(q.shape[1], v.shape[2], chunk)

    def raw_for(h0, want):
        key = _dispatch_key(cu_seqlens, h0, want, bool(fast_math), False, chunk, spp)
        hit = _RAW.get(key)
        return (hit or _raw_for(h0, want, cu_seqlens, fast_math, False, chunk, spp))[0]
    return slabs.run_pipelined(raw_for, tokens, chunk, q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias,
                               lower_bound=lower_bound, scale=scale, initial_state=initial_state,
                               output_final_state=output_final_state, cu_seqlens=cu_seqlens, out=out,
                               final_state_out=final_state_out, spp=spp)


def _renamed_outputs(e):
    """The entry names its own parameters o and final_state; the API's are out and final_state_out."""
    msg = str(e)
    for entry_name, api_name in (("o: ", "out: "), ("final_state: ", "final_state_out: ")):
        if msg.startswith(entry_name):
            return type(e)(api_name + msg[len(entry_name):])
    return e


def _plan(q, v, cu_seqlens):
    """(split, chunk, spp) of a call: use_split, then the split's chunk and its scan's parts
    (scan_parts_for) or chunk_for, and for an unsplit 16-token call spp_for, for a 32-token one
    configs.TWO_CONSUMERS where configs.use_two_consumers says so, else configs.VSS_ONE where
    configs.use_vss_one does (else 1). Calls too short for
    the split and 32-token rules skip those two (a fixed batch of many short rows still groups
    its sequences)."""
    try:
        if q.shape[1] < _RULES_MIN_TOKENS and FORCE_SPLIT is None and FORCE_CHUNK is None:
            return False, 16, spp_for(q, v, cu_seqlens)
    except (AttributeError, IndexError, TypeError):
        pass
    if use_split(q, v, cu_seqlens):
        return True, _configs.SPLIT_CHUNK, scan_parts_for(q, v, cu_seqlens)
    chunk = chunk_for(q, v, cu_seqlens)
    if chunk == 16:
        return False, 16, spp_for(q, v, cu_seqlens)
    return False, chunk, _by_shape(q, v, cu_seqlens, _TWO, _two_rule, 1)


def _entry_plan(q, v, cu_seqlens):
    """_plan for the entry that checks these very arguments: a fixed batch that would take the
    split or K2 over several sequences is checked by the unsplit one-sequence-a-program entry (the
    same rules on the [B, T] shapes; the others see it as packed sequences)."""
    split, chunk, spp = _plan(q, v, cu_seqlens)
    if (split or spp > 1) and cu_seqlens is None:
        return False, chunk_for(q, v, cu_seqlens), 1
    return split, chunk, spp


def _gated_entry(*builds):
    """The generated host entry of a (K1, K2) pair or of one build, once every build passes the
    release gate and the entry is bound to the IR hashes the manifest proved (its binding.json).
    Warm caches: no lowering, no compiler."""
    from host_codegen import get_entry
    proved = {b.name: gate.check(b) for b in builds}
    entry = get_entry(*builds)
    built = getattr(entry, "ir_hashes", {})
    for b in builds:
        gate.check_artifact(b, proved[b.name], built.get(b.name, ""))
    return entry


def _entry(*builds):
    """The host entry's call for one (K1, K2) pair or split, once every build passes the release gate."""
    if os.environ.get("KDA_TILE_BACKEND", "generated") == "generated" or len(builds) != 2:
        entry = _gated_entry(*builds)
        _LOADED.append(entry)
        return entry.fast if hasattr(entry, "fast") else entry
    from . import _launch  # TileLang's own JIT launchers, for debugging the generated entry
    k1, k2 = builds
    for b in (k1, k2):
        gate.check_artifact(b, gate.check(b), registry.ir_hash(registry.lower(b)), "TileLang JIT kernel")
    return lambda *a: _launch.launch(k1, k2, *a)


# (fixed batch, fast_math, initial_state dtype, output_final_state, split) -> the entry's call
_ENTRIES: dict = {}
_LOADED: list = []


def empty_cache() -> int:
    """Frees the K1->K2 workspaces that kda_prefill keeps between calls (one per device and
    stream and configuration used, as large as the largest call so far). Returns the bytes freed;
    the caching allocator frees them in stream order."""
    return sum(e.release_workspaces() for e in _LOADED if hasattr(e, "release_workspaces"))


def _prepare(initial_state, output_final_state, cu_seqlens, fast_math, split=False, chunk=16, spp=1):
    if initial_state is not None and not isinstance(initial_state, torch.Tensor):
        raise TypeError(f"initial_state: expected a torch.Tensor or None, got {type(initial_state).__name__}")
    if initial_state is not None and initial_state.dtype not in _STATE_DTYPES:
        raise TypeError(f"initial_state: expected dtype float32 or bfloat16, got {initial_state.dtype}")
    return select_builds(
        varlen=cu_seqlens is not None, fast_math=bool(fast_math),
        initial_state_dtype=None if initial_state is None else _STATE_DTYPES[initial_state.dtype],
        output_final_state=bool(output_final_state), split=split, chunk=chunk, spp=spp)


def check_inputs(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None, initial_state=None,
                 output_final_state=False, cu_seqlens=None, fast_math=False, device=None, validate="fast",
                 max_seqlen=None):
    """Runs every check kda_prefill runs, launching nothing: the release gate of its builds,
    then the generated entry's argument checks. `device` names the device the tensors must
    share (default: a CUDA device), so the rules can be exercised on the CPU."""
    _check_max_seqlen(max_seqlen, q, cu_seqlens)
    n = takes_short(q, cu_seqlens, initial_state, max_seqlen)
    plan = (False, 16, _short_spp(n)) if n else _entry_plan(q, v, cu_seqlens)
    builds = _prepare(initial_state, output_final_state, cu_seqlens, fast_math, *plan)
    kw = _expect_device(device)
    entry = _gated_entry(*builds)
    return entry.validate_only(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale,
                               validate=validate, **kw)


# Module-level names for the per-call checks: each attribute lookup on `torch` costs ~40 ns, and
# the whole steady-state path is ~1 us of Python (each further Python frame of ~15 arguments
# costs ~0.1 us, so the eager body is kda_prefill's own).
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled


def kda_prefill(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None,
                initial_state=None, output_final_state=False, cu_seqlens=None, fast_math=False,
                out=None, final_state_out=None, max_seqlen=None):
    """KDA forward with the safe gate, in-kernel q/k L2 norm and beta sigmoid.

    Per token: q and k L2-normalised, beta = sigmoid(beta), the gate
    g = lower_bound * sigmoid(exp(A_log) (g + dt_bias)) and the gated delta rule
    (docs/math.md section 1; kda_kernels/reference.py in float64). HV = H, or a multiple of H (GVA):
    value head hv uses q/k head hv // (HV / H).

    Args:
        q, k: [B, T, H, 128] bf16.
        v: [B, T, HV, 128] bf16.
        g: [B, T, HV, 128] bf16, the gate's raw input.
        beta: [B, T, HV] bf16, logits.
        A_log: [HV] fp32.
        dt_bias: [HV, 128] fp32.
        lower_bound: float in [-5, 0), default -5.0.
        scale: float > 0 applied to q, default None (1 / sqrt(128)).
        initial_state: [N, HV, V, K] fp32 or bf16 (V-major), default None (zeros).
        output_final_state: bool, default False: also return the state after the last token.
        cu_seqlens: [N + 1] int64 with B == 1, a packed batch of N sequences (N <= 2^20);
            default None: B sequences of T tokens.
        fast_math: bool, default False: K1 builds with tanh.approx sigmoid and rsqrt.approx
            (README: the measured bound and speed-up).
        out: optional [B, T, HV, V] bf16 written in place and returned; checked like the
            inputs (shape, dtype, device, strides, alignment, no overlap with any input).
        final_state_out: optional [N, HV, V, K] in the final state's dtype, likewise; needs
            output_final_state=True.
        max_seqlen: optional int >= 0, the longest sequence of a varlen call as the caller
            knows it on the host (serving engines hold it). With every sequence at most 64
            tokens and no initial state the call runs as one kernel (the short form,
            configs.SHORT_TOKENS and PAIRWISE_TOKENS, while api.SHORT is on); a fixed batch with
            T <= 64 does so without it. A promise: a longer sequence gets NaN in its o rows and
            final state. With a fixed batch it must be at least T.

    Returns:
        (o [B, T, HV, V] bf16, final_state [N, HV, V, K] or None). final_state's dtype follows
        initial_state (fp32 without one); N = B without cu_seqlens.

    Raises:
        TypeError, ValueError: one line naming the argument, what was expected and what was
            given (dtype, rank, shapes, strides, device, alignment, cu_seqlens, lower_bound,
            max_seqlen, state shape, bools).
        RuntimeError: a tensor that requires grad while grad is enabled (no backward yet).
        kda_tile.gate.UnverifiedBuildError: the build the call needs has no current proved
            record in the manifest (run `python -m verify`).

    Example:
        >>> o, ht = kda_prefill(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias,
        ...                     cu_seqlens=cu, output_final_state=True)

    Under torch.compile the call is recorded as the custom op torch.ops.kda_tile.prefill
    (kda_tile.ops), with a fake implementation from the same shape rules.
    """
    if _is_compiling():
        if out is not None or final_state_out is not None:
            raise ValueError("out, final_state_out: not supported under torch.compile (the op returns fresh outputs)")
        from . import ops  # noqa: F401  (registers the op)
        o, ht = torch.ops.kda_tile.prefill(q, k, v, g, beta, A_log, dt_bias, float(lower_bound), scale,
                                           initial_state, bool(output_final_state), cu_seqlens, bool(fast_math),
                                           max_seqlen)
        return o, (ht if output_final_state else None)
    if fast_math is not True and fast_math is not False:
        _require_bool("fast_math", fast_math)
    if output_final_state is not True and output_final_state is not False:
        _require_bool("output_final_state", output_final_state)
    if _grad_enabled() and _may_require_grad(q, k, v, g, beta, A_log, dt_bias, initial_state):
        _no_grad_inputs(_TENSOR_ARGS, (q, k, v, g, beta, A_log, dt_bias, initial_state), "kda_tile has no backward yet")
    if max_seqlen is not None:
        _check_max_seqlen(max_seqlen, q, cu_seqlens)
    try:  # fewer elements than _RULES_MIN_TOKENS rows of 128 (numel is cheaper than shape[1]), else _plan
        tiny = (q.numel() < _RULES_MIN_ELEMS and FORCE_SPLIT is None and FORCE_CHUNK is None and FORCE_SPP is None
                and LONGEST_FIRST is not True)
    except (AttributeError, TypeError):
        tiny = False
    n_short = SHORT and takes_short(q, cu_seqlens, initial_state, max_seqlen)
    if n_short:
        split, chunk, spp = False, 16, _short_spp(n_short)
    elif tiny:
        split, chunk, spp = False, 16, 1
    else:
        split, chunk, spp = _plan(q, v, cu_seqlens)
        if PIPELINE is not False and not split:
            tokens = _by_shape(q, v, cu_seqlens, _PIPE, _pipe_rule, 0)
            if tokens:
                return _pipelined(tokens, q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state,
                                  output_final_state, cu_seqlens, fast_math, out, final_state_out)
        if WORKSPACE_LIMIT is not None:
            tokens = _by_shape(q, v, cu_seqlens, _SLAB, _slab_rule, 0)
            if tokens:
                return _slabbed(tokens, q, k, v, g, beta, A_log, dt_bias, lower_bound, scale, initial_state,
                                output_final_state, cu_seqlens, fast_math, out, final_state_out)
        if (split or spp > 1) and cu_seqlens is None:
            flat = _as_sequences(q, k, v, g, beta, out)
            if flat is not None:
                o, ht = kda_prefill(*flat[:5], A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale,
                                    initial_state=initial_state, output_final_state=output_final_state,
                                    cu_seqlens=flat[6], fast_math=fast_math, out=flat[5],
                                    final_state_out=final_state_out)
                return (out if out is not None else o.view(v.shape)), ht
            split, chunk, spp = False, chunk_for(q, v, cu_seqlens), 1
    try:  # _dispatch_key, inline
        key = (cu_seqlens is None, fast_math, None if initial_state is None else initial_state.dtype,
               output_final_state, split, chunk, spp)
    except AttributeError:
        key = None
    if out is None and final_state_out is None:
        try:
            fn = _ENTRIES[key]
        except (KeyError, TypeError):
            fn = _lookup(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk, spp)
        try:
            return fn(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale)
        except RuntimeError:
            _device_types(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, cu_seqlens=cu_seqlens,
                          initial_state=initial_state)
            raise
    # caller-provided outputs: one call of the entry, which checks them (the same rules as for its
    # own outputs, plus no overlap with any input) and writes them
    if final_state_out is not None and not output_final_state:
        raise ValueError("final_state_out: given, but output_final_state is False")
    try:
        raw, flags = _RAW[key]
    except (KeyError, TypeError):
        _out_types(out, final_state_out)
        _lookup(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk, spp)
        raw, flags = _raw_for(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk, spp)
    # flags bit 3: the entry returns o alone (None when out was given); only when no final state
    # would be dropped
    single = final_state_out is not None or not output_final_state
    try:
        r = raw(q, k, v, g, beta, A_log, dt_bias, cu_seqlens, initial_state, lower_bound, scale, out, final_state_out,
                flags | 8 if single else flags)
    except (TypeError, ValueError) as e:  # the entry names its own parameters o and final_state
        _out_types(out, final_state_out)
        r = _renamed_outputs(e)
        if r is not e:
            raise r from None
        raise
    except RuntimeError:
        _device_types(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias, cu_seqlens=cu_seqlens,
                      initial_state=initial_state, out=out, final_state_out=final_state_out)
        raise
    if single:
        return (out if r is None else r), final_state_out
    return (out if r[0] is None else r[0]), (final_state_out if r[1] is None else r[1])



def kda_prefill_eager(q, k, v, g, beta, *, A_log, dt_bias, lower_bound=-5.0, scale=None,
                      initial_state=None, output_final_state=False, cu_seqlens=None, fast_math=False,
                      out=None, final_state_out=None, max_seqlen=None):
    """kda_prefill's eager path: what the custom op runs on CUDA, outside tracing, where
    kda_prefill's torch.compile hook is off."""
    if _is_compiling():
        raise RuntimeError("kda_prefill_eager: called while torch.compile traces; call kda_prefill there")
    return kda_prefill(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, scale=scale,
                       initial_state=initial_state, output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                       fast_math=fast_math, out=out, final_state_out=final_state_out, max_seqlen=max_seqlen)


def _out_types(out, final_state_out):
    for name, t in (("out", out), ("final_state_out", final_state_out)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor or None, got {type(t).__name__}")


def _dispatch_key(cu_seqlens, initial_state, output_final_state, fast_math, split, chunk=16, spp=1):
    """The key of _ENTRIES and _RAW: what selects the builds. Raises on a malformed
    initial_state (the callers then take the checked path)."""
    return (cu_seqlens is None, fast_math, None if initial_state is None else initial_state.dtype,
            output_final_state, split, chunk, spp)


_TENSOR_ARGS = ("q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state")


# (B, T, device) -> cu_seqlens of B sequences of T tokens: the sequence split is built for
# varlen batches only, and takes a fixed batch as one.
_FIXED_CU: dict = {}


def _as_sequences(q, k, v, g, beta, out):
    """A fixed batch [B, T, ...] as one packed row [1, B * T, ...]: views of q, k, v, g, beta and
    out (None where a view is impossible: the unsplit entry then checks the arguments), and its
    cu_seqlens."""
    try:
        B, T = q.shape[0], q.shape[1]
        flat = [x.view(1, B * T, *x.shape[2:]) for x in (q, k, v, g, beta)]
        flat.append(None if out is None else out.view(1, B * T, *out.shape[2:]))
    except (AttributeError, RuntimeError, TypeError, IndexError):
        return None
    key = (B, T, q.device)
    cu = _FIXED_CU.get(key)
    if cu is None:
        cu = torch.arange(B + 1, dtype=torch.int64, device=q.device) * T
        if not (q.is_cuda and torch.cuda.is_current_stream_capturing()):
            _FIXED_CU[key] = cu
    return flat + [cu]


# (the dispatch key above) -> (the entry's raw TVM-FFI call, its launch flags), for caller outputs
_RAW: dict = {}


def _raw_for(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk=16, spp=1):
    builds = _prepare(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk, spp)
    if os.environ.get("KDA_TILE_BACKEND", "generated") != "generated":
        raise ValueError("out, final_state_out: need the generated host entry (KDA_TILE_BACKEND=generated)")
    from host_codegen.cpp_entry import launch_flags
    entry = _gated_entry(*builds)
    pair = (entry.raw, launch_flags())
    _RAW[_dispatch_key(cu_seqlens, initial_state, bool(output_final_state), bool(fast_math), split, chunk, spp)] = pair
    return pair


def _require_bool(name, value):
    if value is not True and value is not False:
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__} {value!r}")


def _may_require_grad(q, k, v, g, beta, A_log, dt_bias, state):
    """Half the time of _no_grad_inputs' loop on the steady-state path (state: initial_state or
    decode's state_pool); True for a non-tensor, which the entry then names."""
    try:
        return (q.requires_grad or k.requires_grad or v.requires_grad or g.requires_grad or beta.requires_grad
                or A_log.requires_grad or dt_bias.requires_grad or (state is not None and state.requires_grad))
    except AttributeError:
        return True


def _no_grad_inputs(names, tensors, no_backward):
    for name, t in zip(names, tensors):
        if getattr(t, "requires_grad", False):
            raise RuntimeError(f"{name}: {no_backward}, got a tensor that requires grad under grad mode (call under "
                               f"torch.no_grad() or torch.inference_mode(), or pass {name}.detach())")


def _expect_device(device) -> dict:
    """check_inputs' `device` as the entry's expect_device keyword ({} for the default, cuda)."""
    if device is None:
        return {}
    try:
        return {"expect_device": torch.device(device).type}
    except (RuntimeError, TypeError):
        raise ValueError(f"device: expected a torch device or device string, got {device!r}") from None


def _device_types(**tensors):
    """Names the argument behind an error the entry could only raise from C++ (meta tensors)."""
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor) and t.device.type != "cuda":
            raise ValueError(f"{name}: expected a cuda tensor, got device {t.device}") from None


def _lookup(initial_state, output_final_state, cu_seqlens, fast_math, split=False, chunk=16, spp=1):
    builds = _prepare(initial_state, output_final_state, cu_seqlens, fast_math, split, chunk, spp)
    fn = _entry(*builds)
    _ENTRIES[_dispatch_key(cu_seqlens, initial_state, bool(output_final_state), bool(fast_math), split, chunk,
                           spp)] = fn
    return fn
