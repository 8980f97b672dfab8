"""Seed 001's workflow-utils in Python: read_nerve_yaml, AGENT_CONTEXT, command_env,
run_agent (cursorAgent, generalised), run_argv's 300 s default and extract's tool name."""

from __future__ import annotations

import inspect
import json
import shutil
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from nerve.flow.utils import (
    AGENT_CONTEXT,
    CURSOR_AGENT,
    CommandFailed,
    NerveYamlError,
    command_env,
    read_nerve_yaml,
    run_agent,
    run_argv,
    tool_name,
)

PY = sys.executable
# An agent CLI that says what it was given: its argv, its PATH's first entry, its folder.
AGENT = """
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "path0": os.environ["PATH"].split(os.pathsep)[0],
                  "cwd": os.getcwd(), "mark": os.environ.get("MARK")}))
print("   ")
sys.exit(int(os.environ.get("EXIT", "0")))
"""


@pytest.fixture
def agent(tmp_path: Path) -> list[str]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    return [PY, str(script)]


def test_run_argv_defaults_to_the_seeds_300_seconds() -> None:
    assert inspect.signature(run_argv).parameters["timeout_s"].default == 300.0
    assert run_argv([PY, "-c", "print('ok')"]).stdout == "ok\n"


def test_read_nerve_yaml(tmp_path: Path) -> None:
    (tmp_path / "nerve.yaml").write_text("senses: {}\n")
    assert read_nerve_yaml(tmp_path) == "senses: {}\n"
    with pytest.raises(NerveYamlError) as missing:
        read_nerve_yaml(tmp_path / "nowhere")
    assert missing.value.code == "READ_FAILED"
    inner = tmp_path / "ws"
    inner.mkdir()
    (inner / "nerve.yaml").symlink_to(tmp_path / "nerve.yaml")
    with pytest.raises(NerveYamlError) as escaped:
        read_nerve_yaml(inner)
    assert escaped.value.code == "PATH_TRAVERSAL" and "outside the workspace" in str(escaped.value)


def test_command_env_puts_this_install_first_on_path() -> None:
    env = command_env({"MARK": "x"})
    first = env["PATH"].split(":")[0]
    assert first == str(Path(PY).parent) and env["MARK"] == "x"
    found = shutil.which("nerve", path=env["PATH"])
    assert found is not None and Path(found).parent == Path(PY).parent


def test_run_agent_puts_context_and_prompt_in_one_argv_slot(
    agent: list[str], tmp_path: Path
) -> None:
    said = json.loads(run_agent([*agent, "-p", "{prompt}", "--force"], "tidy up", cwd=tmp_path))
    assert said["argv"] == ["-p", f"{AGENT_CONTEXT}\n\ntidy up", "--force"]
    assert said["path0"] == str(Path(PY).parent) and said["cwd"] == str(tmp_path)
    plain = json.loads(run_agent(agent, "$(rm -rf /)", context=None, env={"MARK": "m"}))
    assert plain["argv"] == ["$(rm -rf /)"] and plain["mark"] == "m"  # appended, literal


def test_run_agent_failures_are_command_failed(agent: list[str]) -> None:
    with pytest.raises(CommandFailed) as exited:
        run_agent(agent, "x", env={"EXIT": "3"})
    assert exited.value.kind == "exit" and exited.value.result is not None
    assert '"argv"' in exited.value.result.stdout
    with pytest.raises(CommandFailed) as slow:
        run_agent([PY, "-c", "import time; time.sleep(30)"], "x", timeout_s=0.3)
    assert slow.value.kind == "timeout"
    with pytest.raises(CommandFailed) as missing:
        run_agent(["no-such-agent-cli"], "x")
    assert missing.value.kind == "spawn_failed"


def test_cursor_agent_is_the_seeds_call() -> None:
    assert CURSOR_AGENT[:3] == ("cursor-agent", "-p", "{prompt}")
    assert CURSOR_AGENT[3:] == ("--model", "auto", "--output-format", "text", "--trust", "--force")


class Plain(BaseModel):
    name: str


class Titled(BaseModel):
    model_config = ConfigDict(title="Sense metadata: v2!")
    name: str


class Blank(BaseModel):
    model_config = ConfigDict(title="  !!  ")
    name: str


def test_the_extract_tool_is_named_after_the_schema_title() -> None:
    assert tool_name(Plain) == "Plain"
    assert tool_name(Titled) == "Sense_metadata_v2"
    assert tool_name(Blank) == "extract"
