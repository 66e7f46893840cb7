"""The file side of both predictor checkpoint formats (GNN format 1: ``checkpoint``; physics
format 2: ``physpredict``): the ``format`` tag, an atomic write and a safe, one-line-error read.

Kept apart from both so that neither pulls in the other's model code (the GNN's
``torch_geometric``, the physics model's trees) just to read or write a file; torch itself
loads inside the functions, so :func:`check_checkpoint_file` runs before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuscope.core.errors import CheckpointError, InputError
from gpuscope.core.io import check_input_file, check_keys, load_torch, replace_atomically

#: The ``format`` entry of every gpuscope predictor checkpoint, whatever its version.
FORMAT = "gpuscope-predictor"


def save_checkpoint_dict(obj: dict[str, Any], path: Path) -> Path:
    """``torch.save`` through the one atomic writer: a reader never sees half a checkpoint,
    and a full disk is one line that says so."""
    import torch

    return replace_atomically(path, lambda t: torch.save(obj, t), what="checkpoint")


#: The keys and types every predictor checkpoint holds, whatever its version (the versions'
#: own keys are checked by their loaders).
COMMON_KEYS: dict[str, Any] = {"format": str, "format_version": int, "targets": list,
                               "device": str}


def resolve_checkpoint(path: str | Path) -> Path:
    """``path`` when it exists, else a bundled checkpoint of that name (``titanx``,
    ``multi``, ``v100-driple``: ``datasets/checkpoints/<name>.pt``), else ``path`` as given
    (its reader names it missing)."""
    p = Path(path)
    if p.exists() or len(p.parts) != 1:
        return p
    from gpuscope.core.data import bundled

    b = bundled("checkpoints", p.name if p.suffix == ".pt" else f"{p.name}.pt")
    return b if b.is_file() else p


def bundled_checkpoints() -> list[str]:
    """Names of the bundled checkpoints (``resolve_checkpoint`` accepts them)."""
    from gpuscope.core.data import bundled

    return sorted(p.stem for p in bundled("checkpoints").glob("*.pt"))


def read_checkpoint_dict(path: str | Path) -> dict[str, Any]:
    """A gpuscope checkpoint (any version; a bundled one by name: :func:`resolve_checkpoint`)
    read through ``gpuscope.core.io.load_torch`` (bounded, ``weights_only``), its common keys
    checked; ``CheckpointError`` with one line naming the problem (or the key) otherwise."""
    path = check_checkpoint_file(path)
    obj = load_torch(path, "checkpoint")
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path} is not a gpuscope predictor checkpoint")
    check_keys(obj, COMMON_KEYS, f"checkpoint {path}")
    if not all(isinstance(t, str) for t in obj["targets"]):
        raise CheckpointError(f"checkpoint {path}: key 'targets' must be a list of names")
    return obj


def check_checkpoint_file(path: str | Path) -> Path:
    """The checkpoint ``path`` names (a bundled one by name: :func:`resolve_checkpoint`) if
    it can hold a checkpoint, checked without torch (commands call it before they import
    torch): an existing file that is a ``torch.save`` archive (a zip holding a ``data.pkl``);
    ``CheckpointError`` with one line otherwise."""
    import zipfile

    path = resolve_checkpoint(path)
    if path.exists() or path.is_symlink():  # a FIFO, device, folder, link loop: one line
        try:
            check_input_file(path, "checkpoint")
        except InputError as e:
            raise CheckpointError(str(e)) from None
    if not path.is_file():
        hint = f"; bundled: {', '.join(bundled_checkpoints())}" if len(path.parts) == 1 else ""
        raise CheckpointError(f"checkpoint {path} does not exist{hint}")
    try:
        with zipfile.ZipFile(path) as z:
            pickled = any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        pickled = False
    if not pickled:
        raise CheckpointError(f"checkpoint {path} is corrupt or not a checkpoint (not a "
                              "torch.save archive)")
    return path
