"""Check manifests: front matter, field rules, forward compatibility, glob matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from nerve.checks.manifest import (
    DEFAULT_TIMEOUT_SECONDS,
    CheckManifest,
    glob_regex,
    load_manifests,
    matches_path,
    parse_manifest,
)
from nerve.errors import CheckError

GOOD = """\
---
id: required-sections
kind: deterministic
command: python tools/sections.py --min "2 headings"
default_severity: blocking
fire_on: gate
description: Checks that a report has its H2 headings
category: document-shape
matches: "**/{docs,reports}/**"
input_schema:
  output_path: string
  run: string
output_schema:
  pass: boolean
  findings_count: integer
timeout_seconds: 300
---

# required-sections

Checks the headings.
"""

MINIMAL = """\
---
id: {id}
kind: deterministic
command: {command}
default_severity: advisory
description: d
{more}---
"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def minimal(
    tmp_path: Path, more: str = "", *, id: str = "demo", command: str = "tool --x"
) -> CheckManifest:
    text = MINIMAL.format(id=id, command=command, more=more)
    return parse_manifest(write(tmp_path, f"{id}.md", text))


def refused(tmp_path: Path, text: str | bytes, name: str = "demo.md") -> str:
    with pytest.raises(CheckError) as caught:
        parse_manifest(write(tmp_path, name, text))
    return str(caught.value)


# parsing


def test_good_manifest(tmp_path: Path) -> None:
    manifest = parse_manifest(write(tmp_path, "required-sections.md", GOOD))
    assert manifest.id == "required-sections"
    assert manifest.command == ("python", "tools/sections.py", "--min", "2 headings")
    assert (manifest.default_severity, manifest.fire_on) == ("blocking", "gate")
    assert manifest.category == "document-shape"
    assert manifest.matches == "**/{docs,reports}/**"
    assert manifest.timeout_seconds == 300
    assert manifest.path_flag == "--output-path"
    assert manifest.body == "\n# required-sections\n\nChecks the headings.\n"
    assert manifest.extra == {}


def test_describe(tmp_path: Path) -> None:
    path = write(tmp_path, "required-sections.md", GOOD)
    shown = parse_manifest(path).describe()
    assert shown["command"] == "python tools/sections.py --min '2 headings'"
    assert shown["path"] == str(path) and shown["path_flag"] == "--output-path"
    assert shown["output_schema"] == {"pass": "boolean", "findings_count": "integer"}
    assert "extra" not in shown


def test_defaults(tmp_path: Path) -> None:
    manifest = minimal(tmp_path)
    assert manifest.fire_on == "write" and manifest.matches is None
    assert manifest.timeout_seconds == DEFAULT_TIMEOUT_SECONDS == 1200
    assert manifest.input_schema == {} and manifest.path_flag == "--output-path"
    assert "category" not in manifest.describe()


def test_command_as_a_list(tmp_path: Path) -> None:
    manifest = minimal(tmp_path, command='["/opt/my tools/lint", "--fast"]')
    assert manifest.command == ("/opt/my tools/lint", "--fast")


def test_file_path_in_flow_mapping_input_schema_selects_file_flag(tmp_path: Path) -> None:
    manifest = minimal(tmp_path, "input_schema: {file_path: string, strict: boolean}\n")
    assert manifest.input_schema == {"file_path": "string", "strict": "boolean"}
    assert manifest.path_flag == "--file-path"


def test_empty_matches_is_no_glob(tmp_path: Path) -> None:
    assert minimal(tmp_path, 'matches: ""\n').matches is None


def test_unknown_keys_are_kept_not_refused(tmp_path: Path) -> None:
    manifest = minimal(tmp_path, "cool_new_field: [1, 2]\nbody: not the body\n")
    assert manifest.extra == {"cool_new_field": [1, 2], "body": "not the body"}
    assert manifest.body == ""
    assert manifest.describe()["extra"] == {"cool_new_field": [1, 2], "body": "not the body"}


def test_byte_order_mark_and_crlf_are_read(tmp_path: Path) -> None:
    text = "\ufeff" + MINIMAL.format(id="demo", command="tool", more="").replace("\n", "\r\n")
    assert parse_manifest(write(tmp_path, "demo.md", text)).command == ("tool",)


# refusals name file, line and field


@pytest.mark.parametrize(
    ("more", "where", "fragment"),
    [
        ("kind2: x\nfire_on: save\n", ":8:1: fire_on: must be 'write' or 'gate' (got 'save')", ""),
        ("timeout_seconds: 0\n", ":7:1: timeout_seconds: ", "greater than 0"),
        ("timeout_seconds: '300'\n", ":7:1: timeout_seconds: ", "valid integer"),
        ("category: [a]\n", ":7:1: category: ", "valid string"),
        ("input_schema: [file_path]\n", ":7:1: input_schema: ", "valid dictionary"),
    ],
)
def test_bad_optional_fields(tmp_path: Path, more: str, where: str, fragment: str) -> None:
    message = refused(tmp_path, MINIMAL.format(id="demo", command="tool", more=more))
    assert f"{tmp_path / 'demo.md'}{where}" in message
    assert fragment in message


def test_id_must_equal_stem(tmp_path: Path) -> None:
    text = MINIMAL.format(id="other", command="tool", more="")
    message = refused(tmp_path, text)
    assert (
        f"{tmp_path / 'demo.md'}:2:1: id: id 'other' must equal the file name stem 'demo'"
        in message
    )


def test_id_must_be_kebab_case(tmp_path: Path) -> None:
    message = refused(tmp_path, MINIMAL.format(id="Demo_X", command="t", more=""), "Demo_X.md")
    assert ":2:1: id: check id 'Demo_X' must be kebab-case" in message


def test_kind_llm_is_reserved(tmp_path: Path) -> None:
    text = MINIMAL.format(id="demo", command="tool", more="").replace("deterministic", "llm")
    message = refused(tmp_path, text)
    assert ":3:1: kind: kind 'llm' is not supported" in message
    assert "other kinds reserved for future releases" in message


def test_bad_severity(tmp_path: Path) -> None:
    text = MINIMAL.format(id="demo", command="tool", more="").replace("advisory", "fatal")
    assert ":5:1: default_severity: must be 'advisory' or 'blocking' (got 'fatal')" in refused(
        tmp_path, text
    )


def test_bad_commands(tmp_path: Path) -> None:
    assert "cannot split command" in refused(
        tmp_path, MINIMAL.format(id="demo", command="tool 'unclosed", more="")
    )
    assert "command is empty" in refused(tmp_path, MINIMAL.format(id="demo", command='""', more=""))
    assert "string or a list of strings" in refused(
        tmp_path, MINIMAL.format(id="demo", command="[tool, 3]", more="")
    )


def test_several_problems_reported_together(tmp_path: Path) -> None:
    message = refused(tmp_path, "---\nid: demo\nkind: llm\nfire_on: never\n---\n")
    for field in ("kind", "fire_on", "command", "default_severity", "description"):
        assert f"{field}: " in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("# just markdown\n", ":1: no front matter"),
        ("", ":1: no front matter"),
        (
            "---\nid: demo\nkind: deterministic\n",
            ":1: front matter opened with '---' is never closed",
        ),
        ("---\n- a\n- b\n---\n", ":2:1: front matter must be a mapping"),
        ("---\n---\n", ":2:1: front matter is empty"),
        ("---\nid: demo\nid: demo\n---\n", ':3:1: invalid YAML: found duplicate key "id"'),
        ("---\nid: [demo\n---\n", "invalid YAML"),
    ],
)
def test_broken_front_matter(tmp_path: Path, text: str, fragment: str) -> None:
    message = refused(tmp_path, text)
    assert message.startswith(str(tmp_path / "demo.md"))
    assert fragment in message


def test_junk_bytes(tmp_path: Path) -> None:
    assert "not UTF-8 text" in refused(tmp_path, b"---\nid: \xff\xfe\x00\x81\n---\n")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CheckError, match="cannot read manifest"):
        parse_manifest(tmp_path / "nothing.md")


# a folder of manifests


def test_load_manifests(tmp_path: Path) -> None:
    folder = tmp_path / "workflows" / "checks"
    write(folder, "required-sections.md", GOOD)
    write(folder, "linter.md", MINIMAL.format(id="linter", command="lint", more=""))
    write(folder, "README.md", "# what these are\n")
    write(folder, "notes.txt", "not a manifest")
    found = load_manifests(folder)
    assert sorted(found) == ["linter", "required-sections"]
    assert found["linter"].command == ("lint",)


def test_load_manifests_missing_folder_is_empty(tmp_path: Path) -> None:
    assert load_manifests(tmp_path / "nope") == {}


def test_load_manifests_names_the_bad_file(tmp_path: Path) -> None:
    folder = tmp_path / "checks"
    write(folder, "good.md", MINIMAL.format(id="good", command="t", more=""))
    write(folder, "bad.md", MINIMAL.format(id="bad", command="t", more="fire_on: sometimes\n"))
    with pytest.raises(CheckError, match=r"bad\.md:7:1: fire_on: "):
        load_manifests(folder)


# glob matching


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.{ts,js}", "a.ts", True),
        ("**/*.{ts,js}", "src/deep/a.js", True),
        ("**/*.{ts,js}", "a.tsx", False),
        ("**/*.{ts,js}", "a.ts/b.md", False),
        ("**/{docs,intents}/**", "docs/a.md", True),
        ("**/{docs,intents}/**", "x/y/intents/run/b.md", True),
        ("**/{docs,intents}/**", "docsx/a.md", False),
        ("**/{docs,intents}/**", "x/docs", False),
        ("**/traceability.json", "traceability.json", True),
        ("**/traceability.json", "a/b/traceability.json", True),
        ("**/traceability.json", "a/my-traceability.json", False),
        ("*.md", "a.md", True),
        ("*.md", "d/a.md", False),
        ("src/**", "src/a/b/c.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("report-?.md", "report-1.md", True),
        ("report-?.md", "report-10.md", False),
        ("report-?.md", "report-/.md", False),
        ("{a,b{c,d}}.txt", "bd.txt", True),
        ("{a,b{c,d}}.txt", "b.txt", False),
        ("notes{1.md", "notes{1.md", True),
        ("a,b.md", "a,b.md", True),
        ("a.md", "aXmd", False),
        ("(x)+[y].md", "(x)+[y].md", True),
    ],
)
def test_glob_regex(pattern: str, path: str, expected: bool) -> None:
    assert (glob_regex(pattern).fullmatch(path) is not None) is expected


def test_matches_path_without_glob_depends_on_fire_on(tmp_path: Path) -> None:
    assert matches_path(minimal(tmp_path, "fire_on: gate\n"), "any/file.md") is True
    assert matches_path(minimal(tmp_path, "fire_on: write\n"), "any/file.md") is False


def test_matches_path_with_glob(tmp_path: Path) -> None:
    manifest = minimal(tmp_path, 'matches: "**/*.py"\n')
    assert matches_path(manifest, "./pkg/mod.py") is True
    assert matches_path(manifest, "pkg/mod.pyc") is False
