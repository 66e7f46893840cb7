"""The file side of both predictor checkpoint formats (GNN format 1: ``checkpoint``; physics
format 2: ``physpredict``): the ``format`` tag, an atomic write and a safe, one-line-error read.

Kept apart from both so that neither pulls in the other's model code (the GNN's
``torch_geometric``, the physics model's trees) just to read or write a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from gpuscope.core.errors import CheckpointError

#: The ``format`` entry of every gpuscope predictor checkpoint, whatever its version.
FORMAT = "gpuscope-predictor"


def save_checkpoint_dict(obj: dict[str, Any], path: Path) -> Path:
    """``torch.save`` to a temporary file, then rename it over ``path``: atomic, so a reader
    never sees half a checkpoint. The parent folder must exist."""
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)
    return path


def read_checkpoint_dict(path: str | Path) -> dict[str, Any]:
    """``torch.load(weights_only=True)`` of a gpuscope checkpoint (any version), or
    ``CheckpointError`` with one line."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - unpickling/zip errors all mean "corrupt"
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {path} is corrupt or not a checkpoint ({msg[:120]})"
                              ) from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path} is not a gpuscope predictor checkpoint")
    return obj
