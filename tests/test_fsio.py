"""``fsio.replace_unsynced``: a small file replaced whole, owner-only, with no temp file left."""

from __future__ import annotations

import os
from pathlib import Path

from nerve import fsio


def test_a_file_is_replaced_whole_owner_only_and_no_temp_file_is_left(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    fsio.replace_unsynced(path, b"first", site="test")
    fsio.replace_unsynced(path, b"second", site="test")
    assert path.read_bytes() == b"second"
    assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(os.listdir(tmp_path)) == ["state.json"]
