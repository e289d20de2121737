"""The registry of released kernel builds.

Every specialization `kda_prefill` and `kda_decode` can serve is listed in RELEASED. `verify` and
`host_codegen` read the lowered IR of these builds; the API only serves builds that have
a proved record in the verification manifest for their current gate key
(`kda_kernels.buildkey`: the sources of the factory's module and the kda_kernels modules it
imports, the config, the TileLang and TVM versions and the target).

A build names its kernel factory as "module:function" (FACTORIES), imported only when the
build is lowered: importing the registry, the gate or the API never imports TileLang (keep
config classes in a module that does not, such as `configs.py`; tests/test_startup.py checks).
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import itertools
from dataclasses import asdict, dataclass, replace
from typing import Union

from .configs import (PAIRWISE_CHUNKS, SCAN_PARTS, SHORT_FIXED_RLIMIT, SPP_RLIMIT, SPPS, TWO_CONSUMER_RLIMIT,
                      DecodeConfig, K1Config, K2Config, OrderConfig, ScanConfig, split_pass)

TARGET = {"kind": "cuda", "arch": "sm_90a"}

KernelConfig = Union[K1Config, K2Config, ScanConfig, OrderConfig, DecodeConfig]

# stage -> "module:function" of the factory that turns the stage's config into a PrimFunc
FACTORIES = {
    "k1": "kda_kernels.k1_prepare:build_k1",
    # sequences of at most one chunk: K1's work and o = Mqk (Ab v), no workspace, no K2
    "k1_short": "kda_kernels.k1_prepare:build_k1",
    "k2": "kda_kernels.k2_recurrence:build_k2",
    # the sequence split (issue 9): pass A, the scan, pass C
    "k2_map": "kda_kernels.k2_recurrence:build_k2",
    "k2_scan": "kda_kernels.k2_scan:build_scan",
    "k2_seg": "kda_kernels.k2_recurrence:build_k2",
    # longest first: the launch order, then K2 through it
    "k2_order": "kda_kernels.k2_order:build_order",
    "decode": "kda_kernels.decode:build_decode",
}


@dataclass(frozen=True)
class Build:
    stage: str  # "k1", "k1_short", "k2", "k2_map", "k2_scan", "k2_seg", "k2_order" or "decode"
    config: KernelConfig

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def factory_path(self) -> str:
        return FACTORIES[self.stage]

    def factory(self):
        module, func = self.factory_path.split(":")
        return getattr(importlib.import_module(module), func)

    def prim_func(self):
        return self.factory()(self.config)

    def config_dict(self) -> dict:
        return asdict(self.config)


def decode_block_v(state_dtype: str, token_axis: bool) -> int:
    """Value columns a decode program owns: 16 for the one-token fp32 build (8% faster than 32 at
    N = 64..1024, H32, bench/NOTES.md session 12), 32 for the others (16 is slower there)."""
    return 16 if state_dtype == "float32" and not token_axis else 32


def _prologue(varlen: bool) -> dict:
    """K1's prologue knobs (session 23, bench/NOTES.md): the gate's parameters first and beta
    behind the copies (early_loads), the copies' rows from registers with no barrier before them
    (lean_prologue). JIT against session 22's release (head_once), H96 1x8192 cu: 16 tokens 0.426
    -> 0.383 ms, 32 tokens 0.475 -> 0.434; H32 2048x64 cu 2.702 -> 2.514. Varlen builds start the
    slot search at the sequence equal lengths give (slot_guess; session 25, 16 tokens: H32 2048x64
    cu 2.529 -> 2.328, 8192x16 3.039 -> 2.651, 256x512 2.273 -> 2.191, H96 1x8192 0.387 -> 0.392)."""
    return {"early_loads": True, "lean_prologue": True, "slot_guess": varlen}


def _k1_ch32(varlen: bool, fast_math: bool) -> K1Config:
    """The released 32-token K1 (configs.use_chunk32 and the split's)."""
    return K1Config(varlen=varlen, fast_math=fast_math, skip_holes=varlen, dyn_search=varlen, u0_in_k2=True,
                    chunk=32, threads=128, min_blocks=5, rsqrt_nr=not fast_math, tail_unswitch=True,
                    norm_lanes=4, inv_blocks=True, **_prologue(varlen))


def _released() -> tuple[Build, ...]:
    builds = []
    # Varlen K1 returns first from hole slots: H32 8192 x 16 5.55 -> 3.60 ms, 2048 x 64 3.56 -> 3.10,
    # other shapes within 2% (bench/NOTES.md, session 13); its slot search runs the steps N needs:
    # one sequence 0.529 -> 0.513 ms at H96 1x8192, 0.350 -> 0.335 at H8 1x65536 (session 15).
    # K2 forms U0 = Ab v (u0_in_k2): K1 reads no v and writes Ab's 16 columns for U0's 128.
    # The accurate builds take the row norms' 1/sqrt as rsqrt.approx and one Newton step (as the
    # 32-token ones since session 22): -5.1% instructions, H32 8192x16 -4.4%, 2048x64 -0.8%, the
    # DRAM-bound H96 1x8192 and H8 1x65536 unchanged on the H100 (session 31, JIT).
    for varlen, fast_math in itertools.product((False, True), (False, True)):
        builds.append(Build("k1", K1Config(varlen=varlen, fast_math=fast_math, skip_holes=varlen,
                                           dyn_search=varlen, u0_in_k2=True, rsqrt_nr=not fast_math,
                                           **_prologue(varlen))))
    # K2 does no transcendental math, so fast_math selects only among K1 builds.
    for varlen, h0, out_final in itertools.product((False, True), (None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2", K2Config(varlen=varlen, initial_state=h0, final_state=out_final, u0_in_k2=True)))
    # Many short sequences (configs.use_spp): K2 walks SPP sequences a program, the ring running
    # across them. Varlen only: kda_prefill passes a fixed batch to it as B sequences.
    for spp, h0, out_final in itertools.product(SPPS, (None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2", K2Config(varlen=True, initial_state=h0, final_state=out_final, u0_in_k2=True,
                                           seqs_per_program=spp, verify_rlimit=SPP_RLIMIT)))
    # Ragged batches (configs.use_longest_first): K2 runs the sequences longest first, in the
    # order k2_order computes on the device; 16-token chunks only (32-token calls run every chain
    # in one wave, where the order changes nothing). H96 ragged6 0.943 -> 0.855 ms (session 28).
    builds.append(Build("k2_order", OrderConfig()))
    for h0, out_final in itertools.product((None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2", K2Config(varlen=True, initial_state=h0, final_state=out_final, u0_in_k2=True,
                                           longest_first=True)))
    # 32-token chunks where each SM holds at most one chain (configs.use_chunk32): the chain's
    # steps halve (K2 1.30 -> 0.83 ms at H32 1x32768), K1 costs more (0.57 -> 0.69, unguarded
    # stores since session 19). bench/NOTES.md, sessions 18 and 19. Session 22: the accurate builds
    # refine rsqrt.approx by one Newton step for the row norms (0.516 -> 0.492 ms at H96 1x8192), and
    # all take the gate's tail mask in a branch and GVA's head divided once a program (0.496 ->
    # 0.475 with the head alone, 0.468 with both and the inverse's row vectors, which gave nothing).
    for varlen, fast_math in itertools.product((False, True), (False, True)):
        builds.append(Build("k1", _k1_ch32(varlen, fast_math)))
    # Their K2 claims its SM's whole register file (min_blocks 1): the rule gives each chain an SM
    # of its own anyway, and no K1 program then shares it (session 29, H100, H32 1x32768: K2 alone
    # 0.870 -> 0.848 ms; beside a whole K1 on two streams 1.441 -> 1.285).
    for varlen, h0, out_final in itertools.product((False, True), (None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2", K2Config(varlen=varlen, initial_state=h0, final_state=out_final, u0_in_k2=True,
                                           chunk=32, min_blocks=1)))
    # ... and with two consumers a program, one program a sequence and head, where the one-consumer
    # chains would outnumber the SMs (configs.use_two_consumers: H96 1x8192 K2 + K1 -3.1% on the H200,
    # -8.6% on the H100; sessions 29 and 31).
    for varlen, h0, out_final in itertools.product((False, True), (None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2", K2Config(varlen=varlen, initial_state=h0, final_state=out_final, u0_in_k2=True,
                                           chunk=32, consumers=2, min_blocks=1, verify_rlimit=TWO_CONSUMER_RLIMIT)))
    # ... and with v^T as wgmma's shared operand where one chain holds an SM with DRAM to spare
    # (configs.use_vss_one), fed by K1s that write Ab in two bf16 halves; the split's passes read
    # those halves too (configs.SPLIT_VSS). Session 49.
    for varlen, fast_math in itertools.product((False, True), (False, True)):
        builds.append(Build("k1", replace(_k1_ch32(varlen, fast_math), ab_halves=True)))
    for varlen, h0, out_final in itertools.product((False, True), (None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2", K2Config(varlen=varlen, initial_state=h0, final_state=out_final, u0_in_k2=True,
                                           chunk=32, min_blocks=1, v_ss=True)))
    # Sequences of at most 16 tokens and no initial state (configs.use_short): one kernel, K1's
    # accurate 16-token form that reads v and writes o = Mqk (Ab v) (and the fp32 final state
    # U0^T kr) instead of the workspace; a program a (sequence, value head). Issue 9's H32 8192 x 16
    # row moves ~1.3 KB a token and head instead of ~3 (bench/NOTES.md, sessions 32-33). fast_math
    # calls take these too: the short form's transcendental work is K1's column pass alone.
    for varlen, out_final in itertools.product((False, True), (False, True)):
        builds.append(Build("k1_short", K1Config(varlen=varlen, short_out=True, short_ht=out_final, rsqrt_nr=True,
                                                 early_loads=True, lean_prologue=True,
                                                 verify_rlimit=0 if varlen else SHORT_FIXED_RLIMIT)))
    # ... and sequences of at most 64 tokens (configs.PAIRWISE_TOKENS): the same program over up
    # to four chunks, the earlier chunks' kr and U rows in shared memory (the pairwise form; issue
    # 9's 2048 x 64 row; sessions 33-36). It keeps three chunks' rows (57 KB: 4 programs an SM);
    # with the final state the last chunk's kr waits in registers and its U in v_s (session 39:
    # 66 KB and 3 programs before; H100, H32 2048x64 cu with the state 5.216 -> 4.753 ms, outputs
    # bit-identical); registers for 4. 128 threads, two a
    # column pair (H100, H32 2048x64: 3.94 -> 3.64 ms, with the state 6.34 -> 5.48; session 36);
    # the next chunk's copies in flight during this one and the inverse from 8-row blocks (3.74 ->
    # 3.56, with the state 5.47 -> 5.26; session 37). Without the state the column pass runs over
    # channel quads (-2 to -4%; with the state +1 to +2%, so not there: session 38).
    for varlen, out_final in itertools.product((False, True), (False, True)):
        builds.append(Build("k1_short", K1Config(varlen=varlen, short_out=True, short_ht=out_final,
                                                 short_chunks=PAIRWISE_CHUNKS, min_blocks=4, rsqrt_nr=True,
                                                 short_lean_rows=True, threads=128, next_early=True, inv_blocks=True,
                                                 col_quads=not out_final, last_kr_regs=out_final,
                                                 early_loads=True, lean_prologue=True,
                                                 verify_rlimit=0 if varlen else SHORT_FIXED_RLIMIT)))
    # The sequence split: K1, then pass A, the scan (which reads the initial state and writes the
    # final state) and pass C in place of K2. Varlen only: kda_prefill passes a fixed batch to it
    # as B sequences of T tokens.
    # passes A and C: configs.split_pass (SPLIT_CHUNK tokens a chunk, SPLIT_CONSUMERS)
    builds.append(Build("k2_map", split_pass("map")))
    builds.append(Build("k2_seg", split_pass("seg")))
    # the scan in one part or SCAN_PARTS (configs.scan_parts picks); m_async measured slower (session 40)
    for parts, h0, out_final in itertools.product((1, SCAN_PARTS), (None, "float32", "bfloat16"), (False, True)):
        builds.append(Build("k2_scan", ScanConfig(varlen=True, initial_state=h0, final_state=out_final, parts=parts)))
    # kda_decode: with a token axis S (1..8 tokens) is a shape variable; without one the token
    # inputs are [N, ...], the common one-token call, which then needs no views on the host.
    for state_dtype, fast_math, token_axis in itertools.product(("float32", "bfloat16"), (False, True),
                                                                (True, False)):
        builds.append(Build("decode", DecodeConfig(state_dtype=state_dtype, fast_math=fast_math,
                                                   token_axis=token_axis,
                                                   block_v=decode_block_v(state_dtype, token_axis))))
    return tuple(builds)


RELEASED: tuple[Build, ...] = _released()
BY_NAME: dict[str, Build] = {b.name: b for b in RELEASED}


def pass_configs(build: Build) -> dict:
    return build.config.pass_configs()


@functools.lru_cache(maxsize=None)
def lower(build: Build):
    """Lower one build for sm_90a (no GPU needed). Returns tilelang's CompiledArtifact
    with .device_mod and .host_mod."""
    import tilelang
    from tilelang import tvm

    with tvm.transform.PassContext(config=pass_configs(build)), tvm.target.Target(TARGET):
        return tilelang.lower(build.prim_func(), target=TARGET)


def gate_key(build: Build) -> str:
    """The key the manifest's record for this build must carry (kda_kernels.buildkey)."""
    from . import buildkey
    return buildkey.gate_key(build)


def ir_hash(artifact) -> str:
    """Structural hash of a lowered build: sha256 of its device IR's printed script."""
    return hashlib.sha256(artifact.device_mod.script().encode()).hexdigest()


def find(stage: str, **spec) -> Build:
    for b in RELEASED:
        if b.stage == stage and all(getattr(b.config, k) == v for k, v in spec.items()):
            return b
    have = [b.name for b in RELEASED if b.stage == stage]
    raise LookupError(f"no released {stage} build for {spec}; released: {', '.join(have)}")
