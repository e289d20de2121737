"""Scalar math used inside the kernels, in an accurate and a fast-math form.

The fast forms are explicit PTX approximations (ex2.approx.ftz, tanh.approx,
rsqrt.approx.ftz) injected with T.import_source; the accurate forms use the
CUDA math library through TileLang's own intrinsics.
"""
import tilelang.language as T

LOG2E = 1.4426950408889634

FAST_SOURCE = r"""
__device__ __forceinline__ float kda_ex2_ftz(float x) {
  float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float kda_sigmoid_tanh(float x) {
  float t; asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.5f * x)); return fmaf(0.5f, t, 0.5f);
}
__device__ __forceinline__ float kda_rsqrt_approx(float x) {
  float y; asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
"""


ACCURATE_SOURCE = r"""
__device__ __forceinline__ float kda_ex2(float x) {
  float y; asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
}
__device__ __forceinline__ float kda_sigmoid_rcp(float x) {
  float e, y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(e) : "f"(-1.4426950408889634f * x));
  asm("rcp.approx.f32 %0, %1;" : "=f"(y) : "f"(1.0f + e));
  return y;
}
"""


# The accurate sigmoid with flush-to-zero MUFU forms: the same values wherever 2^x and the
# reciprocal stay normal (x > -126 log 2 and 1 + e finite), which is all K1's ranges (ftz builds).
FTZ_SOURCE = r"""
__device__ __forceinline__ float kda_sigmoid_rcp_ftz(float x) {
  float e, y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(-1.4426950408889634f * x));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(1.0f + e));
  return y;
}
// 1 / (1 + 2^y): the sigmoid of x = -y ln 2, with the caller folding -log2(e) into y
__device__ __forceinline__ float kda_rcp_1p_ex2_ftz(float y) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(y));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return r;
}
"""


# 1/sqrt(x) for normal x > 0 as rsqrt.approx (relative error < 2^-22.9) and one Newton step,
# y (3/2 - x/2 y^2): within ~1 ulp like 1 / sqrtf(x), in 5 instructions instead of ~22
# (sqrtf's and the division's range checks and slow-path branches).
NR_SOURCE = r"""
__device__ __forceinline__ float kda_rsqrt_nr(float x) {
  float y; asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y * fmaf(-0.5f * x * y, y, 1.5f);
}
"""


def sigmoid_rcp(x, fast: bool):
    """sigmoid as rcp(1 + ex2(-x log2 e)): two MUFU operations, within a few ulp of the exact
    value; fast_math takes tanh.approx (one MUFU, ~5e-4)."""
    if fast:
        return T.call_extern("float32", "kda_sigmoid_tanh", x)
    return T.call_extern("float32", "kda_sigmoid_rcp", x)


def ex2(x, fast: bool):
    """2^x as one MUFU operation (ex2.approx.f32: relative error below 2^-22); fast_math flushes
    subnormals."""
    return T.call_extern("float32", "kda_ex2_ftz" if fast else "kda_ex2", x)


def exp2(x, fast: bool):
    return T.call_extern("float32", "kda_ex2_ftz", x) if fast else T.exp2(x)


def sigmoid(x, fast: bool):
    if fast:
        return T.call_extern("float32", "kda_sigmoid_tanh", x)
    return 1.0 / (1.0 + T.exp(-x))


def rsqrt(x, fast: bool, nr: bool = False):
    """1/sqrt(x): rsqrt.approx with fast_math, its Newton-refined form with nr (NR_SOURCE, normal
    x > 0 only), else 1 / sqrtf(x)."""
    if fast:
        return T.call_extern("float32", "kda_rsqrt_approx", x)
    return T.call_extern("float32", "kda_rsqrt_nr", x) if nr else 1.0 / T.sqrt(x)


def exp(x, fast: bool):
    return exp2(x * LOG2E, True) if fast else T.exp(x)


def token_index(cu_value, Tn):
    """An int64 cu_seqlens entry as an int32 token index in [0, T]: clamped before the
    narrowing cast, so that any contents give an index inside the buffers."""
    return T.Cast("int32", T.max(T.min(cu_value, T.Cast("int64", Tn)), T.int64(0)))


def gva_head(hv, H, HV):
    """The q/k head of value head hv under GVA (HV / H value heads per q/k head). The min is a
    no-op under HV % H == 0 and keeps the head in bounds by its own condition, which `verify`
    decides without nonlinear arithmetic."""
    return T.min(hv // (HV // H), H - 1)
