"""The ``privacy:`` section: validation that names file:line:col, and which rules apply to
which events (scopes, drops, exclusions, detectors switched off and on)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nerve.clock import Hlc
from nerve.config import parse_config, validate_config
from nerve.errors import PrivacyError
from nerve.events import NERVE_SOURCE, Event, SourceClass
from nerve.log.drafts import Draft
from nerve.privacy.policy import Policy, path_glob, program_of
from nerve.privacy.settings import PrivacyConfig
from tests.conftest import run_cli

GHP = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
SHELL, FILES, PROCS = SourceClass.SHELL, SourceClass.FILE_CHANGE, SourceClass.PROCESS_TREE

CONFIG = r"""
privacy:
  detectors:
    disable: [card-number]
  rules:
    - name: corp-host
      regex: '[a-z]+\.corp\.example'
      source: shell
    - name: ticket
      regex: 'ticket=(?P<secret>\d+)'
      kind: [observation, note]
    - name: no-browser
      action: drop
      sense: browser
    - name: no-vault
      action: drop
      regex: 'vault\s+read'
    - detector: card-number
      source: shell
  files: {exclude: ["**/.env", "secrets/**", "*.pem"]}
  shell: {exclude: ["pass", "op *"]}
  processes: {exclude: ["keepass*"]}
"""


def policy(text: str = CONFIG) -> Policy:
    return Policy(parse_config(text).privacy)


def capture(p: Policy, source: int, payload: object, line: str = "", **kw: str) -> Draft | None:
    return p.capture(Draft.of(kw.get("kind", "observation"), source=source, line=line,
                              payload=payload, subject=kw.get("subject", "")))  # fmt: skip


def stored(draft: Draft | None) -> object:
    assert draft is not None
    return json.loads(draft.payload) if draft.payload else None


def test_regex_rules_apply_in_their_scope_only() -> None:
    p = policy()
    shell = capture(p, SHELL, {"command": "ssh db.corp.example"}, "$ ssh db.corp.example")
    assert shell is not None and shell.line == "$ ssh [redacted:corp-host]"
    assert stored(shell) == {"_redacted": {"corp-host": 1}, "command": "ssh [redacted:corp-host]"}
    other = capture(p, SourceClass.ENDPOINT, {"host": "db.corp.example"})
    assert stored(other) == {"host": "db.corp.example"}


def test_a_secret_group_is_all_a_regex_rule_replaces() -> None:
    note = capture(p := policy(), SourceClass.ENDPOINT, None, "ticket=1234 ok", kind="note")
    assert note is not None and note.line == "ticket=[redacted:ticket] ok"
    signal = capture(p, SourceClass.ENDPOINT, None, "ticket=1234", kind="signal")
    assert signal is not None and signal.line == "ticket=1234"


def test_a_detector_can_be_off_everywhere_but_one_scope() -> None:
    p = policy()
    card = "4111 1111 1111 1111"
    assert stored(capture(p, SHELL, {"command": f"pay {card}"})) == {
        "_redacted": {"card-number": 1},
        "command": "pay [redacted:card-number]",
    }
    assert stored(capture(p, SourceClass.ENDPOINT, {"memo": card})) == {"memo": card}
    assert stored(capture(p, SourceClass.ENDPOINT, {"t": GHP})) == {
        "_redacted": {"github-token": 1},
        "t": "[redacted:github-token]",
    }  # the rest of the pack stays on


def test_the_pack_can_be_switched_off() -> None:
    p = policy("privacy: {detectors: {enabled: false}}")
    assert stored(capture(p, SHELL, {"command": f"T={GHP}"})) == {"command": f"T={GHP}"}


def test_drop_rules_by_sense_and_by_regex() -> None:
    p = policy()
    assert capture(p, SourceClass.ENDPOINT, {"url": "x"}, subject="browser") is None
    assert capture(p, SHELL, {"command": "vault  read secret/db"}) is None
    assert capture(p, SHELL, {"command": "vault status"}) is not None
    assert (p.dropped, p.redacted) == (2, 0)


@pytest.mark.parametrize(
    ("source", "payload", "dropped"),
    [
        (FILES, {"path": ".env", "change": "modified"}, True),
        (FILES, {"path": "app/config/.env", "change": "added"}, True),
        (FILES, {"path": "secrets/db/password.txt", "change": "added"}, True),
        (FILES, {"path": "keys/server.pem", "change": "added"}, True),
        (FILES, {"path": "mysecrets/x", "change": "added"}, False),
        (FILES, {"path": "src/.envrc", "change": "added"}, False),
        (SHELL, {"command": "pass show bank"}, True),
        (SHELL, {"command": "/usr/bin/pass"}, True),
        (SHELL, {"command": "sudo PASSWORD_STORE_DIR=x pass git push"}, True),
        (SHELL, {"command": "op item get github"}, True),
        (SHELL, {"command": "passwd"}, False),
        (SHELL, {"command": "echo op"}, False),
        (PROCS, {"name": "keepassxc", "pid": 4}, True),
        (PROCS, {"name": "python3", "pid": 5}, False),
        (SourceClass.ENDPOINT, {"name": "keepassxc", "path": ".env"}, False),  # other sources
    ],
)
def test_exclusions_apply_to_what_each_sense_reports(
    source: int, payload: object, dropped: bool
) -> None:
    assert (capture(policy(), source, payload) is None) is dropped


def test_globs_and_programs() -> None:
    assert path_glob("docs/**/*.md").fullmatch("docs/a/b/c.md")
    assert not path_glob("docs/*.md").fullmatch("docs/a/c.md")
    assert path_glob("/home/me/private").fullmatch("/home/me/private/notes.txt")
    assert program_of("FOO=1 sudo /opt/bin/tool --x") == "tool"


def test_nerves_own_records_are_redacted_but_never_dropped() -> None:
    p = policy("privacy: {rules: [{name: all, action: drop}]}")
    state = Draft.control("sense.state", "browser", "browser: x", {"state": {"t": GHP}})
    assert capture(p, SHELL, {"command": "ls"}) is None
    kept = p.redact(state)
    assert kept.source == NERVE_SOURCE
    assert json.loads(kept.payload) == {
        "_redacted": {"github-token": 1},
        "state": {"t": "[redacted:github-token]"},
    }


def test_screen_refuses_events_a_rule_would_change_naming_where() -> None:
    p = policy()
    clean = Event(Hlc(1, 0), "n", "observation", source=SHELL, line="ls", payload=b"{}")
    leaky = Event(Hlc(2, 0), "n", "observation", source=SHELL, line=f"T={GHP}")
    dropped = Event(Hlc(3, 0), "n", "observation", source=SHELL, payload=b'{"command":"pass"}')
    p.screen([clean])
    redact = r"^event 7: the privacy rules would redact it \(github-token ×1\); an imported"
    with pytest.raises(PrivacyError, match=redact) as caught:
        p.screen([clean, leaky], [2, 6])  # their places in a request with erased events
    assert caught.value.field == "events[6]"
    with pytest.raises(PrivacyError, match=r"^event 1: the privacy rule 'shell.exclude' would"):
        p.screen([dropped])


BAD = """\
senses: {}
privacy:
  detectors:
    disable: [card-numbr]
  rules:
    - name: corp
      regex: 'a(b'
      source: shel
    - name: x
    - regex: 'y'
    - {name: z, regex: 'q', detector: jwt}
    - {name: github-token, regex: 'ghp'}
  shell:
    exclude: [pass, ""]
  proceses: {}
"""


def test_every_problem_in_the_section_is_named_with_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "nerve.yaml"
    path.write_text(BAD)
    issues = [str(i).replace(str(path), "nerve.yaml") for i in validate_config(path)]
    assert issues == [
        "nerve.yaml:4:15: privacy.detectors.disable[0]: unknown detector 'card-numbr' "
        "(did you mean 'card-number'?)",
        "nerve.yaml:7:7: privacy.rules[0].regex: bad regex 'a(b': missing ), unterminated "
        "subpattern at position 1",
        "nerve.yaml:8:7: privacy.rules[0].source: unknown source class 'shel' (did you mean "
        "'shell'? one of "
        "file_change, app_focus, system_log, process_tree, thermal_power, shell, "
        "accessibility, network, endpoint, salience, or vendor:<code>)",
        "nerve.yaml:9:7: privacy.rules[1]: a redact rule needs a regex or a detector to say "
        "what to replace",
        "nerve.yaml:10:7: privacy.rules[2]: required key 'name' is missing",
        "nerve.yaml:11:29: privacy.rules[3].detector: give either regex or detector, not both",
        "nerve.yaml:12:8: privacy.rules[4].name: 'github-token' is a built-in detector's "
        "name; give the regex rule its own",
        "nerve.yaml:14:5: privacy.shell.exclude: entries must not be empty",
        "nerve.yaml:15:3: privacy.proceses: unknown key 'proceses' (did you mean 'processes'?)",
    ]


def test_two_regex_rules_may_not_share_a_name(tmp_path: Path) -> None:
    path = tmp_path / "nerve.yaml"
    path.write_text("privacy:\n  rules:\n    - {name: a, regex: x}\n    - {name: a, regex: y}\n")
    assert [i.message for i in validate_config(path)] == ["two rules are named 'a'"]


def test_nerve_validate_reports_a_bad_regex_at_its_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_cli("init", str(ws))
    with (ws / "nerve.yaml").open("a") as f:
        f.write("privacy:\n  rules:\n    - {name: bad, regex: '(?P<x'}\n")
    lines = (ws / "nerve.yaml").read_text().count("\n")
    proc = run_cli("--workspace", str(ws), "validate", check=False)
    assert proc.returncode == 1
    assert f"nerve.yaml:{lines}:19: privacy.rules[0].regex: bad regex '(?P<x'" in proc.stderr


def test_an_empty_section_is_the_default_pack() -> None:
    assert parse_config("privacy:\n").privacy == PrivacyConfig()
    assert len(PrivacyConfig().active_detectors) == 11


URL = f"https://bot:{GHP}@github.com/acme/app.git"


def test_the_subject_is_redacted_like_the_line() -> None:
    p = policy()
    draft = capture(p, SourceClass.ENDPOINT, {"n": 1}, line="pushed", subject=URL)
    assert draft is not None
    assert GHP not in draft.subject
    assert draft.subject == "https://bot:[redacted:github-token]@github.com/acme/app.git"
    assert stored(draft) == {"n": 1, "_redacted": {"github-token": 1}}
    own = p.redact(Draft.control("workflow.status", URL, "run", {"n": 1}))
    assert GHP not in own.subject


def test_a_clean_subject_leaves_the_event_as_it_was() -> None:
    draft = Draft.of("observation", source=SourceClass.ENDPOINT, line="x", payload={"n": 1},
                     subject="https://github.com/acme/app.git")  # fmt: skip
    assert policy().capture(draft) is draft


def test_drop_rules_look_at_the_subject() -> None:
    p = policy()
    assert capture(p, SHELL, {"n": 1}, line="ok", subject="vault read kv/x") is None
    assert capture(p, SHELL, {"n": 1}, line="ok", subject="vault") is not None


def test_screen_refuses_an_event_whose_subject_a_rule_would_change() -> None:
    event = Event(Hlc(1, 0), "n", "note", source=SourceClass.ENDPOINT, line="pushed",
                  payload=b'{"n":1}', subject=URL)  # fmt: skip
    with pytest.raises(PrivacyError, match=r"event 1: the privacy rules would redact it"):
        policy().screen([event])


def test_clean_redacts_a_sense_s_own_text_and_leaves_plain_text_alone() -> None:
    p = policy()
    cleaned = p.clean(f"Traceback: export GITHUB_TOKEN={GHP} failed")
    assert GHP not in cleaned and "[redacted:github-token]" in cleaned
    assert cleaned.startswith("Traceback: export GITHUB_TOKEN=")
    assert p.clean("plain words") == "plain words" and p.clean("") == ""
