"""The parser's parts (issue 41), without a log: the words that name a recorded thing
(:mod:`nerve.recall.plans.words`), how a command ended, files, what was running, attention's
count, windows named by their titles and order questions read past their verbs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nerve.recall.plans import parse
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.words import Known, app_hit, hits, stem, tokens

NOW = int(datetime(2026, 12, 5, 19, 34, tzinfo=UTC).timestamp()) * 10**9
KNOWN = Known(
    commands=("curl -s http://127.0.0.1:8765/", "make test", "make build", "ls build",
              "./tools/memgrow.py", "./tools/cpuhog.py", "yes > /dev/null", "false",
              "cat readme.md"),
    files=("project/src/main.c", "project/src/util.c", "project/docs/guide.md"),
    windows=("firefox undefined reference to main - stack overflow - mozilla firefox",
             "xterm make build - ~/work/project", "vim main.c (~/work/project/src) - vim"),
)  # fmt: skip


def _plan(question: str) -> Plan:
    plan = parse(question, now_ns=NOW, tz=UTC, known=KNOWN)
    assert plan is not None, question
    return plan


def _said(question: str) -> tuple[str, str | None, str | None, str]:
    """The plan's subject kind, name and status, and its measure."""
    plan = _plan(question)
    return plan.subject.kind, plan.subject.name, plan.subject.status, plan.measure


def test_a_stem_drops_a_common_ending_and_a_doubled_letter() -> None:
    assert [stem(w) for w in ("hogged", "grower", "builds", "running", "make")] == [
        "hog", "grow", "build", "run", "make"
    ]  # fmt: skip
    assert stem("used") == "used"  # "us" would be too short to mean anything


def test_a_command_path_is_known_by_its_last_part_with_and_without_extension() -> None:
    assert tokens("./tools/cpuhog.py -x") == ["./tools/cpuhog.py", "cpuhog.py", "cpuhog", "-x"]
    assert hits(["grower"], "./tools/memgrow.py") == 1
    assert hits(["make", "build"], "make build") == 2
    assert hits(["server"], "curl http://x/") == 0


def test_an_app_kind_names_the_apps_of_that_kind() -> None:
    assert app_hit("editor", "Vim") and app_hit("terminal", "XTerm")
    assert app_hit("browsers", "Firefox")
    assert not app_hit("editor", "Firefox") and not app_hit("firefox", "Vim")


def test_known_words_are_those_a_recorded_thing_holds() -> None:
    assert KNOWN.command_words(["did", "curl", "server", "false"]) == ["curl", "false"]
    assert KNOWN.file_words(["src", "main.c", "notes"]) == ["src", "main.c"]
    assert KNOWN.window_words("when stack overflow") == "stack overflow"


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("what did false exit with?", ("command", "false", None, "exit")),
        ("how did make test go?", ("command", "make test", None, "exit")),
        ("how long did yes run?", ("command", "yes", None, "duration")),
        ("when did the memory grower run?", ("command", "grower", None, "when")),
        ("how many times did make build fail today?", ("command", "make build", "failed", "count")),
        ("when did the build finally succeed?", ("command", "build", "ok", "last")),
        ("when did make build first work?", ("command", "make build", "ok", "first")),
        ("what failed?", ("command", None, "failed", "list")),
        ("show me the commands that did not succeed", ("command", None, "failed", "list")),
        ("what was the first failure today?", ("command", None, "failed", "first")),
    ],
)
def test_a_command_is_named_by_the_logs_words_and_how_it_ended(
    question: str, said: tuple[str, str | None, str | None, str]
) -> None:
    assert _said(question) == said


def test_a_word_no_command_holds_is_not_taken_for_one() -> None:
    assert _plan("what was burning the CPU?").subject.name is None
    assert parse("when did I deploy?", now_ns=NOW, tz=UTC, known=KNOWN) is None
    assert parse("when did I curl?", now_ns=NOW, tz=UTC, known=KNOWN) is not None


def test_a_commands_use_of_cpu_or_memory_is_its_process_peak() -> None:
    assert _said("how many cores did cpuhog use?") == ("process", "cpuhog", None, "peak")
    plan = _plan("how big did memgrow.py get?")
    assert (plan.subject.kind, plan.subject.reading, plan.measure) == ("process", "memory", "peak")


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("which files did I edit today?", ("file", None, None, "list")),
        ("which file did I create?", ("file", None, "added", "list")),
        ("when did I last change main.c?", ("file", "main.c", None, "last")),
        ("how many times did I edit guide.md?", ("file", "guide.md", None, "count")),
        ("which files changed in src?", ("file", "src", None, "list")),
    ],
)
def test_files_are_a_subject(question: str, said: tuple[str, str | None, str | None, str]) -> None:
    assert _said(question) == said


def test_which_files_changed_with_no_time_or_name_stays_with_the_intents() -> None:
    assert parse("which files changed?", now_ns=NOW, tz=UTC, known=KNOWN) is None


@pytest.mark.parametrize(
    "question",
    [
        "what was running 6 minutes ago?",
        "which processes were running at 19:26?",
        "what is still running?",
        "which of my commands are still running?",
        "is anything I started still running?",
    ],
)
def test_what_was_running_is_its_own_subject(question: str) -> None:
    assert _said(question) == ("running", None, None, "running")


def test_a_named_command_still_up_asks_whether_it_runs() -> None:
    assert _said("is python3 -m http.server still up?")[3] == "running"


@pytest.mark.parametrize(
    ("question", "measure", "name"),
    [
        ("how many attention decisions were made today?", "count", None),
        ("did nerve notice the CPU hog?", "why", "cpu"),
        ("why didn't nerve tell me about the failing build?", "why", "build"),
        ("did anything odd happen?", "unusual", None),
    ],
)
def test_attention_questions(question: str, measure: str, name: str | None) -> None:
    plan = _plan(question)
    assert (plan.subject.kind, plan.measure, plan.subject.name) == ("attention", measure, name)


def test_a_window_is_named_by_its_titles_words_before_a_commands_stem() -> None:
    # "reading" hits "readme.md" by its stem; two words of a title outweigh it
    assert _said("when was I reading Stack Overflow?")[:2] == ("window", "stack overflow")


def test_an_order_question_reads_past_its_verb_to_the_window() -> None:
    plan = _plan("what did I use right before switching to Firefox the last time?")
    assert plan.measure == "before" and plan.anchor is not None
    assert plan.anchor.name == "firefox"
    plan = _plan("what did I switch to after reading Stack Overflow?")
    assert plan.measure == "after" and plan.anchor is not None
    assert plan.anchor.name == "stack overflow"


def test_an_order_question_about_a_command_is_about_commands() -> None:
    plan = _plan("what ran before make test?")
    assert (plan.subject.kind, plan.measure) == ("command", "before")
    assert plan.anchor is not None and plan.anchor.name == "make test"
    assert _plan("which window was I in before Firefox?").subject.kind == "window"


def test_most_recently_is_the_last_one_not_the_most() -> None:
    assert _plan("which command did I run most recently?").measure == "last"


def test_a_file_no_change_touched_is_still_the_files_subject() -> None:
    # README.md was only read (`cat README.md`): the question is about its changes, not the cat
    assert _said("did I edit README.md?")[:2] == ("file", "readme.md")
