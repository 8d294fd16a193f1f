"""A test's guard against host synchronisation in a step: the Python conversions of a tensor raise, and the
aten calls that wait for the device or copy between devices are recorded (shared by the multimodal and the
semi-supervised tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

HOST_READS = ("item", "__bool__", "tolist", "__int__", "__float__")
# aten calls that make the host wait for the device: a scalar read, outputs sized by the data, torch's
# multinomial (it checks its weights on the host)
WAITING = {"_local_scalar_dense", "is_nonzero", "equal", "nonzero", "masked_select", "multinomial", "argwhere"}
WAITING |= {"_unique2", "unique_dim", "unique_consecutive"}


class DeviceReads(TorchDispatchMode):
    """Records the aten calls of its block that wait for the device or copy between host and device."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if name in WAITING or (name == "repeat_interleave" and func._overloadname != "self_int"):
            self.calls.append(str(func))
        elif name == "_to_copy" and "device" in kwargs and tensors and tensors[0].device != kwargs["device"]:
            self.calls.append(f"{func} {tensors[0].device} -> {kwargs['device']}")
        elif name == "copy_" and len(tensors) == 2 and tensors[0].device != tensors[1].device:
            self.calls.append(f"{func} {tensors[1].device} -> {tensors[0].device}")
        elif name in ("index", "index_put", "index_put_", "_index_put_impl_"):
            indices = [i for i in args[1] if isinstance(i, torch.Tensor)]
            if any(i.dtype == torch.bool or i.device != args[0].device for i in indices):
                self.calls.append(f"{func} with a boolean or host index")
        return func(*args, **kwargs)


@contextmanager
def no_host_reads() -> Iterator[DeviceReads]:
    """The Python conversions of a tensor raise inside the block (restored after), and the aten calls that wait
    for the device are recorded."""
    saved = {name: getattr(torch.Tensor, name) for name in HOST_READS}

    def refuse(name):
        def method(*args, **kwargs):
            raise AssertionError(f"a training step read a tensor on the host: Tensor.{name}")

        return method

    try:
        for name in HOST_READS:
            setattr(torch.Tensor, name, refuse(name))
        with DeviceReads() as reads:
            yield reads
    finally:
        for name, method in saved.items():
            setattr(torch.Tensor, name, method)
