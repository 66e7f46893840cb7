"""The file side of both predictor checkpoint formats (GNN format 1: ``checkpoint``; physics
format 2: ``physpredict``): the ``format`` tag, an atomic write and a safe, one-line-error read.

Kept apart from both so that neither pulls in the other's model code (the GNN's
``torch_geometric``, the physics model's trees) just to read or write a file; torch itself
loads inside the functions, so :func:`check_checkpoint_file` runs before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuscope.core.errors import CheckpointError

#: The ``format`` entry of every gpuscope predictor checkpoint, whatever its version.
FORMAT = "gpuscope-predictor"


def save_checkpoint_dict(obj: dict[str, Any], path: Path) -> Path:
    """``torch.save`` to a temporary file, then rename it over ``path``: atomic, so a reader
    never sees half a checkpoint. The parent folder must exist."""
    import torch

    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)
    return path


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
    """``torch.load(weights_only=True)`` of a gpuscope checkpoint (any version; a bundled one
    by name: :func:`resolve_checkpoint`), or ``CheckpointError`` with one line."""
    import torch

    path = check_checkpoint_file(path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - unpickling/zip errors all mean "corrupt"
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {path} is corrupt or not a checkpoint ({msg[:120]})"
                              ) from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path} is not a gpuscope predictor checkpoint")
    return obj


def check_checkpoint_file(path: str | Path) -> Path:
    """The checkpoint ``path`` names (a bundled one by name: :func:`resolve_checkpoint`) if
    it can hold a checkpoint, checked without torch (commands call it before they import
    torch): an existing file that is a ``torch.save`` archive (a zip holding a ``data.pkl``);
    ``CheckpointError`` with one line otherwise."""
    import zipfile

    path = resolve_checkpoint(path)
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
