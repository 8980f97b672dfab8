"""Every bench under bench/ runs here in ``--quick`` mode with small sizes, its internal checks
hold, the sizes the caller gave win over ``--quick``'s, and a failed internal check makes a
bench exit non-zero."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

# Each bench's quick run (small sizes, a few seconds) and the figures its RESULT must echo.
QUICK_RUNS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "cli_bench.py": (
        ["--quick", "--rounds", "1", "--events", "2000"],
        {"rounds": 1, "events": 2000},
    ),
    "log_bench.py": (
        ["--quick", "--events", "3000", "--query-events", "20000", "--rounds", "1"],
        {"events": 3000, "query_events": 20000, "rounds": 1},
    ),
    "attention_bench.py": (
        ["--quick", "--observations", "4000", "--links", "300"],
        {"observations": 4000, "links": 300, "rounds": 1},
    ),
    "daemon_bench.py": (
        ["--quick", "--senses", "4", "--seconds", "1", "--triggers", "20", "--warm-up", "0"],
        {
            "config": {
                "senses": 4,
                "groups": 2,
                "interval_ms": 100,
                "seconds": 1.0,
                "triggers": 20,
                "warm_up": 0.0,
                "durability": "fsync",
            }
        },
    ),
    "workflow_bench.py": (
        ["--quick", "--runs", "12", "--fires", "10"],
        {"runs": 12, "fires": 10, "failed_runs": 0},
    ),
    "ask_bench.py": (["--quick", "--events", "3000", "--runs", "1"], {"events": 3000, "runs": 1}),
    "ask_day_bench.py": (["--quick"], {"questions": 10}),
    "ask_plan_bench.py": (["--quick", "--days", "0.05", "--runs", "1"], {"days": 0.05, "runs": 1}),
    "crash_bench.py": (["--quick", "--kills", "4"], {"kills": 4}),
    "follow_bench.py": (["--quick", "--seconds", "1.5"], {"seconds": 1.5}),
    "forget_bench.py": (
        ["--quick", "--events", "20000", "--segment-events", "5000"],
        {"events": 20000, "segment_events": 5000, "selected": 200, "erased": 200},
    ),
    "privacy_bench.py": (
        ["--quick", "--events", "3000", "--lines", "5000"],
        {"events": 3000, "lines": 5000, "rounds": 1},
    ),
    "mcp_bench.py": (["--quick", "--events", "3000", "--runs", "2"], {"events": 3000, "runs": 2}),
    "fleet_bench.py": (
        ["--quick", "--hosts", "2", "--events", "2400"],
        {"hosts": 2, "events": 2400, "segments": 24},
    ),
    "fleet_scale_bench.py": (
        ["--quick", "--hosts", "4", "--catalog", "sql"],
        {"hosts": 4, "catalog": "sql", "rows": 50},
    ),
    "shell_hook_bench.py": (["--quick", "--commands", "30"], {"commands": 30, "rounds": 1}),
    "shell_start_bench.py": (["--quick", "--starts", "5"], {"starts": 5}),
    "nab_bench.py": (["--quick"], {"corpus": "synthetic", "series": 4}),
    "attention_day_bench.py": (["--quick", "--hours", "8"], {"hours": 8.0}),
    "attention_days_bench.py": (["--quick", "--cadence", "300"], {"days": 1, "cadence": [300]}),
    "whatif_bench.py": (["--quick", "--cadence", "120"], {"days": 1, "cadence_s": 120}),
    "footprint_bench.py": (
        ["--quick", "--seconds", "8", "--sample-s", "2", "--stream-s", "120"],
        {"seconds": 8.0, "sample_s": 2.0, "stream_s": 120.0},
    ),
    "sync_bench.py": (
        ["--events", "1000", "--seconds", "60", "--samples", "1"],
        {"events": 1000, "seconds": 60.0},
    ),
    "sync_partition_bench.py": (["--quick", "--steps", "10"], {"runs": 1, "steps": 10}),
    "ui_bench.py": (
        ["--quick", "--events", "500", "--rounds", "1", "--big", "5000"],
        {"events": 500, "rounds": 1},
    ),
    "fuzz_bench.py": (["--quick", "--seconds", "1", "--targets", "spool"], {"seconds": 1.0}),
    "mutation_bench.py": (
        ["--modules", "nerve/tokens.py", "--max-mutants", "2", "--max-children", "1"],
        {},
    ),
    "seal_bench.py": (
        ["--quick", "--events", "5000", "--seals", "4", "--bits", "6"],
        {"events": 5000, "seals": 4, "bits": 6},
    ),
    "crypt_bench.py": (
        ["--quick", "--appends", "100", "--query-events", "20000"],
        {"appends": 100, "query_events": 20000, "rounds": 5},
    ),
}


def _load(name: str) -> ModuleType:
    module_name = f"bench_{name.removesuffix('.py')}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, BENCH / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def _result(stdout: str) -> dict[str, Any]:
    last = stdout.strip().splitlines()[-1]
    assert last.startswith("RESULT "), stdout[-2000:]
    data: dict[str, Any] = json.loads(last.removeprefix("RESULT "))
    return data


def test_every_bench_has_a_quick_run_here() -> None:
    assert sorted(p.name for p in BENCH.glob("*.py")) == sorted(QUICK_RUNS)


@pytest.mark.parametrize("name", sorted(QUICK_RUNS))
def test_the_bench_runs_quick_and_its_checks_hold(name: str) -> None:
    argv, echoed = QUICK_RUNS[name]
    proc = subprocess.run(
        [sys.executable, str(BENCH / name), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = _result(proc.stdout)
    assert {key: result[key] for key in echoed} == echoed  # the flags given, not --quick's
    verdicts = {key: value for key, value in result["checks"].items() if isinstance(value, bool)}
    assert verdicts and all(verdicts.values()) and result["failed_checks"] == [], verdicts


# A bench broken in one place, run in a subprocess: (code run after loading the bench as
# ``bench``, its arguments, the check that must fail).
SABOTAGE: dict[str, tuple[str, list[str], str]] = {
    "crypt_bench.py": (
        """
        cold_query = bench.cold_query
        def garbled(root):  # the encrypted log answers otherwise
            rows = cold_query(root)
            return rows[1:] if root.name == "encrypted" else rows
        bench.cold_query = garbled
        """,
        ["--quick", "--appends", "50", "--query-events", "5000", "--rounds", "1"],
        "same_answer",
    ),
    "cli_bench.py": (
        """
        bench._tail_lines = lambda out: 0  # as if tail printed nothing
        """,
        ["--rounds", "1", "--events", "1000"],
        "tail_prints_n",
    ),
    "log_bench.py": (
        """
        rows_with_ids = bench._rows_with_ids
        def swapped(*args):  # the SQLite peer stores two rows out of order
            rows = rows_with_ids(*args)
            rows[0], rows[1] = rows[1], rows[0]
            return rows
        bench._rows_with_ids = swapped
        """,
        ["--events", "2000", "--query-events", "0", "--rounds", "1"],
        "ids_match",
    ),
    "attention_bench.py": (
        """
        replay_path = bench.replay_path
        def stricter(root, keys, settings):  # the replay runs another detector
            strict = bench.parse_attention({"detector": {"k_milli": 6000, "warmup": 50}})
            return replay_path(root, keys, strict)
        bench.replay_path = stricter
        """,
        ["--observations", "4000", "--links", "300", "--no-cli"],
        "replay_decisions_match",
    ),
    "daemon_bench.py": (
        """
        from nerve.workspace import WorkspaceDir
        replay_verify = bench.replay_verify
        def damaged(ws):  # a byte of the log changes after the daemon stopped
            wal = sorted((WorkspaceDir.at(ws).log_root / "wal").iterdir())[0]
            data = bytearray(wal.read_bytes())
            data[len(data) // 2] ^= 0xFF
            wal.write_bytes(bytes(data))
            return replay_verify(ws)
        bench.replay_verify = damaged
        """,
        ["--quick", "--senses", "2", "--seconds", "1", "--triggers", "5", "--warm-up", "0"],
        "replay_verifies",
    ),
    "workflow_bench.py": (
        """
        bench.TRIO = bench.TRIO.replace("['a', 'b', 'c', '__end__']", "['a', 'nobody', 'c', 'x']")
        """,
        ["--quick", "--runs", "4", "--fires", "10"],
        "every_run_completed",
    ),
    "ask_bench.py": (
        """
        bench.CASES = [("tier0", bench.OPEN_QUESTION, 0)]  # an open question expected at Tier 0
        """,
        ["--events", "3000", "--runs", "1"],
        "expected tier 0",
    ),
    "crash_bench.py": (
        """
        crash_rounds = bench.crash_rounds
        def forgetful(root, rounds, seed):  # as if one acknowledged event went missing
            tally = crash_rounds(root, rounds, seed)
            tally.lost += 1
            return tally
        bench.crash_rounds = forgetful
        """,
        ["--kills", "2"],
        "nothing_lost",
    ),
    "sync_partition_bench.py": (
        """
        import tests.helpers.partition_run as partition_run
        held_ids = partition_run.held_ids
        def forgetful(device):  # as if the first device lost every event it held
            held = held_ids(device)
            return held if device.name != "d0" else type(held)()
        partition_run.held_ids = forgetful
        """,
        ["--quick", "--steps", "6"],
        "every_run_passed",
    ),
    "follow_bench.py": (
        """
        measure = bench.measure
        def doubled(root, args):  # as if the follower printed an event twice
            result = measure(root, args)
            result["extra"] += 1
            return result
        bench.measure = doubled
        """,
        ["--quick", "--seconds", "1"],
        "nothing_twice",
    ),
    "forget_bench.py": (
        """
        from nerve.privacy.forget import Request
        from nerve.privacy.selection import Selection
        def wider():  # the forget takes one more source than the bench asked for
            return Request(Selection(sources=(5, 1)), "bench")
        bench.request = wider
        """,
        ["--events", "4000", "--segment-events", "1000"],
        "exactly_selected_erased",
    ),
    "privacy_bench.py": (
        """
        planted_corpus = bench.planted_corpus
        def unknown(per_shape, seed=0):  # a token shape no detector knows
            return [*planted_corpus(per_shape), ("github-token", "ghz_x", "export T=ghz_x")]
        bench.planted_corpus = unknown
        """,
        ["--events", "2000", "--lines", "2000", "--rounds", "1"],
        "every_planted_secret_redacted",
    ),
    "mcp_bench.py": (
        """
        recent, library_call = bench.CASES["recent"]
        bench.CASES["recent"] = ({**recent, "limit": 3}, library_call)  # the session asks less
        """,
        ["--quick", "--events", "2000", "--runs", "1"],
        "session_matches_the_library",
    ),
    "fleet_bench.py": (
        """
        fleet_query = bench.fleet_query
        def short(wh, sql, since_ns=None, cache=None):  # as if the fleet lost a host's row
            seconds, rows, plan = fleet_query(wh, sql, since_ns, cache)
            return seconds, rows[:-1], plan
        bench.fleet_query = short
        """,
        ["--quick", "--hosts", "2", "--events", "2400"],
        "same_answer_as_duckdb",
    ),
    "fleet_scale_bench.py": (
        """
        registered_counts = bench.registered_counts
        def doubled(wh, hosts):  # as if one segment were registered twice
            lost, duplicated = registered_counts(wh, hosts)
            return lost, duplicated + 1
        bench.registered_counts = doubled
        """,
        ["--quick", "--hosts", "3", "--catalog", "sql"],
        "nothing_duplicated",
    ),
    "footprint_bench.py": (
        """
        log_figures = bench.log_figures
        def senseless(ws):  # as if one bundled sense never computed
            figures = log_figures(ws)
            figures["subjects_computed"] = figures["subjects_computed"][1:]
            return figures
        bench.log_figures = senseless
        """,
        ["--seconds", "6", "--sample-s", "2", "--stream-s", "60"],
        "every_sense_computed",
    ),
    "nab_bench.py": (
        """
        bench.readings_from_bytes = lambda payload: {}  # the readings never reach attention
        """,
        ["--quick"],
        "beats_null",
    ),
    "attention_days_bench.py": (
        """
        bench.attend = lambda obs, settings: []  # attention decides nothing
        """,
        ["--quick", "--cadence", "300"],
        "recall_above_zero",
    ),
    "whatif_bench.py": (
        """
        from nerve.attention import whatif
        whatif.settings_from = lambda path, base: base  # the file's settings are never used
        """,
        ["--quick", "--cadence", "120"],
        "a_change_is_seen",
    ),
    "attention_day_bench.py": (
        """
        bench.attend = lambda obs, values=None: []  # attention decides nothing
        """,
        ["--quick", "--hours", "6"],
        "recall_above_zero",
    ),
    "ui_bench.py": (  # the day pair: nerve's day page against aw's own summary of the day
        """
        afk_events = bench.afk_events
        def away_at_first(day, until):  # aw-watcher-afk saw the first window's time as away
            events = afk_events(day, until)
            events[0]["data"]["status"] = "afk"
            return events
        bench.afk_events = away_at_first
        """,
        ["--quick", "--events", "300", "--big", "0", "--live-seconds", "0"],
        "day_totals_agree",
    ),
}


@pytest.mark.parametrize("name", sorted(SABOTAGE))
def test_a_failed_internal_check_exits_non_zero(name: str) -> None:
    patch, argv, check = SABOTAGE[name]
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('bench', {str(BENCH / name)!r})\n"
        "bench = importlib.util.module_from_spec(spec)\n"
        "sys.modules['bench'] = bench\n"
        "spec.loader.exec_module(bench)\n"
        + textwrap.dedent(patch)
        + f"sys.exit(bench.main({argv!r}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert check in proc.stderr, proc.stderr[-3000:]


@pytest.mark.parametrize(
    ("name", "argv", "want"),
    [
        ("workflow_bench.py", ["--quick", "--runs", "30"], {"runs": 30, "fires": 30, "rounds": 1}),
        ("workflow_bench.py", ["--quick"], {"runs": 100, "fires": 30, "rounds": 1}),
        ("workflow_bench.py", [], {"runs": 1000, "fires": 200, "rounds": 3}),
        (
            "log_bench.py",
            ["--quick", "--rounds", "2", "--query-events", "0"],
            {"events": 50_000, "query_events": 0, "rounds": 2},
        ),
        (
            "attention_bench.py",
            ["--quick", "--rounds", "3", "--links", "7"],
            {"observations": 50_000, "links": 7, "rounds": 3},
        ),
        ("ask_bench.py", ["--quick", "--events", "1234"], {"events": 1234, "runs": 3}),
        ("ask_bench.py", [], {"events": 1_000_000, "runs": 10}),
        ("mcp_bench.py", ["--quick", "--runs", "7"], {"events": 20_000, "runs": 7}),
        ("mcp_bench.py", [], {"events": 1_000_000, "runs": 30}),
    ],
)
def test_quick_never_overrides_a_flag_the_caller_gave(
    name: str, argv: list[str], want: dict[str, Any]
) -> None:
    args = _load(name).parse_args(argv)
    assert {key: getattr(args, key) for key in want} == want


def test_quick_never_overrides_a_daemon_bench_flag() -> None:
    bench = _load("daemon_bench.py")
    cfg = bench.settings(bench.parse_args(["--quick", "--seconds", "12", "--senses", "7"]))
    assert (cfg.seconds, cfg.senses, cfg.groups, cfg.triggers) == (12.0, 7, 2, 100)


def _question_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "held.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_ask_day_bench_asks_the_file_given(tmp_path: Path) -> None:
    bench = _load("ask_day_bench.py")
    path = _question_file(
        tmp_path,
        """\
        questions:
          - id: port
            kind: port
            ask: ["which port was open?", "what was listening?"]
            expect: [8765, ["19:24", "19:24:18"]]
          - id: coffee
            kind: cannot
            cannot: true
            ask: ["how much coffee did I drink?"]
        """,
    )
    assert bench.parse_args([]).file == bench.QUESTIONS
    assert bench.parse_args(["--file", str(path)]).file == path
    questions = bench.load_questions(path)
    assert [(q.item, q.cannot) for q in questions] == [
        ("port", False),
        ("port", False),
        ("coffee", True),
    ]
    assert questions[0].expect == (("8765",), ("19:24", "19:24:18"))
    assert questions[2].expect == ()


@pytest.mark.parametrize(
    "item",
    [
        "{id: a, kind: k, ask: [q?]}",  # no expect and not cannot
        "{id: a, kind: k, ask: [q?], cannot: 'yes'}",  # cannot is not true/false
        "{id: a, kind: k, ask: [q?], expect: [{x: 1}]}",  # a fact that is not text
    ],
)
def test_the_ask_day_bench_names_a_bad_item(tmp_path: Path, item: str) -> None:
    path = _question_file(tmp_path, f"questions:\n  - {item}\n")
    with pytest.raises(ValueError, match=r"held\.yaml: question a"):
        _load("ask_day_bench.py").load_questions(path)


def test_a_question_the_log_cannot_answer_is_right_only_when_ask_says_so() -> None:
    bench = _load("ask_day_bench.py")
    cannot = bench.Question("coffee", "cannot", "how much coffee?", (), (), cannot=True)
    assert bench.grade(cannot, False, "The log holds nothing about coffee.")[0] == "right"
    assert bench.grade(cannot, True, "You drank 3 cups.")[0] == "wrong"
    known = bench.Question("port", "port", "which port?", (("8765",),), ())
    assert bench.grade(known, False, "I cannot tell.")[0] == "no_answer"
    assert bench.grade(known, True, "Port 8765 was listening.")[0] == "right"


def test_the_held_out_question_set_is_well_formed() -> None:
    bench = _load("ask_day_bench.py")
    questions = bench.load_questions(BENCH / "ask_day" / "heldout.yaml")
    items: dict[str, list[Any]] = {}
    for q in questions:
        items.setdefault(q.item, []).append(q)
    assert len(items) >= 110 and len(questions) >= 330
    assert all(len(phrasings) >= 3 for phrasings in items.values())
    cannot = [name for name, phrasings in items.items() if phrasings[0].cannot]
    assert len(cannot) >= 15
    assert all(not items[name][0].expect for name in cannot)  # nothing to find in a refusal


@pytest.mark.parametrize(
    ("name", "least_items", "least_cannot", "wordings"),
    [
        ("heldout2.yaml", 120, 20, 3),
        ("heldout3.yaml", 150, 25, 3),
        ("heldout4.yaml", 150, 25, 3),
        ("heldout5.yaml", 160, 20, 2),
    ],
)
def test_a_later_held_out_question_set_is_well_formed(
    name: str, least_items: int, least_cannot: int, wordings: int
) -> None:
    path = BENCH / "ask_day" / name
    items = YAML(typ="safe").load(path.read_text())["questions"]
    questions = _load("ask_day_bench.py").load_questions(path)
    ids = [item["id"] for item in items]
    assert len(items) >= least_items and len(questions) >= wordings * least_items
    assert len(set(ids)) == len(ids), "an id is used twice"
    assert all(len(item["ask"]) >= wordings for item in items)
    assert all(item.get("expect") or item.get("cannot") is True for item in items)
    cannot = [item for item in items if item.get("cannot")]
    assert len(cannot) >= least_cannot
    assert not any(item.get("expect") for item in cannot)  # nothing to find in a refusal


def test_a_whole_number_is_found_as_itself_and_as_its_decimal_twin() -> None:
    contains = _load("ask_day_bench.py").contains
    assert contains("CPU was at 100.0% then", "100") and contains("2.00 GiB", "2")
    assert not any(contains(text, "2") for text in ("12 GiB", "2.5 GiB", "2.05", "v1.2", "2.0.1"))


def test_the_ask_day_table_keeps_a_long_kind_in_line(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load("ask_day_bench.py")
    counts = {"right": 1, "partly": 0, "no_answer": 0, "wrong": 0, "error": 0}
    table = {"overall": counts, "per_kind": {"time_before_after": {**counts, "share": 1.0}}}
    bench.print_table(table)
    widths = {len(line) for line in capsys.readouterr().out.splitlines()}
    assert len(widths) == 1
