"""`nerve query` output that scales: JSON and CSV in the query's own column order with JSON
values as JSON, a terminal bounded by --limit, pipes given everything, rich never wrapped
when it is not on a terminal."""

from __future__ import annotations

import io
import json

from nerve.cli.output import console, render_rows
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.tty import run_tty

STRUCTS = "SELECT 2 AS b, 1 AS a, {'y': 1, 'x': [2, 3]} AS s, MAP {'k': {'z': 1, 'a': 2}} AS m"


def query(ws: WorkspaceDir, *args: str) -> str:
    return run_cli("--workspace", str(ws.root), "query", *args).stdout


def test_json_keeps_the_column_order_and_json_values(workspace: WorkspaceDir) -> None:
    assert query(workspace, STRUCTS, "--json") == (
        '{"b":2,"a":1,"s":{"y":1,"x":[2,3]},"m":{"k":{"z":1,"a":2}}}\n'
    )
    run_cli(
        "--workspace", str(workspace.root), "emit", "--source", "shell",
        "--payload", '{"cmd": "ls", "argv": ["-l"]}',
    )  # fmt: skip
    row = query(workspace, "SELECT line, data, data->'argv' AS argv FROM events", "--json")
    assert row == '{"line":"","data":{"argv":["-l"],"cmd":"ls"},"argv":["-l"]}\n'
    assert json.loads(row)["data"] == {"argv": ["-l"], "cmd": "ls"}


def test_csv_keeps_the_order_too(workspace: WorkspaceDir) -> None:
    assert query(workspace, STRUCTS, "--csv") == (
        'b,a,s,m\n2,1,"{""y"":1,""x"":[2,3]}","{""k"":{""z"":1,""a"":2}}"\n'
    )


def test_a_terminal_shows_limit_rows_and_pipes_get_them_all(workspace: WorkspaceDir) -> None:
    sql = "SELECT range AS n, 'row ' || range AS label FROM range(250)"
    text, err, code = run_tty("--workspace", str(workspace.root), "query", sql,
                              env={"NO_COLOR": "1"})  # fmt: skip
    header, rule, *rows = text.splitlines()
    assert code == 0 and header.split() == ["n", "label"] and set(rule) <= {"─", " "}
    assert len(rows) == 100 and rows[-1].split() == ["99", "row", "99"]
    assert err == "… 150 more rows (use --limit 0, --csv or --json for all)\n"
    text, err, _ = run_tty("--workspace", str(workspace.root), "query", sql, "--limit", "0")
    assert len(text.splitlines()) == 252 and err == ""
    piped = query(workspace, sql).splitlines()
    assert len(piped) == 251 and piped[-1] == "249\trow 249"
    assert len(query(workspace, sql, "--json").splitlines()) == 250


def test_piped_rich_output_is_not_wrapped() -> None:
    out = io.StringIO()
    console(out).print("word " * 60)
    assert out.getvalue().rstrip() == ("word " * 60).rstrip()  # one line, however long


def test_render_rows_keeps_what_other_listings_print() -> None:
    out = io.StringIO()
    render_rows(["name", "n"], [["cpu", 1], ["disk", None]], fmt="json", file=out)
    assert out.getvalue() == '{"name":"cpu","n":1}\n{"name":"disk","n":null}\n'
    out = io.StringIO()
    render_rows(["name", "n"], [["cpu", 1]], fmt="table", file=out)
    assert out.getvalue() == "name\tn\ncpu\t1\n"


def test_stdout_holds_only_the_rows(workspace: WorkspaceDir) -> None:
    """DuckDB's progress bar prints on stdout; piped or not, nerve keeps it out."""
    sql = "SET progress_bar_time = 0; SELECT count(*) AS n FROM range(20000000) GROUP BY range % 2"
    assert query(workspace, sql) == "n\n10000000\n10000000\n"
