"""One PEP 562 helper for every package ``__init__``: public names imported on first use.

A room's ``__init__`` lists its public API as ``name -> module`` and gets ``__getattr__``,
``__dir__`` and ``__all__`` from :func:`attach`, so ``import gpuscope.<room>`` (and therefore
``gpuscope --help``) loads none of the heavy modules (torch, pandas, pydantic) behind them::

    __getattr__, __dir__, __all__ = attach(__name__, {"JobSpec": ".spec", "read_queue": ".queue"})

A module path starting with ``.`` is relative to the package. The imported value is cached in
the package's namespace, so later lookups are plain attribute reads.

A public name may share its name with the submodule that defines it (``simulate`` in
``simulate.py``): importing that submodule binds it on the package, which would hide the
function, so the package keeps the export instead, as an eager ``from .simulate import
simulate`` would.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any


def attach(package: str, exports: Mapping[str, str]
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` exporting ``exports``."""
    names = sorted(exports)

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(where, package if where.startswith(".") else None)
        value = getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(names)

    shadowed = {name for name, where in exports.items()
                if where in (f".{name}", f"{package}.{name}")}
    if shadowed:
        sys.modules[package].__class__ = _package_type(package, frozenset(shadowed))
    return __getattr__, __dir__, list(names)


def _package_type(package: str, shadowed: frozenset[str]) -> type[types.ModuleType]:
    """A module type whose submodule ``<name>`` binds as its export ``name``."""

    class _Package(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if (name in shadowed and isinstance(value, types.ModuleType)
                    and value.__name__ == f"{package}.{name}"):
                value = getattr(value, name)
            super().__setattr__(name, value)

    return _Package
