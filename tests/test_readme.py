"""The README: it opens with the two commands (the first one's job runs on the bundled workspace),
reads as a guide with the reference in docs/, and its Python example runs as written."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc

from nerve.log.reader import snapshot, table_since

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[0] == "```", "the README must open with the two commands"
    return lines[1:3]


def test_readme_opens_with_setup_and_test_commands() -> None:
    first, second = _commands()
    assert first.startswith("python3 -m venv .venv && .venv/bin/pip install") and first.endswith(
        "nerve dev"
    )
    assert second.endswith(".venv/bin/python -m pytest -q -n 4") and "'.[test]'" in second
    assert (
        second in (ROOT / ".ci" / "run").read_text()
        or "grep -m1" in (ROOT / ".ci" / "run").read_text()
    )


def test_first_command_runs_the_daemon_on_the_bundled_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "bundled"
    ws.mkdir()
    shutil.copy(ROOT / "nerve.yaml", ws / "nerve.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(ws), "dev"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 40
        seen: set[str] = set()
        while time.monotonic() < deadline and not {"cpu", "memory"} <= seen:
            time.sleep(0.5)
            if (ws / "data" / "log").exists():
                table = table_since(snapshot(ws / "data" / "log"))
                seen = set(
                    table.filter(pc.equal(table.column("kind"), "observation"))
                    .column("subject")
                    .to_pylist()
                )
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    subjects = set(table_since(snapshot(ws / "data" / "log")).column("subject").to_pylist())
    assert {"cpu", "memory"} <= subjects, subjects
    assert "daemon" in subjects  # daemon.started / daemon.stopped


def _section(name: str) -> str:
    """The text of the README's ``## name`` section, up to the next ``## `` heading."""
    text = (ROOT / "README.md").read_text()
    return text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]


def _python_session() -> tuple[str, str]:
    """The code block of the README's "Python" section, and the output it says it prints."""
    section = _section("Python")
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    printed = section.split("```text\n", 1)[1].split("```", 1)[0]
    return code, printed


def _masked(text: str) -> list[str]:
    """Lines with what differs between runs (clock times, digests) masked."""
    text = re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text)
    return re.sub(r"\b[0-9a-f]{16}\b", "DIGEST", text).splitlines()


def _tree(folder: Path) -> list[str]:
    """Every path under ``folder``, relative, sorted."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_the_python_session_runs_on_a_scratch_workspace(tmp_path: Path) -> None:
    """As a newcomer runs it: an empty folder, a HOME of its own, no workspace around and the
    base install (no pandas needed); it prints what the README says and writes nothing but
    its one scratch folder under the temporary directory."""
    home, cwd, tmp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    for folder in (home, cwd, tmp):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NERVE_", "XDG_"))}
    env |= {"HOME": str(home), "TMPDIR": str(tmp), "NO_COLOR": "1"}
    code, printed = _python_session()
    blocker = tmp_path / "no_pandas"  # the base install: importing pandas fails
    blocker.mkdir()
    (blocker / "pandas.py").write_text("raise ImportError('pandas is not in the base install')\n")
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), str(ROOT)])
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert _masked(proc.stdout) == _masked(printed)
    assert _tree(home) == [] and _tree(cwd) == []
    (scratch,) = tmp.iterdir()
    assert (scratch / "scratch" / "nerve.yaml").is_file()


def test_the_readme_is_a_guide_with_the_reference_in_docs() -> None:
    """A page read top to bottom: a heading soon after the two commands, short, and every
    ``docs/...`` link in it (and in docs/*.md) names a file that exists."""
    lines = (ROOT / "README.md").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert first < 40, f"the first ## heading is at line {first + 1}"
    assert len(lines) <= 400, f"README.md has {len(lines)} lines"
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_more_list_links_every_reference_page() -> None:
    more = _section("More")
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert [p for p in pages if f"(docs/{p})" not in more] == []
