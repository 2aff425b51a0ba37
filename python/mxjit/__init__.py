"""mxjit: MX / FP8 quantize-scale-layout casts declared as pipelines, JIT-compiled for NVIDIA GPUs.

The DSL mirrors the C++ one name for name, so a cast declared here hashes the same as in C++::

    import mxjit as mx
    x = mx.input("x", mx.bf16, 2)
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 0, 32)), mx.e4m3, mx.ScaleRule.rceil)
    p = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x / s), mx.layout.col_major()),
                     mx.output("s", s, mx.layout.blocked_128x4())])
    assert p == mx.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4")
    r = mx.f32_scale(mx.amax(mx.blocks(x, 1, mx.whole)), mx.e4m3)   # one scale per whole row (FP8 rowwise)
    d = mx.scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3, mx.recipes.vllm_group(mx.e4m3, False))  # a ScaleDef
    k = mx.jit(p)            # compiles per GPU architecture on first use (or mx.warmup([k], devices=[0]))

Kernels launch from plain ints (``Kernel.launch``) and run on host memory (``Kernel.run_host``: the LLVM
CPU backend, else the reference). ``import mxjit`` needs neither torch nor a GPU; ``import mxjit.torch``
registers the torch ops (namespace ``mxjit``).
"""

from pkgutil import extend_path

# Development: with PYTHONPATH=python:<build>/python the compiled module is found in <build>/python/mxjit.
__path__ = extend_path(__path__, __name__)

from ._mxjit import (  # noqa: E402,F401  (the public API)
    AmaxNan,
    Apply,
    Clamp,
    CompileError,
    Cond,
    CudaError,
    DType,
    ElemFormat,
    Error,
    Expr,
    Gelu,
    Kernel,
    Layout,
    Mask,
    NanPolicy,
    Nvfp4Convention,
    Offsets,
    Output,
    OutputGeometry,
    Pipeline,
    Rank,
    Round,
    Saturate,
    Scale,
    ScaleDef,
    ScaleFormat,
    ScaleRule,
    UsageError,
    abs,
    amax,
    amax_var,
    blocks,
    cache_stats,
    cast,
    ceil_log2,
    clamp,
    cpu_backend,
    dequantize,
    device_arch,
    dtype_size,
    e2m1,
    e2m3,
    e3m2,
    e4m3,
    e5m2,
    e8m0_scale,
    elem_format_named,
    exp,
    exp2,
    f32_scale,
    floor_log2,
    fmax,
    fmin,
    fp_format,
    gelu,
    gpu_available,
    gpu_unavailable_reason,
    groups,
    input,
    int8,
    isinf,
    isnan,
    jit,
    kWholeAxis,
    layout,
    make_current,
    mask,
    max,
    min,
    never,
    nvfp4_scale,
    offsets,
    output,
    parse_pipeline,
    pipeline,
    pow2_ceil,
    pow2_floor,
    rank,
    recipes,
    relu,
    round_to,
    scale,
    sigmoid,
    silu,
    stored_var,
    swiglu,
    swizzle_scales,
    swizzled_size,
    tamax_var,
    to_text,
    vec,
    warmup,
    where,
    whole,
)

bf16 = DType.bf16
f16 = DType.f16
f32 = DType.f32
u8 = DType.u8
i32 = DType.i32
i64 = DType.i64

__version__ = "0.1.0"
