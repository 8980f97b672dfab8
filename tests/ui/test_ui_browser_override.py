"""Overriding a held run in a real browser: Debian's Chromium against a `nerve ui` subprocess
and a daemon holding the run at its blocking gate check."""

from __future__ import annotations

from pathlib import Path

import pytest

from nerve.ui.data import OVERRIDE_WHERE
from tests.helpers.browser import chromium, chromium_missing, ui_process, wait_until
from tests.helpers.held import held_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_missing() is not None, reason=str(chromium_missing())),
]


def test_a_person_overrides_a_held_run_on_the_senses_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    monkeypatch.setenv("XDG_STATE_HOME", state["XDG_STATE_HOME"])
    with (
        held_run(tmp_path / "ws") as (daemon, run),
        ui_process(daemon.root, state) as proc,
        chromium(tmp_path / "downloads") as context,
    ):
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(proc.login_url)
        page.goto(proc.base + "/senses")
        form = page.locator(f"form.override:has(input[name=run][value='{run}'])")
        form.locator("input[name=reason]").fill("reviewed by hand")
        assert form.locator("input[name=confirm]:invalid").count() == 1  # not sent unticked
        assert daemon.status(run) == "held"
        form.locator("input[name=confirm]").check()
        with page.expect_navigation():
            form.locator("button").click()
        assert "/do/override" in page.url and "completed" in page.content()
        page.screenshot(path=str(tmp_path / "override.png"))
        wait_until(lambda: daemon.status(run) == "completed", what="the run to complete")
        record = daemon.events("workflow.override", run)[0]["data"]
        assert (record["reason"], record["tty"]) == ("reviewed by hand", OVERRIDE_WHERE)
        page.goto(proc.base + "/senses")
        assert page.locator(f"form.override:has(input[name=run][value='{run}'])").count() == 0
        assert errors == []
