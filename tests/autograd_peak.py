"""Reference for the liveness tests: the peak of the bytes held by tensor
storages created while the mode is active, measured on CPU. Each new output storage (not
one of the op's inputs' storages: views and in-place ops allocate nothing) is
counted from the op that creates it until its last reference dies (a ``weakref.finalize`` on
the storage, which PyTorch keeps alive with its C++ storage: saved-for-backward tensors count
until autograd frees them)."""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class PeakLiveBytes(TorchDispatchMode):
    """``peak``: the maximum, over the ops run under the mode, of the bytes alive."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        # views and in-place ops return their inputs' storages: not new
        seen = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            s = t.untyped_storage()
            key = s.data_ptr()
            if key in self.live or key in seen or s.nbytes() == 0:
                continue
            self.live[key] = s.nbytes()
            self.current += s.nbytes()
            weakref.finalize(s, self._free, key)
        self.peak = max(self.peak, self.current)
        return out
