"""The synthesis cascade over a real log: tokens, BM25-lite, the envelope and Tier 0."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.attention.energy import Energy, Provenance
from nerve.attention.observer import Observer
from nerve.canonical import canonical_json
from nerve.clock import Hlc
from nerve.config.issues import InvalidConfig
from nerve.errors import UsageError
from nerve.events import NERVE_SOURCE, Event, SourceClass, Trust
from nerve.log.select import TailFilter
from nerve.logops import tail_rows
from nerve.query import run_query
from nerve.recall import ask, build_retrieval, load_recall_config
from nerve.recall.core import (
    IDF_BITS,
    Envelope,
    Retrieval,
    RetrievalParams,
    Span,
    idf_fixed,
    log2_fixed,
    query_terms,
    retrieve,
    term_score,
    tokenize,
)
from nerve.recall.tier0 import answer, match_intent
from nerve.workspace import WorkspaceDir

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000
NODE = "test-node"


def observation(i: int, source: int, line: str, payload: Any = None, subject: str = "") -> Event:
    body = b"" if payload is None else canonical_json(payload)
    trust = Trust.INFERRED if source == SourceClass.SHELL else Trust.FIRST_PARTY
    return Event(
        Hlc(T0 + i * S, 0), NODE, "observation", subject, int(source), trust, None, body, line
    )


def own(i: int, kind: str, line: str, payload: Any, subject: str = "attention") -> Event:
    body = canonical_json(payload)
    return Event(
        Hlc(T0 + i * S, 0), NODE, kind, subject, NERVE_SOURCE, Trust.FIRST_PARTY, None, body, line
    )


def file_change(i: int, path: str, change: str = "modified") -> Event:
    payload = {"path": path, "change": change}
    return observation(i, SourceClass.FILE_CHANGE, f"file {change} {path}", payload, "files")


def shell(i: int, command: str) -> Event:
    return observation(i, SourceClass.SHELL, f"$ {command}", {"command": command}, "shell")


def decision(i: int, outcome: str, value: int, seen: str, after: int = 750_000) -> Event:
    payload = {
        "outcome": outcome,
        "probe": "salience",
        "value_milli": value,
        "cost_milli": 400,
        "charged_uj": 250_000 if outcome == "surface" else 0,
        "budget_before_uj": 1_000_000 if outcome == "surface" else after,
        "budget_after_uj": after,
        "source_event": "00" * 32,
        "source_line": seen,
        "chain_seq": i,
    }
    return own(i, "attention.decision", f"{outcome}: {seen}", payload)


def activity() -> list[Event]:
    """A small day: edits, commands, readings, attention decisions, an error."""
    return [
        file_change(0, "src/a.py"),
        shell(1, "git status"),
        observation(2, SourceClass.THERMAL_POWER, "cpu 10.0% load1 0.20 (8 cores)", {}, "cpu"),
        file_change(3, "src/b.py", "added"),
        shell(4, "pytest -q"),
        observation(5, SourceClass.NETWORK, "net en0 down 2400.0 KiB/s", {}, "network"),
        file_change(6, "src/a.py"),
        own(7, "sense.state", "", {"state": {}}, "cpu"),
        decision(8, "surface", 900, "net en0 down 2400.0 KiB/s", after=750_000),
        decision(9, "hold:value", 300, "cpu 10.0% load1 0.20 (8 cores)"),
        decision(10, "hold:budget", 800, "net en0 down 2400.0 KiB/s", after=100_000),
        own(11, "sense.error", "sense disk: compute raised OSError: EIO", {}, "disk"),
    ]


def seed(ws: WorkspaceDir, events: list[Event]) -> None:
    with ws.open_log() as log:
        log.import_events(events)


@pytest.fixture
def day(workspace: WorkspaceDir) -> WorkspaceDir:
    seed(workspace, activity())
    return workspace


def envelope_of(ws: WorkspaceDir, question: str, **params: Any) -> Envelope:
    conn = ws.connect()
    try:
        return retrieve(conn, question, RetrievalParams(**params)).envelope
    finally:
        conn.close()


# -- tokens and scores -------------------------------------------------------------------------


def test_tokens_are_ascii_runs_of_two_or_more() -> None:
    assert tokenize("File modified SRC/a_b.py — énergie x2, I") == [
        "file",
        "modified",
        "src",
        "py",
        "nergie",
        "x2",
    ]


def test_query_terms_drop_stop_words_and_sort() -> None:
    assert query_terms("Which files changed in the last hour? files!") == (
        "changed",
        "files",
        "hour",
    )
    assert query_terms("what was it") == ()
    assert len(query_terms(" ".join(f"w{i:02d}" for i in range(50)))) == 32


def test_log2_fixed_is_exact_on_powers_of_two() -> None:
    assert log2_fixed(8, 1) == 3 << IDF_BITS
    assert log2_fixed(1, 1) == 0
    assert log2_fixed(3, 3) == 0
    assert log2_fixed(2, 1, bits=0) == 1
    with pytest.raises(UsageError):
        log2_fixed(1, 2)


@given(st.integers(1, 10**12), st.integers(0, 10**6))
def test_log2_fixed_is_within_one_unit_of_the_real_value(den: int, extra: int) -> None:
    num = den + extra
    exact = math.log2(num / den) * (1 << IDF_BITS)
    assert abs(log2_fixed(num, den) - exact) <= 1.0
    assert log2_fixed(num + 1, den) >= log2_fixed(num, den)


def test_idf_is_zero_only_for_a_term_in_every_span() -> None:
    assert idf_fixed(50_000, 50_000) == 0
    assert idf_fixed(10, 9) > 0
    assert idf_fixed(10, 1) > idf_fixed(10, 2)
    assert term_score(1 << IDF_BITS, 0) == 0
    assert term_score(1 << IDF_BITS, 1) < term_score(1 << IDF_BITS, 3) < 11 * (1 << IDF_BITS) // 5


def test_scores_in_sql_match_the_python_reference(day: WorkspaceDir) -> None:
    env = envelope_of(day, "git status pytest")
    hits = [s for s in env.spans if s.via == "bm25"]
    assert [s.line for s in hits] == ["$ git status", "$ pytest -q"]
    once = idf_fixed(env.window_spans, 1)  # git, status and pytest each appear once
    assert hits[0].score == 2 * term_score(once, 1)
    assert hits[1].score == term_score(once, 1)


def test_repeated_terms_count_exactly(workspace: WorkspaceDir) -> None:
    seed(workspace, [shell(0, "make make make"), shell(1, "make test"), shell(2, "ls")])
    env = envelope_of(workspace, "make")
    hits = [s for s in env.spans if s.via == "bm25"]
    idf = idf_fixed(3, 2)
    assert [(s.line, s.score) for s in hits] == [
        ("$ make make make", term_score(idf, 3)),
        ("$ make test", term_score(idf, 1)),
    ]


# -- the envelope --------------------------------------------------------------------------------


def test_the_envelope_is_byte_identical_for_the_same_log_and_query(day: WorkspaceDir) -> None:
    first = build_retrieval(day, "why is the network slow?").envelope
    second = build_retrieval(day, "why is the network slow?").envelope
    reopened = build_retrieval(WorkspaceDir.at(day.root), "why is the network slow?").envelope
    assert first.canonical == second.canonical == reopened.canonical
    assert first.digest == reopened.digest
    assert first.canonical == canonical_json(first.to_json())


def test_the_envelope_survives_sealing_and_compaction(day: WorkspaceDir) -> None:
    before = build_retrieval(day, "git status").envelope.canonical
    with day.open_log() as log:
        log.seal()
        log.import_events([shell(20, "later")])
        log.seal()
    after = build_retrieval(day, "git status").envelope
    assert after.canonical != before  # a new candidate arrived
    with day.open_log() as log:
        log.compact(target_rows=1_000)
    assert build_retrieval(day, "git status").envelope.canonical == after.canonical


def test_a_different_question_gives_a_different_envelope(day: WorkspaceDir) -> None:
    assert envelope_of(day, "git").digest != envelope_of(day, "pytest").digest


def test_recency_fill_when_no_token_overlaps(day: WorkspaceDir) -> None:
    env = envelope_of(day, "xyzzy plugh", k=7)
    assert [s.via for s in env.spans] == ["fill"] * 7
    assert env.terms == ("plugh", "xyzzy") and env.named == ()
    strata = [(s.stratum, s.rank) for s in env.spans]
    # round-robin, most recently active stratum first, newest first within each
    assert strata == [
        ("sense.error", 0),
        ("attention.decision", 0),
        ("file_change", 0),
        ("network", 0),
        ("shell", 0),
        ("thermal_power", 0),
        ("attention.decision", 1),
    ]


def test_named_strata_are_served_first(day: WorkspaceDir) -> None:
    env = envelope_of(day, "which files changed and which command?", k=6)
    assert env.named == ("file_change", "shell")
    assert [(s.stratum, s.rank) for s in env.spans] == [
        ("file_change", 0),
        ("shell", 0),
        ("file_change", 1),
        ("shell", 1),
        ("file_change", 2),
        ("sense.error", 0),
    ]


def test_hits_come_before_the_fill_newest_first_on_ties(day: WorkspaceDir) -> None:
    env = envelope_of(day, "net en0", k=4)
    hits = [s for s in env.spans if s.via == "bm25"]
    assert [s.line for s in hits] == [
        "hold:budget: net en0 down 2400.0 KiB/s",
        "surface: net en0 down 2400.0 KiB/s",
        "net en0 down 2400.0 KiB/s",
    ]
    assert env.spans[3].via == "fill"


def test_the_window_bounds_the_candidates(day: WorkspaceDir) -> None:
    whole = envelope_of(day, "anything")
    assert whole.complete and whole.window_spans == 11  # sense.state is not a candidate
    small = envelope_of(day, "anything", window=4)
    assert not small.complete and small.window_spans == 4
    assert {s.name for s in small.strata} == {"attention.decision", "sense.error"}


def test_salience_is_the_observer_at_the_newest_observation(day: WorkspaceDir) -> None:
    observer, last = Observer(4), None
    for event in activity():
        if event.kind == "observation":
            last = observer.observe(event.source, event.trust)
    assert last is not None
    env = envelope_of(day, "anything", salience_window=4)
    assert env.salience == {
        "source": "file_change",
        **last.milli(),
        "window": 4,
        "observations": 7,
        "hlc": [T0 + 6 * S, 0],
    }
    narrow = envelope_of(day, "anything", kinds=("sense.error",), salience_window=4)
    assert narrow.salience == env.salience


def test_an_empty_log_gives_an_empty_envelope(workspace: WorkspaceDir) -> None:
    env = envelope_of(workspace, "anything")
    assert env.spans == () and env.salience is None and env.complete


# -- Tier 0 --------------------------------------------------------------------------------------


def _tier0(ws: WorkspaceDir, question: str) -> Any:
    result = ask(ws, question, record=False)
    assert result.answered and result.tier == 0 and result.model_call is False
    assert result.energy == Energy.zero()
    assert result.energy.provenance is Provenance.ESTIMATOR and result.energy.measured_uj is None
    return result


def test_recent_files(day: WorkspaceDir) -> None:
    result = _tier0(day, "Which files changed?")
    assert result.intent == "recent_files"
    assert result.text == (
        "Files changed most recently, newest first (from the 3 newest changes):\n"
        "- src/a.py (modified, 2023-11-14 22:13:26Z)\n"
        "- src/b.py (added, 2023-11-14 22:13:23Z)"
    )
    assert len(result.spans) == 2
    assert _tier0(day, "what did I edit?").intent == "recent_files"
    assert _tier0(day, "recent files").intent == "recent_files"


def test_last_command(day: WorkspaceDir) -> None:
    result = _tier0(day, "What was my last command?")
    assert result.text == "Your last command (2023-11-14 22:13:24Z): pytest -q"
    many = _tier0(day, "what commands did I run?")
    assert many.text.splitlines()[1:] == [
        "- 2023-11-14 22:13:24Z  pytest -q",
        "- 2023-11-14 22:13:21Z  git status",
    ]
    assert _tier0(day, "what did I run").intent == "last_command"


def test_surfaced(day: WorkspaceDir) -> None:
    """Attention's record is a plan's subject (issue 41): each decision with its one reason
    (:func:`nerve.attention.reason.reason_of`)."""
    result = _tier0(day, "What did you show me?")
    assert result.intent == "plan:attention.list"
    assert result.text == (
        "Surfaced in the whole log, newest first, and why:\n"
        "- 2023-11-14 22:13  net en0 down 2400.0 KiB/s (surface) — surfaced: its value 0.9 beat "
        "the interruption cost 0.4 plus the margin, and the attention budget paid 250 mJ "
        "(1,000 mJ → 750 mJ)"
    )
    assert _tier0(day, "what was surfaced?").text == result.text


def test_held(day: WorkspaceDir) -> None:
    result = _tier0(day, "what was held?")
    lines = result.text.splitlines()
    assert lines[0] == "Held in the whole log, newest first, and why:"
    assert "(hold:budget) — " in lines[1] and "(hold:value) — held, not worth" in lines[2]
    why = _tier0(day, "why was the cpu reading held?")
    assert why.text.splitlines()[1].startswith(
        "- 2023-11-14 22:13  cpu 10.0% load1 0.20 (8 cores) (hold:value) — held, not worth an "
        "interruption"
    )
    assert len(why.spans) == 1


def test_budget_and_last_error(day: WorkspaceDir) -> None:
    budget = _tier0(day, "how much budget is left?")
    assert budget.text.startswith("The attention budget held 100,000 µJ after the last decision")
    error = _tier0(day, "what was the last error?")
    assert error.text == (
        "The last error (2023-11-14 22:13:31Z) in disk: sense disk: compute raised OSError: EIO"
    )


@pytest.mark.parametrize(
    "question",
    [
        "why is the network slow?",  # open-ended
        "what did I edit and what did I run?",  # a word outside each intent's vocabulary
        "what was not surfaced?",  # a negation surfaced cannot honour
        "why was the disk held?",  # no held decision mentions the disk
        "when did I last push?",
    ],
)
def test_tier0_escalates_when_unsure(day: WorkspaceDir, question: str) -> None:
    result = ask(day, question, record=False)
    assert not result.answered and result.tier is None and result.model_call is False
    assert "no language model is set up" in result.text
    assert result.energy == Energy.zero()


def test_a_question_two_intents_fit_whole_escalates(
    day: WorkspaceDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of two intents answers the question alone; together they escalate. No two
    built-in intents fit one question whole (a trigger of one is outside the other's
    vocabulary), so each is given the other's word here."""
    from nerve.recall import tier0

    files, commands = tier0.INTENTS[0], tier0.INTENTS[1]
    assert (files.name, commands.name) == ("recent_files", "last_command")
    both = (
        replace(files, vocabulary=files.vocabulary | {"run"}),
        replace(commands, vocabulary=commands.vocabulary | {"edit"}),
    )
    question = "what did I edit and what did I run?"
    for one in both:
        monkeypatch.setattr(tier0, "INTENTS", (one,))
        assert ask(day, question, record=False).answered, one.name
    monkeypatch.setattr(tier0, "INTENTS", both)
    result = ask(day, question, record=False)
    assert not result.answered and result.tier is None


def test_a_missing_newest_span_escalates(day: WorkspaceDir) -> None:
    retrieval = build_retrieval(day, "what did I run")
    assert answer(retrieval) is not None
    older = tuple(s for s in retrieval.envelope.spans if not (s.stratum == "shell" and s.rank == 0))
    thinned = Retrieval(replace(retrieval.envelope, spans=older), retrieval.payloads)
    assert answer(thinned) is None


def test_none_in_the_log_only_when_the_window_holds_the_log(workspace: WorkspaceDir) -> None:
    seed(workspace, [file_change(0, "a.txt"), file_change(1, "b.txt")])
    result = _tier0(workspace, "what did I run?")
    assert result.text == "No shell commands are in the log (2 events searched, the whole log)."
    assert result.spans == ()
    workspace.config_path.write_text("recall:\n  window: 1\n")
    retrieval = build_retrieval(WorkspaceDir.at(workspace.root), "what did I run?")
    assert answer(retrieval) is None  # the envelope cannot tell: its window is one event
    # ...so the answer comes from reading the whole log over the period instead
    late = ask(WorkspaceDir.at(workspace.root), "what did I run?", record=False)
    assert late.intent == "commands" and late.text == (
        "Nothing in this log records shell commands: the shell hook records them "
        "(`nerve setup`, or `nerve shell-hook --help`)."
    )


def test_a_log_without_process_samples_says_when_they_come(day: WorkspaceDir) -> None:
    # a daemon's first seconds: the processes sense's first compute is only a baseline
    for question, what in [
        ("what used the most CPU in the last 5 minutes?", "CPU"),
        ("what is using memory now?", "memory"),
    ]:
        result = ask(day, question, record=False, now_ns=T0 + 60 * 10**9)
        assert result.answered and result.intent in {"top_cpu", "top_memory"}
        assert result.text.startswith(
            f"No process samples in this log yet, so nothing says what used {what}."
        )
        assert "one interval (10 s by default) after the daemon starts" in result.text


def test_intents_match_on_words_alone() -> None:
    found = match_intent("Why was the CPU spike held?")
    assert found is not None and found[0].name == "held" and found[1] == ("cpu", "spike")
    assert match_intent("show me recent files") is not None
    assert match_intent("hello") is None


def test_spans_are_plain_json() -> None:
    span = Span("ab", (1, 2), "shell", "observation", "", "$ ls", 0, 0, "fill")
    assert span.to_json()["hlc"] == [1, 2] and span.stratum == "shell"


# -- recording and configuration -----------------------------------------------------------------


def test_every_question_and_answer_is_an_event(day: WorkspaceDir) -> None:
    result = ask(day, "what did I run?", question_id="q-test")
    rows, _ = tail_rows(day, count=2, filt=TailFilter.of(["ask.question", "ask.answer"], None))
    assert [r["kind"] for r in rows] == ["ask.question", "ask.answer"]
    assert [r["id"] for r in rows] == list(result.recorded)
    question, answered = rows
    assert question["subject"] == answered["subject"] == "q-test"
    assert question["payload"]["envelope_digest"] == result.envelope.digest
    assert question["payload"]["envelope"] == result.envelope.to_json()
    assert answered["payload"] == result.answer_payload()
    assert answered["payload"]["energy"] == {
        "estimated_uj": 0,
        "measured_uj": None,
        "provenance": "Estimator",
    }
    assert answered["trust"] == "FirstParty" and answered["source"] == "vendor:1024"


def test_asking_does_not_change_the_next_envelope(day: WorkspaceDir) -> None:
    first = ask(day, "why is the network slow?")
    second = ask(day, "why is the network slow?")
    assert first.envelope.canonical == second.envelope.canonical
    assert first.question_id != second.question_id


def test_no_record_appends_nothing(day: WorkspaceDir) -> None:
    ask(day, "what did I run?", record=False)
    rows = run_query(day.connect(), "SELECT count(*) FROM events WHERE kind LIKE 'ask.%'").rows
    assert rows == [(0,)]


def test_an_empty_question_is_a_usage_error(day: WorkspaceDir) -> None:
    with pytest.raises(UsageError, match="empty"):
        ask(day, "   ")


def _config_error(ws: WorkspaceDir, text: str) -> str:
    ws.config_path.write_text(text)
    with pytest.raises(InvalidConfig) as caught:
        load_recall_config(WorkspaceDir.at(ws.root))
    return str(caught.value)


@pytest.mark.parametrize(
    ("yaml", "where"),
    [
        ("recall:\n  k: 0\n", ":2:3: recall.k: "),
        ("recall:\n  colour: red\n", "recall.colour: unknown key 'colour'"),
        ("recall:\n  kinds: ['Not A Kind']\n", "recall.kinds[0]: "),
        ("recall:\n  fallback: {kind: smoke}\n", "recall.fallback"),
        ("recall:\n  fallback: {kind: http, model: m}\n", "recall.fallback.http.endpoint"),
        (
            "recall:\n  fallback: {kind: http, endpoint: ftp://x, model: m}\n",
            "recall.fallback.http.endpoint: ",
        ),
        ("recall:\n  fallback: {kind: command, argv: []}\n", "recall.fallback.command.argv"),
        ("recall:\n  fallback: {kind: command, argv: [x], timeout: 0s}\n", "timeout"),
    ],
)
def test_a_bad_recall_section_names_the_field(
    workspace: WorkspaceDir, yaml: str, where: str
) -> None:
    assert where in _config_error(workspace, yaml)


def test_recall_settings_apply(day: WorkspaceDir) -> None:
    day.config_path.write_text("recall:\n  k: 3\n  window: 5\n  kinds: [observation]\n")
    ws = WorkspaceDir.at(day.root)
    cfg = load_recall_config(ws)
    assert (cfg.k, cfg.window, cfg.kinds, cfg.fallback) == (3, 5, ["observation"], None)
    env = build_retrieval(ws, "anything").envelope
    assert len(env.spans) == 3 and env.window_spans == 5
    assert {s.kind for s in env.spans} == {"observation"}
    assert len(build_retrieval(ws, "anything", k=1).envelope.spans) == 1
