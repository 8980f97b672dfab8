"""Hostile pass: an excluded process is named by no process event, not only by its own
start and exit. The processes sense also reports a ``top`` (each busy or big process's name
and command line, and a line listing them) and a ``brief`` (short-lived exits counted by
name): an exclusion that looked only at a payload's own ``name`` stored those whole."""

from __future__ import annotations

from nerve.events import SourceClass
from nerve.log.drafts import Draft
from nerve.privacy.policy import Policy
from nerve.privacy.screen import Screen
from nerve.privacy.settings import PrivacyConfig

CONFIG = PrivacyConfig.model_validate({"processes": {"exclude": ["keepass*"]}})
PROCS = int(SourceClass.PROCESS_TREE)


def _proc(name: str) -> dict[str, object]:
    return {"pid": 7, "name": name, "user": "me", "cmdline": f"/usr/bin/{name} ~/vault.kdbx",
            "cpu_permille": 300, "rss_bytes": 1 << 20, "start_time": 1}  # fmt: skip


def _top(*names: str) -> Draft:
    procs = [_proc(n) for n in names]
    line = "top cpu: " + ", ".join(f"{n} 30%" for n in names) + "; memory: none"
    payload = {"event": "top", "interval_ms": 10_000, "cpu": procs, "memory": [], "over": []}
    return Draft.of("observation", source=PROCS, line=line, payload=payload)


def _brief(**counts: int) -> Draft:
    payload = {"event": "brief", "counts": counts, "since_ns": 1}
    return Draft.of("observation", source=PROCS, line="brief", payload=payload)


def test_a_top_or_brief_naming_an_excluded_process_is_not_stored() -> None:
    policy = Policy(CONFIG)
    assert policy.capture(_top("firefox", "keepassxc")) is None
    assert policy.capture(_brief(make=2, keepassxc=3)) is None
    assert policy.capture(_top("firefox")) is not None  # the others' tops are kept
    assert policy.capture(_brief(make=2)) is not None


def test_the_screen_withholds_a_stored_top_naming_a_process_excluded_since() -> None:
    draft = _top("keepassxc-2.7")
    shown = Screen(CONFIG).event(PROCS, "observation", "", draft.line, draft.payload)
    assert shown.rule == "processes.exclude" and "keepass" not in shown.line


def _state() -> Draft:
    """The processes sense's state at a checkpoint: an ssh it noted (a default notable name)
    with its command line, and short-lived exits counted by name."""
    ssh = {"name": "ssh", "create_time": 1.0, "cmdline": "ssh me@private-host"}
    make = {"name": "make", "create_time": 2.0, "cmdline": "make all"}
    state = {"notable": {"41": ssh, "42": make}, "brief": {"at": 1, "counts": {"ssh": 2}}}
    payload = {"state": state, "reason": "checkpoint", "computes": 3}
    return Draft.control("sense.state", "processes", "processes state", payload)


SSH = PrivacyConfig.model_validate({"processes": {"exclude": ["ssh"]}})


def test_a_senses_state_keeps_no_excluded_process() -> None:
    """nerve's own records are never dropped, so an excluded process is taken out of one."""
    stored = Policy(SSH).redact(_state()).payload.decode()
    assert "ssh" not in stored and "private-host" not in stored
    assert "make all" in stored


def test_the_screen_takes_an_excluded_process_out_of_a_state_stored_before() -> None:
    draft = _state()
    shown = Screen(SSH).event(draft.source, draft.kind, draft.subject, draft.line, draft.payload)
    assert "ssh" not in repr(shown.data) and shown.changed


def test_a_port_an_excluded_process_opens_is_not_stored() -> None:
    """The network sense names the process holding a port it saw open or close."""
    payload = {"event": "port_opened", "address": "127.0.0.1", "port": 4242, "proto": "tcp",
               "name": "keepassxc", "pid": 7, "user": "me"}  # fmt: skip
    line = "port 127.0.0.1:4242 opened by keepassxc [7]"
    net = int(SourceClass.NETWORK)
    assert Policy(CONFIG).capture(Draft.of(source=net, line=line, payload=payload)) is None
    other = {**payload, "name": "nginx"}
    assert Policy(CONFIG).capture(Draft.of(source=net, line="nginx", payload=other)) is not None
