"""What `nerve forget` sends to the daemon and gets back: a selection, a request and a result
read back whole from their JSON, and a selection's flags checked by name."""

from __future__ import annotations

import pytest

from nerve.errors import UsageError
from nerve.events import BOOKKEEPING_KINDS
from nerve.privacy.forget import ForgetResult, Request
from nerve.privacy.selection import Selection

NOW = 1_800_000_000 * 10**9


def _selection() -> Selection:
    return Selection.of(
        sources=["shell"], kinds=["note.added"], match="deploy", before="1h", after="2h",
        now_ns=NOW,
    )  # fmt: skip


def test_a_selection_reads_back_whole_from_its_json() -> None:
    chosen = _selection()
    assert chosen.before is not None and chosen.after is not None
    assert Selection.from_json(chosen.to_json()) == chosen


def test_a_request_and_a_result_read_back_whole_from_their_json() -> None:
    request = Request(_selection(), "asked by the owner")
    assert Request.from_json(request.to_json()) == request
    result = ForgetResult(False, "why", 3, 1, 2, ["a.parquet"], {"shell": 3}, [{"seq": 9}])
    assert ForgetResult.from_json(result.to_json()) == result


def test_a_text_match_leaves_bookkeeping_out_unless_a_kind_or_all_kinds_is_named() -> None:
    assert Selection.of(match="x", now_ns=NOW).hidden == tuple(sorted(BOOKKEEPING_KINDS))
    assert Selection.of(match="x", kinds=["note.added"], now_ns=NOW).hidden == ()
    assert Selection.of(match="x", all_kinds=True, now_ns=NOW).hidden == ()


def test_a_bad_kind_names_its_flag() -> None:
    with pytest.raises(UsageError, match=r"^--kind 'Not A Kind': "):
        Selection.of(kinds=["Not A Kind"], now_ns=NOW)
