"""The torch ops on a GPU (marker ``gpu``: skipped without one): bit-exact with the CPU ops on random and
adversarial inputs with every output poisoned before the kernel runs; torch's current stream, also a
side stream; CUDA-graph capture and replay with new inputs, including a capture whose first call is a
JIT miss; a fresh thread; autograd's backward; torch.compile(mode="reduce-overhead"); the second GPU.
"""

import os
import threading

import pytest

torch = pytest.importorskip("torch")

import mxjit  # noqa: E402
import mxjit.torch as mxt  # noqa: E402
from mxjit.torch import _launch  # noqa: E402

from cases import op_cases, rand  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture
def poisoned(monkeypatch):
    """Every output of an mxjit op is filled before its kernel runs: bytes 0x5A on the GPU, 0xA5 on the
    CPU, so a byte neither side writes is a mismatch too."""
    real_allocate = _launch.allocate

    def allocate(spec, device):
        outs = real_allocate(spec, device)
        byte = 0x5A if device.type == "cuda" else 0xA5
        for t in outs:
            if t.numel():
                n = t.dtype.itemsize
                as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[n]
                t.view(as_int).fill_(int.from_bytes(bytes([byte] * n), "little", signed=n > 1))
        return outs

    monkeypatch.setattr(_launch, "allocate", allocate)


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _bytes(t):
    """All bytes of a tensor's storage span, in memory order (padding included)."""
    t = t.detach()
    if t.numel() == 0:
        return torch.empty(0, dtype=torch.uint8)
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.as_strided((span,), (1,)).view(torch.uint8).cpu() if t.dtype.itemsize == 1 else \
        t.as_strided((span,), (1,)).cpu().view(torch.uint8)


def assert_same(gpu_outs, cpu_outs, label):
    for i, (g, c) in enumerate(zip(_flat(gpu_outs), _flat(cpu_outs))):
        assert g.shape == c.shape and g.stride() == c.stride() and g.dtype == c.dtype, (label, i)
        assert torch.equal(_bytes(g), _bytes(c)), f"{label}: output {i} differs"


@pytest.mark.parametrize("special", [False, True])
def test_cuda_ops_bit_exact_with_cpu_ops(poisoned, special):
    cpu = op_cases("cpu", special)
    gpu = op_cases("cuda", special)
    for (name, op, cargs), (_, _, gargs) in zip(cpu, gpu):
        assert_same(op(*gargs), op(*cargs), name)


def test_nvfp4_and_large_shapes(poisoned):
    for shape in [(256, 1024), (1000, 320)]:
        x = rand(shape, seed=3, special=True)
        for conv in ("te", "torchao"):
            assert_same(mxt.nvfp4_quantize(x.cuda(), conv, "blocked"), mxt.nvfp4_quantize(x, conv, "blocked"), conv)
    x = rand((16384, 512), seed=4)
    assert_same(mxt.mxfp8_quantize(x.cuda(), True, True), mxt.mxfp8_quantize(x, True, True), "dim0+dim1")


def test_side_stream_and_stream_order():
    x = rand((2048, 1024), seed=5)
    want = mxt.to_mxfp8_dim1(x)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        xd = x.cuda(non_blocking=False) * 1.0  # produced on the side stream
        q, s = mxt.to_mxfp8_dim1(xd)
        done = torch.cuda.Event()
        done.record(side)
    torch.cuda.current_stream().wait_event(done)
    assert_same((q, s), want, "side stream")


def test_cuda_graph_capture_replay_with_new_inputs():
    x = rand((512, 256), seed=6).cuda()
    offs = torch.tensor([128, 128, 384, 512], dtype=torch.int32, device="cuda")

    def step(x):
        a = mxt.to_mxfp8_dim1(x)
        b = mxt.quantize_grouped(x, offs)
        c = mxt.nvfp4_quantize(x, "te", "blocked")  # workspace from torch's graph pool
        return (*a, *b, *c)

    mxt.warmup([(step, x)])  # compiles and loads on a side stream
    compiles = mxjit.cache_stats()["compiles"]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = step(x)
    assert mxjit.cache_stats()["compiles"] == compiles  # nothing compiled inside the capture
    for seed in (7, 8):
        new = rand((512, 256), seed=seed)
        x.copy_(new)
        g.replay()
        torch.cuda.synchronize()
        assert_same(outs, step(new.cuda()), f"replay {seed}")
        assert_same(outs, step_cpu(new, offs.cpu()), f"replay {seed} vs cpu")


def step_cpu(x, offs):
    return (*mxt.to_mxfp8_dim1(x), *mxt.quantize_grouped(x, offs), *mxt.nvfp4_quantize(x, "te", "blocked"))


def test_capture_whose_first_call_is_a_jit_miss():
    # A configuration no other test uses: its kernel is compiled and loaded inside the capture.
    x = rand((256, 192), torch.float16, seed=9).cuda()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        q, s = mxt.quantize(x, "e3m2", 64, 0, "even", "col_major", "blocked", "satfinite")
    new = rand((256, 192), torch.float16, seed=10)
    x.copy_(new)
    g.replay()
    torch.cuda.synchronize()
    assert_same((q, s), mxt.quantize(new, "e3m2", 64, 0, "even", "col_major", "blocked", "satfinite"), "miss")


def test_fresh_thread_without_a_current_context():
    x = rand((256, 256), seed=11)
    xd = x.cuda()
    torch.cuda.synchronize()
    result = {}

    def body():
        try:  # the first CUDA work of this thread is mxjit's launch
            result["out"] = [t.cpu() for t in mxt.to_mxfp8_dim1(xd)]
        except Exception as e:  # noqa: BLE001
            result["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert "error" not in result, result.get("error")
    assert_same(result["out"], mxt.to_mxfp8_dim1(x), "fresh thread")


class _CastInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        q, s = mxt.to_mxfp8_dim1(grad.contiguous())  # runs on autograd's worker thread
        _CastInBackward.seen = (q, s)
        return grad * 2


def test_inside_autograd_backward():
    x = rand((256, 128), seed=12).cuda().requires_grad_()
    g = rand((256, 128), seed=13)
    _CastInBackward.apply(x).backward(g.cuda())
    torch.cuda.synchronize()
    assert_same(_CastInBackward.seen, mxt.to_mxfp8_dim1(g), "backward")


def test_compile_reduce_overhead_zero_cudagraph_skips():
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()

    def f(x):
        q, s = mxt.to_mxfp8_dim1(x * 1.5)
        # Integer sums: exact in any reduction order (a float32 sum of 2^17 bytes is not).
        return q.view(torch.uint8).long().sum() + s.view(torch.uint8).long().sum()

    cf = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    x = rand((512, 256), seed=14).cuda()
    for _ in range(3):
        out = cf(x)
    torch.cuda.synchronize()
    assert counters["inductor"]["cudagraph_skips"] == 0
    assert torch.equal(out, f(x))


@pytest.mark.multigpu
def test_tensor_on_the_second_gpu():
    torch.cuda.set_device(0)
    x = rand((384, 256), seed=15)
    x1 = x.to("cuda:1")
    offs = torch.tensor([128, 384], dtype=torch.int32)
    out = (*mxt.to_mxfp8_dim1(x1), *mxt.quantize_grouped(x1, offs.to("cuda:1")), *mxt.nvfp4_quantize(x1))
    assert all(t.device == torch.device("cuda:1") for t in out)
    assert_same(out, (*mxt.to_mxfp8_dim1(x), *mxt.quantize_grouped(x, offs), *mxt.nvfp4_quantize(x)), "cuda:1")
    assert torch.cuda.current_device() == 0
    with pytest.raises(ValueError, match="offsets is on cuda:0 but the input is on cuda:1"):
        mxt.quantize_grouped(x1, offs.to("cuda:0"))


def test_device_errors():
    x = rand((64, 64)).cuda()
    with pytest.raises(ValueError, match="offsets is on cpu but the input is on cuda:0"):
        mxt.quantize_grouped(x, torch.tensor([32, 64], dtype=torch.int32))
    with pytest.raises(ValueError, match="scale is on cpu but data is on cuda:0"):
        q, s = mxt.to_mxfp8_dim0(x)
        mxt.dequantize(q, s.cpu())


def test_warmup_and_cache_counters():
    k = mxjit.jit(mxjit.parse_pipeline("bf16[2] -> mxfp8.e5m2 ceil blocks(1,32)"))
    mxjit.warmup([k], devices=[0])
    before = mxjit.cache_stats()
    x = rand((64, 64)).cuda()
    out = [torch.empty(64, 64, dtype=torch.uint8, device="cuda"), torch.empty(64, 2, dtype=torch.uint8, device="cuda")]
    k.launch(torch.cuda.current_stream().cuda_stream, 0, (x.data_ptr(), out[0].data_ptr(), out[1].data_ptr()),
             ((64, 64), (64, 64), (64, 2)), ((64, 1), (64, 1), (2, 1)))
    torch.cuda.synchronize()
    assert mxjit.cache_stats()["compiles"] == before["compiles"]  # the launch compiled nothing more


def test_launch_with_offsets_reuses_the_eager_compile():
    # Regression: the offsets' 16-byte alignment once entered the launch's stride class, so a jagged
    # cast compiled a second kernel (and missed the tuner's stored winners) at its first launch.
    # A constant of this run's own makes the kernel new to the disk cache (compiles are its writes).
    x_in = mxjit.input("x", mxjit.bf16, mxjit.rank(2)) * (1.0 + (os.getpid() % 4096) / 8192.0)
    s_def = mxjit.f32_scale(mxjit.amax(mxjit.groups(x_in, 0, mxjit.offsets("offs"))), mxjit.e4m3)
    k = mxjit.jit(mxjit.pipeline([mxjit.output("q", mxjit.cast(mxjit.e4m3, x_in / s_def)), mxjit.output("s", s_def)]))
    mxjit.warmup([k], devices=[0])
    before = mxjit.cache_stats()
    x = rand((64, 64)).cuda()
    offs = torch.tensor([16, 64], dtype=torch.int32, device="cuda")
    q = torch.empty(64, 64, dtype=torch.uint8, device="cuda")
    s = torch.empty(2, 64, dtype=torch.float32, device="cuda")
    k.launch(torch.cuda.current_stream().cuda_stream, 0, (x.data_ptr(), offs.data_ptr(), q.data_ptr(), s.data_ptr()),
             ((64, 64), (2,), (64, 64), (2, 64)), ((64, 1), (1,), (64, 1), (64, 1)))
    torch.cuda.synchronize()
    assert mxjit.cache_stats()["compiles"] == before["compiles"]


def test_prepared_launch_checks_pointers_and_follows_the_alignment_class():
    k = mxjit.jit(mxjit.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)"))
    stream = torch.cuda.current_stream().cuda_stream
    shapes, strides = ((64, 64), (64, 64), (64, 2)), ((64, 1), (64, 1), (2, 1))
    pl = k.prepare(0, shapes, strides)
    x = rand((64, 64), seed=16)
    want = mxt.to_mxfp8_dim0(x)
    buf = torch.empty(64 * 64 + 16, dtype=torch.bfloat16, device="cuda")
    for offset in (0, 1, 8, 0, 1):  # elements: 16-byte aligned, 2 bytes past, 16 past, ...
        xd = buf[offset:offset + 64 * 64].view(64, 64)
        xd.copy_(x)
        q = torch.full((64, 64), 0x5A, dtype=torch.uint8, device="cuda")
        s = torch.full((64, 2), 0x5A, dtype=torch.uint8, device="cuda")
        pl.launch(stream, (xd.data_ptr(), q.data_ptr(), s.data_ptr()))
        torch.cuda.synchronize()
        assert torch.equal(q.cpu(), want[0].view(torch.uint8)), offset
        assert torch.equal(s.cpu(), want[1].view(torch.uint8)), offset
    xp, qp, sp = xd.data_ptr(), q.data_ptr(), s.data_ptr()
    bad = [((0, qp, sp), "input 'x': data pointer is null"),
           ((xp + 1, qp, sp), "input 'x': data pointer is not aligned to its 2-byte element"),
           ((xp, qp, qp + 8), "output 's': overlaps output 'q'"),
           ((xp, xp + 64, sp), "output 'q': overlaps input 'x'")]
    for ptrs, msg in bad:
        with pytest.raises(mxjit.UsageError, match=msg):
            pl.launch(stream, ptrs)
        with pytest.raises(mxjit.UsageError, match=msg):  # the same message as the unprepared launch
            k.launch(stream, 0, ptrs, shapes, strides)
