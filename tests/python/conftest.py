"""pytest set-up for mxjit's Python tests.

GPU tests carry the ``gpu`` marker and skip with one line where torch sees no GPU; ``multigpu`` tests
need two. The kernel cache goes to a fresh directory per session unless MXJIT_CACHE_DIR is set.
"""

import os
import tempfile

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skips cleanly without one)")
    config.addinivalue_line("markers", "multigpu: needs two CUDA GPUs")
    if "MXJIT_CACHE_DIR" not in os.environ:
        os.environ["MXJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="mxjit-pytest-cache-")


def _cuda_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def pytest_collection_modifyitems(config, items):
    n = _cuda_count()
    for item in items:
        if "gpu" in item.keywords and n == 0:
            item.add_marker(pytest.mark.skip(reason="no CUDA GPU"))
        if "multigpu" in item.keywords and n < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs 2 CUDA GPUs, {n} present"))
