"""What redaction at capture costs: the default detector pack on the capture path and on
shell-like text, and whether it catches what it must and nothing else.

    .venv/bin/python bench/privacy_bench.py [--events N] [--lines M] [--rounds R] [--quick]

* **capture path**: ``log_bench.py``'s stream (small ``observation`` events, payloads like
  ``{"i":123,"v":"x"}``), each event handed over as a sense worker's reply is (a JSON object),
  then what the kernel does with it: ``draft_from_json`` → the privacy policy →
  ``EventLog.append_drafts`` per batch of 1,000 with one fsync. The same stream runs with the
  default pack and with no privacy rules at all (``privacy: {detectors: {enabled: false}}``),
  batch by batch in turns (each first in turn) into two logs open side by side, best of
  ``--rounds``; both logs use the same ticking clock, so their digests must be equal (the
  pack changes none of these events). Also the pack alone, per event, and that against the
  whole path without it (steadier still: fsync's jitter does not enter it).
* **scan**: ``--lines`` generated shell-like commands through ``Redactor.text`` with the
  default pack (lines/s), and as shell observations through ``Policy.capture`` (line and
  ``{"command": …}`` payload, events/s).
* **checks**: every planted secret (each detector, several shapes, random values) is gone
  from the output and credited to the right rule; no rule fires on the clean corpus; the
  stream passes unchanged and both logs have the same digest.

Goals (reported, not checked: they depend on the machine): capture path at most 15% slower
with the pack, and at least 250k lines/s of shell-like text. The last stdout line is
``RESULT {json}``; progress goes to stderr; the exit status is 1 when a check fails.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import random
import shutil
import string
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from nerve.events import SourceClass
from nerve.log.drafts import Draft
from nerve.log.reader import replay_digest
from nerve.log.store import EventLog
from nerve.log.wire import draft_from_json
from nerve.privacy.detectors import DETECTORS, luhn_ok
from nerve.privacy.policy import Policy
from nerve.privacy.scan import Redactor
from nerve.privacy.settings import PrivacyConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, sized

QUICK = {"events": 50_000, "lines": 50_000, "rounds": 1}
DEFAULTS = {"events": 200_000, "lines": 300_000, "rounds": 3}
GOAL_OVERHEAD = 0.15
GOAL_LINES_PER_S = 250_000
SEED = 10
PLANTED_PER_SHAPE = 20
OFF = PrivacyConfig.model_validate({"detectors": {"enabled": False}})


def _log_bench() -> ModuleType:
    """``bench/log_bench.py``, for its stream and its ticking clock."""
    spec = importlib.util.spec_from_file_location(
        "privacy_bench_log", Path(__file__).with_name("log_bench.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# -- the capture path ---------------------------------------------------------------------


def replies(log_bench: ModuleType, events: int) -> list[list[dict[str, Any]]]:
    """The log bench's stream as worker replies carry observations: one list per batch."""
    out = []
    for b in log_bench.make_stream(events):
        columns = (b.kind, b.subject, b.source, b.trust, b.valid_time_ns, b.payload, b.line)
        rows = zip(*columns, strict=True)
        out.append([
            {"kind": k, "subject": s, "source": src, "trust": t, "valid_time_ns": v,
             "payload": json.loads(p), "line": line}
            for k, s, src, t, v, p, line in rows
        ])  # fmt: skip
    return out


def capture(
    roots: dict[str, Path], stream: list[list[dict[str, Any]]], log_bench: ModuleType
) -> dict[str, float]:
    """Seconds each path spends taking the stream from replies to durable events, as the
    kernel does. The two paths take turns batch by batch (each first in turn), into two
    logs open side by side, so both meet the same moments of a busy machine."""
    policies = {"off": Policy(OFF), "pack": Policy()}
    spent = dict.fromkeys(roots, 0.0)
    logs = {
        name: EventLog(root, node="bench", durability="fsync", clock=log_bench.bench_clock())
        for name, root in roots.items()
    }
    try:
        for index, batch in enumerate(stream):
            for name in sorted(roots, reverse=index % 2 == 1):
                started = time.perf_counter()
                drafts = [Draft(**draft_from_json(obj)) for obj in batch]
                logs[name].append_drafts(policies[name].capture_all(drafts))
                spent[name] += time.perf_counter() - started
    finally:
        for log in logs.values():
            log.close()
    return spent


def measure_capture(log_bench: ModuleType, events: int, rounds: int, work: Path) -> dict[str, Any]:
    stream = replies(log_bench, events)
    best = {"pack": float("inf"), "off": float("inf")}
    digests = {}
    for round_ in range(rounds):
        roots = {name: work / f"{name}-{round_}" for name in best}
        for name, seconds in capture(roots, stream, log_bench).items():
            best[name] = min(best[name], seconds)
            digests[name] = replay_digest(roots[name]).digest
            shutil.rmtree(roots[name])
        say(f"capture round {round_ + 1}: pack {best['pack']:.2f} s, off {best['off']:.2f} s")
    drafts = [Draft(**draft_from_json(obj)) for batch in stream for obj in batch]
    policy = Policy()
    pack_only = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        kept = policy.capture_all(drafts)
        pack_only = min(pack_only, time.perf_counter() - started)
    return {
        "events": events,
        "us_per_event_pack": round(best["pack"] / events * 1e6, 2),
        "us_per_event_off": round(best["off"] / events * 1e6, 2),
        "overhead": round(best["pack"] / best["off"] - 1, 4),
        "us_per_event_pack_alone": round(pack_only / events * 1e6, 3),
        # the pack alone against the whole path: steadier than the A/B difference, which
        # fsync's jitter can swamp on a busy machine
        "overhead_from_parts": round(pack_only / best["off"], 4),
        "stream_unchanged": all(a is b for a, b in zip(kept, drafts, strict=True)),
        "digests_equal": digests["pack"] == digests["off"],
    }


# -- shell-like text ----------------------------------------------------------------------

WORDS = (
    *("src", "tests", "build", "dist", "main", "api", "web", "cache", "logs", "data"),
    *("config", "docs", "scripts", "tmp", "home", "user", "deploy", "prod", "staging"),
    *("release", "feature", "fix", "nerve", "report", "users", "items", "orders", "backup"),
)
HOSTS = ("example.com", "api.example.com", "github.com", "10.0.0.12", "db.internal")


def _path(rng: random.Random) -> str:
    parts = rng.sample(WORDS, rng.randint(1, 4))
    ext = rng.choice(("", ".py", ".md", ".json", ".log", ".tar.gz", ".yaml"))
    return "/".join(parts) + ext


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


CLEAN_SHAPES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"git commit -m 'fix {r.choice(WORDS)} in {_path(r)}'",
    lambda r: f"git checkout {_hex(r, 40)}",
    lambda r: f"ls -la {_path(r)}",
    lambda r: f"cd ~/{_path(r)} && make test",
    lambda r: f"python3 -m pytest {_path(r)} -k {r.choice(WORDS)} -x",
    lambda r: f"curl -s https://{r.choice(HOSTS)}/v1/{r.choice(WORDS)}?page={r.randint(1, 99)}",
    lambda r: f"ssh deploy@{r.choice(HOSTS)} -p {r.randint(1000, 65000)}",
    lambda r: f"docker run -p {r.randint(1000, 9999)}:80 nginx@sha256:{_hex(r, 64)}",
    lambda r: f"kubectl -n {r.choice(WORDS)} logs pod-{_hex(r, 10)} --since=1h",
    lambda r: f"grep -rn token {_path(r)} | head -{r.randint(5, 50)}",
    lambda r: f"export PATH=$HOME/bin:$PATH; echo {r.randint(0, 10**9)}",
    lambda r: f"tar xzf {_path(r)} -C /tmp/{r.choice(WORDS)}",
    lambda r: f"vim {_path(r)} +{r.randint(1, 900)}",
    lambda r: f"pip install sk-{r.choice(WORDS)} requests=={r.randint(1, 3)}.{r.randint(0, 30)}",
    lambda r: f"aws s3 cp {_path(r)} s3://{r.choice(WORDS)}-bucket/ --region eu-west-1",
    lambda r: f"psql -h {r.choice(HOSTS)} -U {r.choice(WORDS)} -c 'select count(*) from x'",
    lambda r: f"gh pr view {r.randint(1, 5000)} --json title",
    lambda r: f"npm run {r.choice(WORDS)} -- --port {r.randint(3000, 9000)}",
)


def clean_corpus(n: int, seed: int = SEED) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(CLEAN_SHAPES)(rng) for _ in range(n)]


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"


def _card(rng: random.Random) -> str:
    prefix, length = rng.choice((("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16)))
    while True:
        digits = prefix + _chars(rng, string.digits, length - len(prefix))
        if luhn_ok(digits):
            return " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    claims = {"sub": _chars(rng, string.digits, 8), "name": rng.choice(WORDS)}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{_chars(rng, B64URL, 43)}"


def _password(rng: random.Random) -> str:
    return _chars(rng, ALNUM + "!#%^*+-_.~", rng.randint(8, 20))


def _sk(rng: random.Random) -> str:
    return "sk-" + rng.choice(("", "proj-")) + _chars(rng, ALNUM, 44) + "7a"


# (rule that must fire, secret maker, command around it)
PLANTED: tuple[tuple[str, Callable[[random.Random], str], str], ...] = (
    ("private-key", lambda r: "-----BEGIN EC PRIVATE KEY-----\n"
        + _chars(r, ALNUM + "+/", 64) + "\n-----END EC PRIVATE KEY-----", "echo '{}' > k.pem"),
    ("aws-access-key", lambda r: "AKIA" + _chars(r, string.ascii_uppercase + "234567", 16),
        "aws configure set aws_access_key_id {}"),
    ("aws-secret-key", lambda r: _chars(r, ALNUM + "/+", 40), "export AWS_SECRET_ACCESS_KEY={}"),
    ("github-token", lambda r: r.choice(("ghp_", "gho_", "ghs_", "ghu_")) + _chars(r, ALNUM, 36),
        "export GITHUB_TOKEN={}"),
    ("github-token", lambda r: "github_pat_" + _chars(r, ALNUM, 22) + "_" + _chars(r, ALNUM, 59),
        "git clone https://{}@github.com/org/repo.git"),
    ("gitlab-token", lambda r: "glpat-" + _chars(r, B64URL, 20),
        "curl -H 'PRIVATE-TOKEN: {}' https://gitlab.com/api/v4/projects"),
    ("slack-token", lambda r: "xoxb-" + _chars(r, string.digits, 12) + "-" + _chars(r, ALNUM, 24),
        "curl -d token={} https://slack.com/api/chat.postMessage"),
    ("openai-key", _sk, "OPENAI_API_KEY={} python3 chat.py"),
    ("jwt", _jwt, "curl -H 'Authorization: Bearer {}' https://api.example.com/me"),
    ("url-password", _password, "psql postgres://admin:{}@db.internal:5432/app"),
    ("password-assignment", _password, "PGPASSWORD={} pg_dump app"),
    ("password-assignment", _password, "mysql -u root --password {} -e 'show tables'"),
    ("card-number", _card, "echo 'card {}' >> orders.txt"),
)  # fmt: skip


def planted_corpus(per_shape: int, seed: int = SEED) -> list[tuple[str, str, str]]:
    """``(rule, secret, command)`` for every shape, ``per_shape`` random values each."""
    rng = random.Random(seed)
    return [
        (rule, secret, shape.format(secret))
        for rule, make, shape in PLANTED
        for secret in (make(rng) for _ in range(per_shape))
    ]


def measure_scan(lines: list[str], rounds: int) -> dict[str, Any]:
    pack = Redactor([d.name for d in DETECTORS])
    policy = Policy()
    drafts = [
        Draft.of(source=SourceClass.SHELL, line=f"$ {c}", payload={"command": c}) for c in lines
    ]
    best_text = best_capture = float("inf")
    fired = 0
    for _ in range(rounds):
        started = time.perf_counter()
        for line in lines:
            counts: dict[str, int] = {}
            pack.text(line, counts)
            fired += bool(counts)
        best_text = min(best_text, time.perf_counter() - started)
        started = time.perf_counter()
        policy.capture_all(drafts)
        best_capture = min(best_capture, time.perf_counter() - started)
    return {
        "lines": len(lines),
        "avg_chars": round(sum(map(len, lines)) / max(1, len(lines)), 1),
        "lines_per_s": round(len(lines) / best_text),
        "shell_events_per_s": round(len(lines) / best_capture),
        "clean_lines_fired": fired // rounds,
    }


def check_planted(cases: list[tuple[str, str, str]]) -> dict[str, Any]:
    pack = Redactor([d.name for d in DETECTORS])
    missed = []
    for rule, secret, command in cases:
        counts: dict[str, int] = {}
        out = pack.text(command, counts)
        if secret in out or rule not in counts:
            missed.append({"rule": rule, "fired": counts})
    return {"planted": len(cases), "missed": len(missed), "missed_samples": missed[:5]}


# -- report -------------------------------------------------------------------------------


def render(result: dict[str, Any], out: TextIO) -> None:
    cap, scan = result["capture"], result["scan"]
    rows = [
        ("capture path, no privacy rules", f"{cap['us_per_event_off']} µs/event"),
        ("capture path, default pack", f"{cap['us_per_event_pack']} µs/event"),
        ("pack overhead on the capture path", f"{cap['overhead']:.1%} (goal ≤ 15%)"),
        ("the pack alone", f"{cap['us_per_event_pack_alone']} µs/event"),
        ("the pack alone ÷ the path without it", f"{cap['overhead_from_parts']:.1%}"),
        ("shell-like text scanned", f"{scan['lines_per_s']:,} lines/s (goal ≥ 250,000)"),
        ("shell observations captured", f"{scan['shell_events_per_s']:,} events/s"),
        ("planted secrets caught", f"{result['planted']['planted'] - result['planted']['missed']}"
         f" of {result['planted']['planted']}"),
        ("clean lines a rule fired on", f"{scan['clean_lines_fired']} of {scan['lines']:,}"),
    ]  # fmt: skip
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}", file=out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int, help="capture-path events (default 200,000)")
    parser.add_argument("--lines", type=int, help="shell-like lines scanned (default 300,000)")
    parser.add_argument("--rounds", type=int, help="runs of each path, best kept (default 3)")
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    args = parser.parse_args(argv)
    return sized(args, QUICK, DEFAULTS)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="nerve-privacy-"))
    try:
        say(f"capture path: {args.events:,} events, {args.rounds} round(s)")
        capture_result = measure_capture(_log_bench(), args.events, args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(f"scan: {args.lines:,} shell-like lines")
    scan = measure_scan(clean_corpus(args.lines), args.rounds)
    planted = check_planted(planted_corpus(PLANTED_PER_SHAPE))
    result: dict[str, Any] = {
        "events": args.events,
        "lines": args.lines,
        "rounds": args.rounds,
        "capture": capture_result,
        "scan": scan,
        "planted": planted,
        "goals": {
            "capture_overhead_at_most_15pct": capture_result["overhead"] <= GOAL_OVERHEAD,
            "pack_alone_at_most_15pct": capture_result["overhead_from_parts"] <= GOAL_OVERHEAD,
            "lines_per_s_at_least_250k": scan["lines_per_s"] >= GOAL_LINES_PER_S,
        },
        "load_avg_1m": load_avg_1m(),
    }
    result["checks"] = {
        "every_planted_secret_redacted": planted["missed"] == 0,
        "no_false_positive_on_clean_lines": scan["clean_lines_fired"] == 0,
        "stream_unchanged": capture_result["stream_unchanged"],
        "digests_equal": capture_result["digests_equal"],
    }
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
