"""`nerve tail` for people: local time, nerve's own records named, bookkeeping hidden, time
windows, typos caught, bounded on a terminal, and `tail -f` appending lines."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.clock import LOGICAL_MAX, Hlc
from nerve.errors import UsageError
from nerve.events import NERVE_SOURCE, SourceClass
from nerve.log import segments as seg
from nerve.log import window
from nerve.log.reader import snapshot, table_since
from nerve.log.select import TailFilter
from nerve.log.store import EventLog
from nerve.log.window import before, newest
from nerve.tail import parse_instant
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.tty import TtyProcess, run_tty

NS = 1_000_000_000
MAY_1_10H = int(datetime(2024, 5, 1, 10, tzinfo=UTC).timestamp()) * NS  # 12:00 in Paris


def cli(ws: WorkspaceDir, *args: str, **kw: object) -> object:
    return run_cli("--workspace", str(ws.root), *args, **kw)  # type: ignore[arg-type]


def said(text: str) -> str:
    """stderr with typer's error box and its line breaks taken out."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def wire(hour: int, line: str, kind: str = "observation", source: str = "shell") -> str:
    """One whole event at 2024-05-01 ``hour``:00 UTC, for `nerve import`."""
    stamp = [MAY_1_10H + (hour - 10) * 3600 * NS, 0]
    subject = "cpu" if source == "vendor:1024" else ""
    obj = {"hlc": stamp, "node": "n", "kind": kind, "source": source, "line": line}
    return json.dumps({**obj, "subject": subject})


@pytest.fixture
def day(workspace: WorkspaceDir) -> WorkspaceDir:
    """A log of one morning: observations, nerve's bookkeeping and an error."""
    events = [
        wire(10, "ls"),
        wire(10, "cpu: state", "sense.state", "vendor:1024"),
        wire(11, "cpu signalled", "signal", "vendor:1024"),
        wire(11, "make"),
        wire(12, "cpu: boom", "sense.error", "vendor:1024"),
        wire(13, "git push"),
    ]
    cli(workspace, "import", "-", input="\n".join(events) + "\n")
    return workspace


# -- reading: what a person sees ------------------------------------------------------


def test_piped_tail_reads_local_time_first_and_names_nerve(day: WorkspaceDir) -> None:
    out = cli(day, "tail", env={"TZ": "Europe/Paris"}).stdout  # type: ignore[attr-defined]
    rows = [line.split("\t") for line in out.splitlines()]
    assert [r[0] for r in rows] == [
        "2024-05-01T12:00:00.000000+02:00",
        "2024-05-01T13:00:00.000000+02:00",
        "2024-05-01T14:00:00.000000+02:00",
        "2024-05-01T15:00:00.000000+02:00",
    ]  # sense.state and signal are bookkeeping: hidden
    assert rows[2][1:4] == ["nerve", "sense.error", "cpu"] and rows[2][-1] == "cpu: boom"
    utc = cli(day, "tail", "-n", "1", "--utc", "--hlc").stdout  # type: ignore[attr-defined]
    time_, stamp, *_ = utc.split("\t")
    assert time_ == "2024-05-01T13:00:00.000000Z" and stamp == f"{MAY_1_10H + 3 * 3600 * NS}.0"


def test_bookkeeping_shows_when_asked(day: WorkspaceDir) -> None:
    def lines(*args: str) -> list[str]:
        out = cli(day, "tail", *args).stdout  # type: ignore[attr-defined]
        return [row.split("\t")[-1] for row in out.splitlines()]

    assert "cpu: state" not in lines() and "cpu signalled" not in lines("--source", "nerve")
    assert lines("--source", "nerve") == ["cpu: boom"]
    assert lines("--all-kinds") == ["ls", "cpu: state", "cpu signalled", "make", "cpu: boom",
                                    "git push"]  # fmt: skip
    assert lines("--kind", "signal") == ["cpu signalled"]
    dump = cli(day, "tail", "--all", "--json").stdout  # type: ignore[attr-defined]
    assert len(dump.splitlines()) == 6  # the export form keeps every kind, as `import` needs


def test_since_and_until_take_durations_iso_times_and_stamps(day: WorkspaceDir) -> None:
    def lines(*args: str) -> list[str]:
        out = cli(day, "tail", *args, env={"TZ": "Europe/Paris"}).stdout  # type: ignore[attr-defined]
        return [row.split("\t")[-1] for row in out.splitlines()]

    assert lines("--since", "2024-05-01T11:00:00Z") == ["make", "cpu: boom", "git push"]
    assert lines("--since", "2024-05-01T13:00") == ["make", "cpu: boom", "git push"]  # local
    assert lines("--until", "2024-05-01 11:00+00:00") == ["ls", "make"]
    assert lines("--since", "2024-05-01T11:00Z", "--until", "2024-05-01T12:00Z") == [
        "make",
        "cpu: boom",
    ]
    stamp = cli(day, "tail", "-n", "2", "--hlc").stdout.splitlines()[0].split("\t")[1]  # type: ignore[attr-defined]
    assert lines("--since", stamp) == ["cpu: boom", "git push"]  # as --hlc printed it
    assert lines("--since", "10m") == [] and len(lines("--since", "52w", "--all-kinds")) == 0
    for flag in ("--since", "--until"):
        proc = cli(day, "tail", flag, "yesterday-ish", check=False)
        assert proc.returncode == 2  # type: ignore[attr-defined]
        assert f"UsageError: invalid value for '{flag}': 'yesterday-ish'" in said(proc.stderr)  # type: ignore[attr-defined]


def test_typos_are_caught(day: WorkspaceDir) -> None:
    proc = cli(day, "tail", "--kind", "sense.stat")
    assert "warning: no kind 'sense.stat'; did you mean 'sense.state'?" in proc.stderr  # type: ignore[attr-defined]
    quiet = cli(day, "tail", "--kind", "sense.error", "--source", "nerve")
    assert quiet.stderr == ""  # type: ignore[attr-defined]
    bad = cli(day, "tail", "--source", "shel", check=False)
    assert bad.returncode == 2 and "did you mean 'shell'?" in said(bad.stderr)  # type: ignore[attr-defined]
    emit = cli(day, "emit", "--source", "netwrk", check=False)
    assert "did you mean 'network'?" in emit.stderr  # type: ignore[attr-defined]
    negative = cli(day, "tail", "-n", "-5", check=False)
    assert negative.returncode == 2 and negative.stdout == ""  # type: ignore[attr-defined]


# -- on a terminal ----------------------------------------------------------------------


def test_a_terminal_shows_at_most_limit_rows_and_says_how_many_more(day: WorkspaceDir) -> None:
    args = ("--workspace", str(day.root), "tail", "--all", "--all-kinds")
    text, err, code = run_tty(*args, "--limit", "2", env={"TZ": "UTC", "NO_COLOR": "1"})
    shown = text.splitlines()
    assert (
        code == 0 and len(shown) == 2 and err == "… 4 more rows (use --limit 0 or --json for all)\n"
    )
    assert shown[0].startswith("May 01 12:00:00.000  nerve ") and shown[1].endswith("git push")
    assert "sense.error" in shown[0] and "cpu" in shown[0]  # kind and subject readable
    text, err, _ = run_tty(*args, "--limit", "0", env={"NO_COLOR": "1"})
    assert len(text.splitlines()) == 6 and err == ""


def test_follow_on_a_terminal_appends_lines(day: WorkspaceDir) -> None:
    """No redrawn table: each event is one more line, and scrollback keeps the old ones."""
    follower = TtyProcess("--workspace", str(day.root), "tail", "-f", "-n", "1",
                          env={"NO_COLOR": "1"}, columns=80)  # fmt: skip
    try:
        follower.read_until(lambda t: "git push" in t)
        for i in range(3):
            cli(day, "emit", "--source", "shell", "--line", f"new {i}")
        text = follower.read_until(lambda t: "new 2" in t)
    finally:
        follower.kill()
    assert [line.split()[-1] for line in text.splitlines()] == ["push", "0", "1", "2"]
    assert not re.search(r"\x1b\[\d*[ABJK]", text)  # no cursor movement, no erasing
    assert all(len(line) <= 80 for line in text.splitlines())


# -- the library underneath -----------------------------------------------------------


def test_parse_instant_forms() -> None:
    now = MAY_1_10H + 7 * NS
    paris = ZoneInfo("Europe/Paris")
    assert parse_instant("10m", now_ns=now) == Hlc(now - 600 * NS, 0)
    assert parse_instant("2h", now_ns=now) == Hlc(now - 7200 * NS, 0)
    assert parse_instant("3d", now_ns=now, end=True) == Hlc(now - 3 * 86400 * NS, LOGICAL_MAX)
    assert parse_instant("2024-05-01T12:00", tz=paris) == Hlc(MAY_1_10H, 0)
    assert parse_instant("2024-05-01T10:00:00Z") == Hlc(MAY_1_10H, 0)
    assert parse_instant("2024-05-01 11:00+01:00") == Hlc(MAY_1_10H, 0)
    assert parse_instant("12:00", tz=paris, now_ns=now) == Hlc(MAY_1_10H, 0)  # today
    assert parse_instant("1714557600000000000.7") == Hlc(1714557600000000000, 7)
    for junk in ("soon", "10 parsecs", "-3d", "2024-13-01", "1.2.3"):
        with pytest.raises(UsageError, match=re.escape(repr(junk))):
            parse_instant(junk)


@pytest.fixture(scope="module")
def window_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log of 300 events over 4 segments, 16 rows to a row group, then an unsealed tail."""
    root = tmp_path_factory.mktemp("window") / "log"
    kinds = ["observation", "sense.state", "signal", "sense.error"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seg, "ROW_GROUP", 16)
        with EventLog(root, node="a", durability="os") as log:
            for i in range(300):
                source = NERVE_SOURCE if i % 4 else int(SourceClass.SHELL)
                log.append(kinds[i % 4 if i % 3 else 0], source=source, line=str(i))
                if i % 70 == 69:
                    log.seal()
    return root


@given(
    count=st.none() | st.integers(0, 320),
    since=st.integers(-1, 299),
    until=st.none() | st.integers(0, 299),
    kinds=st.sampled_from([(), ("observation",), ("signal", "sense.error")]),
    hidden=st.booleans(),
    shell=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_newest_first_reads_what_a_whole_read_would(
    window_log: Path,
    count: int | None,
    since: int,
    until: int | None,
    kinds: tuple[str, ...],
    hidden: bool,
    shell: bool,
) -> None:
    snap = snapshot(window_log)
    everything = table_since(snap)
    stamps = list(zip(everything.column("physical_ns").to_pylist(),
                      everything.column("logical").to_pylist(), strict=True))  # fmt: skip
    lower = Hlc(*stamps[since]) if since >= 0 else Hlc(0, 0)
    upper = Hlc(*stamps[until]) if until is not None else None
    filt = TailFilter(kinds, (NERVE_SOURCE,) if shell else (), ("sense.state",) if hidden else ())
    expected = filt.apply(seg.after(everything, before(lower)) if since >= 0 else everything)
    if upper is not None:
        expected = seg.up_to(expected, upper)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(window, "TAIL_SLICE", 7)  # the unsealed 20 read in three slices
        got = newest(snap, count, filt, since=before(lower), until=upper, count_older=10**6)
    keep = expected.num_rows if count is None else min(count, expected.num_rows)
    assert (
        got.table.column("line").to_pylist()
        == expected.column("line").to_pylist()[expected.num_rows - keep :]
    )
    assert got.older == expected.num_rows - keep


def test_the_bench_workspace_tails_without_its_bookkeeping(tmp_path: Path) -> None:
    from tests.helpers.biglog import build_log

    ws = build_log(tmp_path / "big", 3000)
    snap = snapshot(ws.log_root)
    assert snap.count == 3000 and len(snap.segments) == 1 and not snap.tail.num_rows
    rows = [r.split("\t") for r in cli(ws, "tail", "-n", "3").stdout.splitlines()]  # type: ignore[attr-defined]
    assert [(r[1], r[2], r[-1]) for r in rows] == [
        ("shell", "observation", "shell detail 2996"),
        ("network", "observation", "network sample 2998"),  # 2997 is a sense.state
        ("network", "observation", "network detail 2999"),
    ]


def test_the_log_format_page_lists_the_bookkeeping_kinds() -> None:
    from nerve.events import BOOKKEEPING_KINDS

    readme = (Path(__file__).resolve().parents[2] / "docs" / "log-format.md").read_text()
    bullet = readme[readme.index("**Bookkeeping is hidden**") :].split("\n- ")[0]
    assert set(re.findall(r"`([a-z_]+\.[a-z_]+|signal)`", bullet)) == set(BOOKKEEPING_KINDS)


def test_a_time_window_prints_all_of_it_unless_n_cuts_it(workspace: WorkspaceDir) -> None:
    """As journalctl does: --since/--until print the whole window; -n keeps the newest of
    it and says on stderr how many it left out."""
    minutes = [
        json.dumps({"hlc": [MAY_1_10H + i * 60 * NS, 0], "node": "n", "kind": "observation",
                    "source": "shell", "subject": "", "line": f"cmd {i}"})
        for i in range(60)
    ]  # fmt: skip
    cli(workspace, "import", "-", input="\n".join(minutes) + "\n")
    window = ["--since", "2024-05-01T10:05Z", "--until", "2024-05-01T10:39:30Z"]
    whole = cli(workspace, "tail", *window)
    shown = [row.split("\t")[-1] for row in whole.stdout.splitlines()]  # type: ignore[attr-defined]
    assert shown == [f"cmd {i}" for i in range(5, 40)] and whole.stderr == ""  # type: ignore[attr-defined]
    cut = cli(workspace, "tail", *window, "-n", "10")
    assert [row.split("\t")[-1] for row in cut.stdout.splitlines()] == shown[-10:]  # type: ignore[attr-defined]
    assert cut.stderr == "note: -n left out 25 older events of the window (drop -n for all)\n"  # type: ignore[attr-defined]
    grep = cli(workspace, "tail", *window, "-n", "1", "--grep", "cmd 1")
    assert grep.stdout.split("\t")[-1] == "cmd 19\n"  # type: ignore[attr-defined]
    assert "left out 9 older events" in grep.stderr  # type: ignore[attr-defined]  # cmd 10..18
    assert len(cli(workspace, "tail").stdout.splitlines()) == 20  # type: ignore[attr-defined]
    assert cli(workspace, "tail", *window, "-n", "40").stderr == ""  # type: ignore[attr-defined]
    assert len(cli(workspace, "tail", "--since", "2024-05-01T10:05Z").stdout.splitlines()) == 55  # type: ignore[attr-defined]


def test_an_unknown_sense_is_warned_of_with_the_nearest_name(day: WorkspaceDir) -> None:
    proc = cli(day, "tail", "--sense", "cpuu")
    assert proc.stdout == ""  # type: ignore[attr-defined]
    assert proc.stderr == "warning: no sense 'cpuu'; did you mean 'cpu'?\n"  # type: ignore[attr-defined]
    assert cli(day, "tail", "--sense", "nope").stderr == "warning: no sense 'nope'\n"  # type: ignore[attr-defined]
    assert cli(day, "tail", "--sense", "cpu").stderr == ""  # type: ignore[attr-defined]
