"""Tensorwise FP8 casts (one FP32 scale for the whole tensor) on the GPU (marker ``gpu``: skipped without one),
through mxjit.torch.run: a tensor-amax pre-pass, then the direct kernel's elementwise cast.

* Bit for bit against torchao 0.18's Float8 tensorwise cast run by torch on the same GPU
  (``hp_tensor_to_float8_dynamic``: ``tensor_to_scale`` + ``to_fp8_saturated``). Its recipe is mxjit's
  ``f32_scale(amax(whole tensor), e4m3, store_multiplier=True, pow2=...)``:
  amax = max |x| (NaN propagates), r = fp32(448 / max(amax, 1e-12)) (torchao divides in float64 and rounds
  once to float32: the same value for an FP32 amax), r rounded down to a power of two if asked, stored
  r; codes = saturating RNE cast of fp32(x) * r. Inputs without NaN (torch's NaN code sign is the host's).
* Against mxjit's own CPU backend (LLVM) on adversarial tensors: one NaN (amax NaN kept or, for vLLM's
  definition, skipped), +-Inf, all zeros, subnormals only; codes and the scale byte for byte.
"""

import pytest

torch = pytest.importorskip("torch")

import mxjit as mx  # noqa: E402
import mxjit.torch as mxt  # noqa: E402

pytestmark = pytest.mark.gpu


def tensorwise(dtype, pow2=False, elem=mx.e4m3, store_multiplier=True):
    v = mx.input("x", dtype, 2)
    s = mx.f32_scale(mx.amax(mx.blocks(v, (0, 1), (mx.whole, mx.whole))), elem, store_multiplier=store_multiplier, pow2=pow2)
    return mx.pipeline([mx.output("q", mx.cast(elem, v / s)), mx.output("s", s)])


def rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-20, 20, shape, generator=g).float())
    return x.to(dtype)


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (37, 300), (4097, 33), (2048, 5120)])
def test_torchao_float8_tensorwise_bit_exact_on_the_gpu(shape, dtype, pow2):
    ao_scaling = pytest.importorskip("torchao.float8.float8_scaling_utils")
    ao_config = pytest.importorskip("torchao.float8.float8_training_tensor")
    x = rand(shape, dtype, seed=shape[0] * 31 + shape[1]).cuda()
    if x.numel() > 4:
        x.view(-1)[3] = 0.0
    for inp in (x, x.t()):  # row-major, and a transposed (column-major) view
        want = ao_scaling.hp_tensor_to_float8_dynamic(inp, torch.float8_e4m3fn, ao_config.LinearMMConfig(),
                                                      round_scales_to_power_of_2=pow2)
        q, s = mxt.run(tensorwise(mx.bf16 if dtype == torch.bfloat16 else mx.f32, pow2), inp)
        assert torch.equal(s.reshape(()).view(torch.int32), want._scale.reshape(()).view(torch.int32))
        assert torch.equal(q.view(torch.uint8), want._data.view(torch.uint8))
    zeros = torch.zeros(shape, dtype=dtype, device="cuda")
    want = ao_scaling.hp_tensor_to_float8_dynamic(zeros, torch.float8_e4m3fn, ao_config.LinearMMConfig(),
                                                  round_scales_to_power_of_2=pow2)
    q, s = mxt.run(tensorwise(mx.bf16 if dtype == torch.bfloat16 else mx.f32, pow2), zeros)
    assert torch.equal(s.reshape(()).view(torch.int32), want._scale.reshape(()).view(torch.int32))
    assert torch.equal(q.view(torch.uint8), want._data.view(torch.uint8))


def adversarial(kind, shape=(129, 257)):
    x = rand(shape, torch.float32, seed=5)
    if kind == "nan":
        x[7, 9] = float("nan")
    elif kind == "inf":
        x[0, 0] = float("inf")
    elif kind == "-inf":
        x[128, 256] = float("-inf")
    elif kind == "zeros":
        x.zero_()
    elif kind == "subnormals":
        x = torch.full(shape, 2.0 ** -133) * torch.arange(shape[1]).float()
    elif kind == "max":
        x[4, 4] = -3.3895314e38  # bf16's largest
    return x.to(torch.bfloat16)


@pytest.mark.parametrize("kind", ["nan", "inf", "-inf", "zeros", "subnormals", "max"])
@pytest.mark.parametrize("recipe", ["torchao", "torchao pow2", "vllm", "e8m0 rceil"])
def test_tensorwise_adversarial_equals_the_cpu_backend(kind, recipe):
    v = mx.input("x", mx.bf16, 2)
    a = mx.amax(mx.blocks(v, (0, 1), (mx.whole, mx.whole)))
    if recipe.startswith("torchao"):
        s = mx.f32_scale(a, mx.e4m3, store_multiplier=True, pow2=recipe.endswith("pow2"))
    elif recipe == "vllm":
        s = mx.scale(a, mx.e4m3, mx.recipes.vllm_group(mx.e4m3, False))  # fmaxf's amax: NaN skipped
    else:
        s = mx.e8m0_scale(a, mx.e4m3, mx.ScaleRule.rceil)
    p = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / s)), mx.output("s", s)])
    x = adversarial(kind)
    q_gpu, s_gpu = mxt.run(p, x.cuda())
    q_cpu, s_cpu = mxt.run(p, x)
    assert torch.equal(q_gpu.cpu().view(torch.uint8), q_cpu.view(torch.uint8)), (kind, recipe)
    s_bytes = {1: torch.uint8, 4: torch.int32}[s_cpu.dtype.itemsize]
    assert torch.equal(s_gpu.cpu().view(s_bytes), s_cpu.view(s_bytes)), (kind, recipe)
