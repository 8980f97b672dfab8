"""nerve.yaml: models, durations, and errors that name file, line and YAML path."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.config import load_config, parse_config, validate_config
from nerve.config.issues import ConfigIssue, InvalidConfig
from nerve.config.models import DEFAULT_TIMEOUT_MS, NerveConfig
from nerve.durations import format_duration, parse_duration
from nerve.errors import ConfigError, NerveError

GOOD = """\
node: laptop
max_rounds: 50

senses:
  cpu-usage:
    group: system          # shares a worker with other system senses
    throttle: 10s
    timeout: 20s
    grace_period: 5s
    interval: 30s
    on: [disk-pressure]
    options: {threshold: 90}
  disk-pressure:
    interval: 1m
    path: custom/disk
  idle:

reflexes:
  - kind: sense
    sense: cpu-usage
    interval: 10s
    on: [disk-pressure, idle]

workflows:
  cleanup:
  code-review:
    concurrency: 3
    overflow: queue
    max_queue: 20
    max_rounds: 7
    drain_timeout: 2m
    checks: [required-sections]

log:
  durability: os
  seal_max_age: 1h
daemon:
  socket: run/nerve.sock
attention: {window: 32, gate: {margin_milli: 50}}
recall: {k: 3}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nerve.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def only_issue(tmp_path: Path, text: str) -> ConfigIssue:
    issues = validate_config(write(tmp_path, text))
    assert len(issues) == 1, [str(issue) for issue in issues]
    return issues[0]


# a good file


def test_good_config_loads_with_every_field(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    cpu = config.senses["cpu-usage"]
    assert (config.node, config.max_rounds) == ("laptop", 50)
    assert (cpu.group, cpu.throttle, cpu.timeout, cpu.grace_period) == (
        "system",
        10_000,
        20_000,
        5_000,
    )
    assert cpu.options == {"threshold": 90} and cpu.enabled
    assert config.senses["disk-pressure"].path == "custom/disk"
    assert config.senses["idle"].group == "idle"  # a sense's group defaults to its name
    assert config.workflows["cleanup"].overflow == "drop"
    assert config.workflows["code-review"].drain_timeout == 120_000
    assert config.workflows["code-review"].checks == ["required-sections"]
    assert (config.log.durability, config.log.seal_max_age) == ("os", 3_600_000)
    assert config.daemon.socket == "run/nerve.sock"
    assert (config.attention.window, config.attention.gate.margin_milli) == (32, 50)
    assert (config.recall.k, config.recall.fallback) == (3, None)


def test_good_config_round_trips_through_plain_data(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert NerveConfig.model_validate(config.model_dump()) == config
    assert parse_config(GOOD) == config
    assert validate_config(tmp_path / "nerve.yaml") == []


def test_defaults() -> None:
    config = parse_config("senses:\n  cpu: {}\n")
    assert config.max_rounds == 100 and config.node is None
    assert config.reflexes == [] and config.workflows == {}
    assert config.log.seal_max_events == 100_000 and config.log.seal_max_age == 300_000
    assert (config.log.durability, config.log.max_clock_offset) == ("fsync", 500)
    assert (config.daemon.socket, config.daemon.max_request_bytes) == ("data/nerve.sock", 1 << 20)
    assert config.senses["cpu"].effective_timeout_ms == DEFAULT_TIMEOUT_MS


def test_models_are_frozen() -> None:
    config = parse_config("senses:\n  cpu: {}\n")
    with pytest.raises(ValueError, match="frozen"):
        config.max_rounds = 3  # type: ignore[misc]


@pytest.mark.parametrize("text", ["", "# only a comment\n", "senses:\n"])
def test_empty_file_is_a_workspace_with_no_senses(text: str) -> None:
    assert parse_config(text).senses == {}


# schedules


def test_schedule_for_merges_shorthand_and_reflexes() -> None:
    config = parse_config(GOOD)
    assert config.schedule_for("cpu-usage") == (10_000, ["disk-pressure", "idle"])
    assert config.schedule_for("disk-pressure") == (60_000, [])
    assert config.schedule_for("idle") == (None, [])


def test_schedule_for_several_reflexes_takes_shortest_interval_and_union() -> None:
    config = parse_config(
        "senses:\n  a: {interval: 5s}\n  b:\n  c:\n"
        "reflexes:\n  - {sense: a, interval: 2s, on: [b]}\n  - {sense: a, on: [c, b]}\n"
        "  - {sense: b, interval: 1s}\n"
    )
    assert config.schedule_for("a") == (2_000, ["b", "c"])
    with pytest.raises(ConfigError, match="no sense named 'zzz'"):
        config.schedule_for("zzz")


# durations


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500ms", 500),
        ("10s", 10_000),
        ("1.5s", 1_500),
        ("2m", 120_000),
        ("1h", 3_600_000),
        ("0.25m", 15_000),
        (" 3s ", 3_000),
        ("250", 250),
        (250, 250),
        (0, 0),
        ("0s", 0),
    ],
)
def test_parse_duration(text: str | int, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("10x", "invalid duration '10x'"),
        ("", "invalid duration"),
        ("s", "invalid duration"),
        ("-5s", "invalid duration"),
        ("1.5ms", "whole number of milliseconds"),
        ("1e3", "invalid duration"),
        ("10 s s", "invalid duration"),
        (-1, "must not be negative"),
        (True, "invalid duration True"),
        (1.5, "invalid duration 1.5"),
        (None, "invalid duration None"),
    ],
)
def test_parse_duration_refuses(value: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_duration(value)


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0ms"),
        (500, "500ms"),
        (1_500, "1500ms"),
        (10_000, "10s"),
        (120_000, "2m"),
        (7_200_000, "2h"),
    ],
)
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration(ms) == text


@given(st.integers(min_value=0, max_value=10**12))
def test_format_then_parse_is_identity(ms: int) -> None:
    assert parse_duration(format_duration(ms)) == ms


# one error at a time: file, line, column, YAML path and message


@pytest.mark.parametrize(
    ("text", "where", "path", "fragment"),
    [
        pytest.param(
            "senses:\n  cpu:\n    thottle: 5s\n",
            "3:5",
            "senses.cpu.thottle",
            "unknown key 'thottle' (did you mean 'throttle'?)",
            id="unknown-key",
        ),
        pytest.param("colour: blue\n", "1:1", "colour", "unknown key 'colour'", id="unknown-top"),
        pytest.param(
            "max_rounds: many\n", "1:1", "max_rounds", "must be a valid integer", id="wrong-type"
        ),
        pytest.param(
            "max_rounds: 10001\n", "1:1", "max_rounds", "less than or equal to 10000", id="range"
        ),
        pytest.param(
            "senses:\n  cpu:\n    enabled: 'yes'\n",
            "3:5",
            "senses.cpu.enabled",
            "must be a valid boolean (got 'yes')",
            id="no-coercion",
        ),
        pytest.param(
            "senses:\n  cpu:\n    group: system\n    throttle: 10x\n",
            "4:5",
            "senses.cpu.throttle",
            "invalid duration '10x' (use e.g. 500ms, 10s, 2m)",
            id="bad-duration",
        ),
        pytest.param(
            "senses:\n  cpu:\n    interval: 0s\n",
            "3:5",
            "senses.cpu.interval",
            "must be longer than 0ms",
            id="zero-interval",
        ),
        pytest.param(
            "senses:\n  cpu:\n    timeout: 0\n",
            "3:5",
            "senses.cpu.timeout",
            "must be longer than 0ms",
            id="zero-timeout",
        ),
        pytest.param(
            "senses:\n  cpu:\n    on: [cpu-usage]\n  disk: {}\n",
            "3:10",
            "senses.cpu.on[0]",
            "unknown sense 'cpu-usage'",
            id="unknown-on",
        ),
        pytest.param(
            "senses:\n  cpu:\n    on: [disk, cpu]\n  disk: {}\n",
            "3:16",
            "senses.cpu.on[1]",
            "its own signal",
            id="self-on",
        ),
        pytest.param(
            "senses:\n  cpu:\nreflexes:\n  - sense: gpu\n    interval: 1s\n",
            "4:5",
            "reflexes[0].sense",
            "unknown sense 'gpu' (did you mean 'cpu'?)",
            id="reflex-unknown-sense",
        ),
        pytest.param(
            "senses:\n  cpu:\n  disk:\nreflexes:\n  - sense: cpu\n    on: [disk, dsik]\n",
            "6:16",
            "reflexes[0].on[1]",
            "unknown sense 'dsik' (did you mean 'disk'?)",
            id="reflex-unknown-on",
        ),
        pytest.param(
            "senses:\n  cpu:\nreflexes:\n  - kind: workflow\n"
            "    workflow: cleanup\n    on: [cpu]\n",
            "5:5",
            "reflexes[0].workflow",
            "reflexes only schedule senses",
            id="reflex-workflow",
        ),
        pytest.param(
            "senses:\n  cpu:\nreflexes:\n  - kind: workflow\n    sense: cpu\n    interval: 1s\n",
            "4:5",
            "reflexes[0].kind",
            "reflexes only schedule senses",
            id="reflex-kind-workflow",
        ),
        pytest.param(
            "senses:\n  cpu:\nreflexes:\n  - sense: cpu\n",
            "4:5",
            "reflexes[0]",
            "a reflex needs 'interval', 'on' or both",
            id="reflex-without-schedule",
        ),
        pytest.param(
            "senses:\n  cpu:\nreflexes:\n  - interval: 1s\n",
            "4:5",
            "reflexes[0].sense",
            "required key 'sense' is missing",
            id="reflex-missing-sense",
        ),
        pytest.param(
            "workflows:\n  w:\n    overflow: spill\n",
            "3:5",
            "workflows.w.overflow",
            "must be 'drop' or 'queue' (got 'spill')",
            id="bad-enum",
        ),
        pytest.param(
            "workflows:\n  w:\n    concurrency: 0\n",
            "3:5",
            "workflows.w.concurrency",
            "greater than or equal to 1",
            id="concurrency",
        ),
        pytest.param(
            "senses:\n  ../etc:\n", "2:3", "senses['../etc']", "must be letters", id="bad-name"
        ),
        pytest.param(
            "senses: [cpu, disk]\n", "1:1", "senses", "must be a valid dictionary", id="senses-list"
        ),
        pytest.param(
            "senses:\n  cpu:\n  cpu:\n",
            "3:3",
            "",
            'duplicate key "cpu"',
            id="duplicate-key",
        ),
        pytest.param(
            "senses:\n  cpu: {interval: [1s\n", "3:1", "", "invalid YAML", id="syntax-error"
        ),
        pytest.param("- cpu\n- disk\n", "1:1", "", "top level must be a mapping", id="top-list"),
        pytest.param("just words\n", "1:1", "", "top level must be a mapping", id="top-scalar"),
    ],
)
def test_each_error_names_file_line_and_path(
    tmp_path: Path, text: str, where: str, path: str, fragment: str
) -> None:
    issue = only_issue(tmp_path, text)
    prefix = f"{tmp_path / 'nerve.yaml'}:{where}: " + (f"{path}: " if path else "")
    assert str(issue).startswith(prefix), str(issue)
    assert issue.path == path
    assert fragment in issue.message


def test_load_config_raises_with_every_issue(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "senses:\n  cpu:\n    throttle: 10x\n    colour: red\n"
        "reflexes:\n  - sense: gpu\n    on: [cpu]\n"
        "workflows:\n  w: {overflow: spill}\n",
    )
    with pytest.raises(InvalidConfig) as caught:
        load_config(path)
    error = caught.value
    assert isinstance(error, ConfigError) and isinstance(error, NerveError)
    assert [(i.line, i.path) for i in error.issues] == [
        (3, "senses.cpu.throttle"),
        (4, "senses.cpu.colour"),
        (6, "reflexes[0].sense"),
        (9, "workflows.w.overflow"),
    ]
    assert str(error).splitlines() == [str(issue) for issue in error.issues]
    assert f"{path}:3:5: senses.cpu.throttle: invalid duration '10x'" in str(error)


def test_parse_config_uses_the_given_file_name() -> None:
    with pytest.raises(InvalidConfig, match=r"^nerve\.yaml:2:3: senses\.cpu: must be a valid"):
        parse_config("senses:\n  cpu: 5\n")
    with pytest.raises(InvalidConfig, match=r"^ws/other\.yaml:1:1: "):
        parse_config("nope: 1\n", "ws/other.yaml")


# the file itself


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nerve.yaml"
    with pytest.raises(InvalidConfig, match=rf"^{path}: file not found$") as caught:
        load_config(path)
    assert caught.value.issues == validate_config(path)


def test_folder_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "nerve.yaml").mkdir()
    with pytest.raises(InvalidConfig, match=r"nerve\.yaml: cannot read"):
        load_config(tmp_path / "nerve.yaml")


def test_junk_bytes(tmp_path: Path) -> None:
    path = tmp_path / "nerve.yaml"
    path.write_bytes(b"senses:\n  cpu: \xff\xfe\n")
    with pytest.raises(InvalidConfig, match="not UTF-8 text"):
        load_config(path)


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(InvalidConfig, match="too many aliases"):
        parse_config("attention:\n" + "\n".join(f"  {line}" for line in lines) + "\n")


def test_issue_without_position_prints_file_and_message() -> None:
    assert str(ConfigIssue("n.yaml", None, None, "", "file not found")) == "n.yaml: file not found"
    assert str(ConfigIssue("n.yaml", 3, 7, "a.b", "bad")) == "n.yaml:3:7: a.b: bad"


@pytest.mark.parametrize(
    ("yaml", "where"),
    [
        ("attention: {budget_uj: 1000}\n", "nerve.yaml:1:13: attention.budget_uj: unknown key"),
        ("attention:\n  window: 0\n", "nerve.yaml:2:3: attention.window: "),
        (
            "attention:\n  context:\n    visual_sources: [no-such-source]\n",
            "nerve.yaml:3:5: attention.context.visual_sources: ",
        ),
        ("recall:\n  k: 0\n", "nerve.yaml:2:3: recall.k: "),
        ("recall:\n  colour: red\n", "nerve.yaml:2:3: recall.colour: unknown key 'colour'"),
    ],
)
def test_attention_and_recall_are_checked_as_nerve_yaml_loads(
    tmp_path: Path, yaml: str, where: str
) -> None:
    """What the daemon would refuse at start, validate refuses, at the line."""
    issue = only_issue(tmp_path, yaml)
    assert str(issue).replace(str(tmp_path) + "/", "").startswith(where), str(issue)
    with pytest.raises(InvalidConfig):
        parse_config(yaml)
