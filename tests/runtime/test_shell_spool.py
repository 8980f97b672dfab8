"""The shell sense's reading of the hook's spool: lines refused and counted, a line still being
written read once complete, a shrunk spool read from its start, bytes kept exactly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nerve.shellhook import parse_spool_line
from tests.runtime.test_senses_builtin import initial, run

LINE = "nerve1\tbash\t{pid}.1700000000\t{start}\t1700000001.0\t{code}\t/tmp\t{cmd}\n"


def _line(cmd: str = "true", pid: str = "42", start: str = "1700000000.5", code: str = "0") -> str:
    return LINE.format(pid=pid, start=start, code=code, cmd=cmd)


def _opts(spool: Path, **more: object) -> dict[str, object]:
    return {"spool": str(spool), "files": [], **more}


REFUSED = [
    _line().replace("nerve1", "nerve2"),  # another version
    _line().replace("bash", "tcsh"),
    _line(cmd="a\tb"),  # a raw tab: the hook escapes every tab
    _line(code="256"),
    _line(code="-1"),
    _line(pid="0"),
    _line(pid="99999999"),
    _line(pid="x"),
    _line(start="0.5"),
    _line(start="1e300"),
    _line(start="nan"),
]


@pytest.mark.parametrize("bad", REFUSED)
def test_a_line_of_another_version_or_out_of_range_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_spool_line(bad.removesuffix("\n"))


def test_refused_lines_are_counted_where_the_sense_reports_its_state(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    spool.write_text("".join([_line("first"), *REFUSED, _line("last")]))
    first = run("shell", initial("shell"), tmp_path, **_opts(spool))
    assert [o.payload["command"] for o in first.observations] == ["first", "last"]
    assert first.state["spool"]["refused"] == len(REFUSED)
    with spool.open("a") as more:
        more.write(_line(code="300") + _line("again"))
    second = run("shell", first.state, tmp_path, **_opts(spool))
    assert [o.payload["command"] for o in second.observations] == ["again"]
    assert second.state["spool"]["refused"] == len(REFUSED) + 1  # a running count


def test_a_line_still_being_written_is_read_once_complete(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    whole = _line("make -j8")
    spool.write_text(_line("one") + whole[:20])
    first = run("shell", initial("shell"), tmp_path, **_opts(spool))
    assert [o.payload["command"] for o in first.observations] == ["one"]
    with spool.open("a") as rest:
        rest.write(whole[20:])
    second = run("shell", first.state, tmp_path, **_opts(spool))
    assert [o.payload["command"] for o in second.observations] == ["make -j8"]
    assert second.state["spool"]["refused"] == 0


def test_a_line_still_being_written_to_a_renamed_spool_is_read_once_complete(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "shell.spool"
    spool.write_text(_line("one"))
    opts = _opts(spool, spool_max_bytes=10)
    first = run("shell", initial("shell"), tmp_path, **opts)
    assert not spool.exists()  # read whole and renamed
    whole = _line("late")
    with open(f"{spool}.1", "a") as late:  # a shell that opened it before the rename
        late.write(whole[:25])
    second = run("shell", first.state, tmp_path, **opts)
    assert not second.observations and Path(f"{spool}.1").exists()  # kept for its tail
    with open(f"{spool}.1", "a") as late:
        late.write(whole[25:])
    third = run("shell", second.state, tmp_path, **opts)
    assert [o.payload["command"] for o in third.observations] == ["late"]
    assert not Path(f"{spool}.1").exists()


def test_a_renamed_spool_cut_for_good_is_dropped(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    spool.write_text(_line("one"))
    opts = _opts(spool, spool_max_bytes=10)
    state = run("shell", initial("shell"), tmp_path, **opts).state
    with open(f"{spool}.1", "a") as late:
        late.write("nerve1\tbash\t4")  # a shell killed mid-write
    state = run("shell", state, tmp_path, **opts).state
    state = run("shell", state, tmp_path, **opts).state  # unchanged since: dropped
    assert not Path(f"{spool}.1").exists() and "rotated" not in state["spool"]


def test_a_shrunk_spool_is_read_from_its_start_even_grown_again(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    spool.write_text(_line("old one") + _line("old two"))
    first = run("shell", initial("shell"), tmp_path, **_opts(spool))
    assert len(first.observations) == 2
    with spool.open("r+") as same:  # the same file (inode) emptied, then written again
        same.truncate(0)
        same.write(_line("new one") + _line("new two") + _line("new three"))
    second = run("shell", first.state, tmp_path, **_opts(spool))
    assert [o.payload["command"] for o in second.observations] == [
        "new one",
        "new two",
        "new three",
    ]
    spool.write_text(_line("short"))
    third = run("shell", second.state, tmp_path, **_opts(spool))
    assert [o.payload["command"] for o in third.observations] == ["short"]


def test_bytes_that_are_not_utf8_are_kept_exactly_by_the_parser(tmp_path: Path) -> None:
    raw = _line(cmd="caf\\\\\\t\\n").encode().replace(b"caf", b"caf\xe9\xff")
    record = parse_spool_line(os.fsdecode(raw.removesuffix(b"\n")))
    assert os.fsencode(record.command) == b"caf\xe9\xff\\\t\n"
    spool = tmp_path / "shell.spool"
    spool.write_bytes(raw)
    (obs,) = run("shell", initial("shell"), tmp_path, **_opts(spool)).observations
    assert obs.payload["command"] == "caf\ufffd\ufffd\\\t\n"  # the log keeps text


def test_a_hook_line_becomes_one_observation_with_its_outcome_and_failure_streak(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "shell.spool"
    spool.write_text(_line("make", code="2") + _line("make", code="2") + _line("true"))
    out = run("shell", initial("shell"), tmp_path, **_opts(spool))
    first = out.observations[0]
    assert first.line == "$ make [exit 2]" and first.valid_time_ns == 1_700_000_000_500_000_000
    assert first.payload == {
        "command": "make",
        "format": "hook",
        "exit": 2,
        "duration_ms": 500,
        "cwd": "/tmp",
        "session": "42.1700000000",
        "shell": "bash",
        "timestamp": 1_700_000_000,
        "elapsed_s": 0,
        "readings": {"exit_status": 2, "duration_ms": 500, "failure_streak": 1},
    }
    streaks = [o.payload["readings"]["failure_streak"] for o in out.observations]
    assert streaks == [1, 2, 0]  # a success ends the streak
    assert out.state["commands"] == 3 and out.state["streaks"] == {"42.1700000000": 0}
    more = run("shell", out.state, tmp_path, **_opts(spool))
    spool.write_text(spool.read_text() + _line("ls"))
    again = run("shell", more.state, tmp_path, **_opts(spool))
    assert again.state["commands"] == 4  # a running count


def test_a_shell_with_the_hook_has_its_history_file_skipped(tmp_path: Path) -> None:
    spool, history = tmp_path / "shell.spool", tmp_path / ".bash_history"
    history.write_text("ls\n")
    first = run("shell", initial("shell"), tmp_path, spool=str(spool), files=[str(history)])
    assert first.state["files"][str(history)]["status"] == "ok"
    spool.write_text(_line("pwd"))
    history.write_text("ls\npwd\n")
    second = run("shell", first.state, tmp_path, spool=str(spool), files=[str(history)])
    assert [o.payload["format"] for o in second.observations] == ["hook"]
    skipped = "skipped: the shell hook records these"
    entry = second.state["files"][str(history)]
    assert entry["status"] == skipped and entry["note"] == skipped
    assert entry["offset"] == first.state["files"][str(history)]["offset"]  # kept for later


def test_the_spool_s_state_says_when_there_is_none_yet_or_it_is_not_a_file(
    tmp_path: Path,
) -> None:
    spool = tmp_path / "shell.spool"
    none = run("shell", initial("shell"), tmp_path, **_opts(spool)).state["spool"]
    assert none == {
        "inode": None,
        "offset": 0,
        "note": "no spool yet (no hook has written)",
        "refused": 0,
    }
    spool.mkdir()
    folder = run("shell", initial("shell"), tmp_path, **_opts(spool)).state["spool"]
    assert folder["note"] == "skipped: the spool is not a regular file"


def test_a_spool_line_longer_than_a_read_is_skipped_and_said(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    spool.write_text("x" * 40 + "\n" + _line("after"))
    opts = _opts(spool, max_read_bytes=16)
    first = run("shell", initial("shell"), tmp_path, **opts)
    assert not first.observations and first.state["spool"]["offset"] == 16
    assert first.state["spool"]["note"] == (
        "1 bad spool line(s) refused; first at skipped 16 bytes holding no complete line"
    )


@pytest.mark.parametrize("bad", ["", 5, ["a"]])
def test_a_spool_option_that_is_not_a_path_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match=r"senses\.shell\.options\.spool must be a path"):
        run("shell", initial("shell"), tmp_path, spool=bad, files=[])


def test_a_spool_read_whole_is_renamed_from_one_mebibyte_by_default(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    line = _line("x" * 60)
    count = -(-(1024 * 1024) // len(line))  # just past 1 MiB
    spool.write_text(line * count)
    assert 1024 * 1024 <= spool.stat().st_size < 1024 * 1024 + len(line)
    opts = _opts(spool, max_per_compute=count, max_read_bytes=2 * 1024 * 1024)
    state = run("shell", initial("shell"), tmp_path, **opts).state
    assert not spool.exists() and Path(f"{spool}.1").exists()
    assert state["spool"]["rotated"]["offset"] == count * len(line)
