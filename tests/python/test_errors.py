"""Bad input to the torch ops raises ValueError / TypeError / RuntimeError naming the argument and the
rule (on CPU here; test_gpu.py repeats the device ones on a GPU) -- never a crash or a silent result."""

import pytest

torch = pytest.importorskip("torch")

import mxjit  # noqa: E402
import mxjit.torch as mxt  # noqa: E402

from cases import rand  # noqa: E402

ops = torch.ops.mxjit


@pytest.mark.parametrize("call,exc,match", [
    (lambda: mxt.to_mxfp8_dim0(torch.zeros(4, 32, dtype=torch.int32)), TypeError,
     r"to_mxfp8_dim0: x has dtype torch.int32; expected torch.bfloat16, torch.float16 or torch.float32"),
    (lambda: mxt.to_mxfp8_dim1(rand((2, 64, 32))), ValueError, r"to_mxfp8_dim1: x must be 2-D, got a 3-D tensor"),
    (lambda: mxt.mxfp8_quantize_3d(rand((64, 32))), ValueError, r"mxfp8_quantize_3d: x must be 3-D"),
    (lambda: mxt.quantize(rand((4, 64)), "e9m9"), ValueError, r"quantize: elem='e9m9' is not one of 'e4m3'"),
    (lambda: mxt.quantize(rand((4, 64)), "e4m3", 24), ValueError, r"block_size=24 must be a power of two"),
    (lambda: mxt.quantize(rand((4, 64)), "e4m3", 32, 2), ValueError, r"axis=2 is out of range for a 2-D input"),
    (lambda: mxt.quantize(rand((4, 64)), scaling_mode="round"), ValueError, r"scaling_mode='round' is not one of"),
    (lambda: mxt.quantize(rand((4, 64)), scale_layout="swizzled"), ValueError, r"scale_layout='swizzled'"),
    (lambda: mxt.quantize(rand((4, 63)), "e2m1"), ValueError, r"FP4 packs two codes per byte along axis 1, whose "
                                                              r"extent 63 is odd"),
    (lambda: mxt.quantize_grouped(rand((64, 64)), torch.tensor([32, 64])), TypeError,
     r"quantize_grouped: offsets has dtype torch.int64; group ends are torch.int32"),
    (lambda: mxt.quantize_grouped(rand((64, 64)), torch.tensor([[32, 64]], dtype=torch.int32)), ValueError,
     r"offsets must be 1-D"),
    (lambda: mxt.quantize_grouped(rand((64, 64)), torch.tensor([32, 64], dtype=torch.int32, device="meta")),
     ValueError, r"offsets is on meta but the input is on cpu; both must be on one device"),
    (lambda: mxt.quantize_grouped(rand((64, 64)), torch.tensor([40, 64], dtype=torch.int32), axis=0), ValueError,
     r"group end \[0\] = 40 is neither a multiple of the block size 32 nor the extent 64"),
    (lambda: mxt.quantize_grouped(rand((64, 64)), torch.tensor([48, 32], dtype=torch.int32)), ValueError,
     r"offs"),
    (lambda: mxt.quantize_grouped(rand((64, 64)), torch.tensor([32, 80], dtype=torch.int32)), ValueError,
     r"offs"),
    (lambda: mxt.fp8_per_group_colwise_scales(rand((64, 8)), torch.tensor([64], dtype=torch.int32), torch.bfloat16),
     ValueError, r"output_dtype=torch.bfloat16 must be torch.float8_e4m3fn or torch.float8_e5m2"),
    (lambda: mxt.mxfp8_quantize_3d(rand((2, 64, 32)), scale_block_dim2=16), ValueError,
     r"\(scale_block_dim1, scale_block_dim2\)=\(32, 16\) must be"),
    (lambda: mxt.dequantize(torch.zeros(4, 64, dtype=torch.uint8), torch.zeros(4, 3, dtype=torch.uint8)), ValueError,
     r"dequantize: scale has shape \(4, 3\); for data of shape \(4, 64\) \(e4m3, blocks of 32 along axis 1\) it "
     r"must be \(4, 2\)"),
    (lambda: mxt.dequantize(torch.zeros(4, 64), torch.zeros(4, 2, dtype=torch.uint8)), TypeError,
     r"dequantize: data has dtype torch.float32; expected a one-byte dtype"),
    (lambda: mxt.dequantize(torch.zeros(4, 64, dtype=torch.uint8), torch.zeros(4, 2, dtype=torch.int32)), TypeError,
     r"dequantize: scale has dtype torch.int32"),
    (lambda: mxt.mx_block_rearrange(torch.zeros(8, dtype=torch.uint8)), ValueError, r"scales must be at least 2-D"),
    (lambda: mxt.nvfp4_quantize(rand((4, 64)), convention="nvidia"), ValueError, r"convention='nvidia'"),
    (lambda: mxt.run("bf16[2] -> mxfp8.e4m3", rand((4, 32)), rand((4, 32))), ValueError,
     r"run: the pipeline takes 1 inputs \(x\), got 2"),
    (lambda: mxt.run("bf16[2] -> mxfp8.e4m3 rceli", rand((4, 32))), ValueError, r"spec:1:23: unknown rule 'rceli'"),
    (lambda: mxt.run("hash:0123", rand((4, 32))), ValueError, r"pipeline 'hash:0123' is not registered"),
    (lambda: mxt.run("bf16[2] -> mxfp8.e4m3", rand((4, 32), torch.float32)), TypeError,
     r"run: input 'x' has dtype torch.float32; the pipeline declares it bf16"),
    (lambda: mxt.to_mxfp8_dim1(rand((1, 64)).expand(96, 64)), mxjit.UsageError,
     r"input 'x': stride 0 of axis 0 is not positive"),
])
def test_bad_input_message(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_errors_are_the_documented_classes():
    assert issubclass(mxjit.UsageError, ValueError)
    with pytest.raises(ValueError):
        mxt.quantize(rand((4, 64)), "e4m3", 32, 5)


def test_unusual_but_valid_inputs_work():
    # Zero-size domains return zero-filled padded outputs; expanded (stride 0) and sliced inputs read directly.
    q, s = mxt.quantize(torch.zeros(0, 64, dtype=torch.bfloat16), scale_layout="blocked")
    assert q.shape == (0, 64) and s.shape == (0, 4)
    x = torch.zeros(1, 64, dtype=torch.bfloat16).as_strided((1, 64), (0, 1))  # stride 0 on an axis of extent 1
    assert x.stride() == (0, 1)
    q, s = mxt.to_mxfp8_dim0(x)
    want_q, want_s = mxt.to_mxfp8_dim0(x.contiguous())
    assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8))
    assert torch.equal(s.view(torch.uint8), want_s.view(torch.uint8))
    big = rand((128, 130))
    q, s = mxt.to_mxfp8_dim0(big[:, 1:129])  # 2-byte misaligned rows
    want_q, want_s = mxt.to_mxfp8_dim0(big[:, 1:129].contiguous())
    assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8))
