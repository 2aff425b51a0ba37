"""Drop-in replacements for other libraries' cast entry points (mxjit.torch.compat.torchao)."""
