"""``pyarrow.compute``, imported when a kernel is first called rather than with the log.

Importing it wraps every Arrow compute function in Python (~50 ms): a command that appends
one event or reads a chain link calls none, so the log's modules reach it through ``pc``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["pc"]


class _Compute:
    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("pyarrow.compute"), name)
        setattr(self, name, value)  # found directly from now on
        return value


pc: Any = _Compute()
