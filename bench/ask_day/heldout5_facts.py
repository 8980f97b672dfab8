"""Every fact the fifth held-out question set (``heldout5.yaml``) expects, read from the log.

    .venv/bin/python bench/ask_day/heldout5_facts.py

The recorded day (``tests/fixtures/day/``) is unpacked into a temporary folder and each fact is
read with SQL through ``nerve.open(folder).sql(...)``. A line per fact gives its name, the value
the set was written against, the value read now and ``ok`` or ``FALSE``, then the forms an
answer may hold it in (what ``heldout5.yaml`` lists) and the query, so it can be run again.
The few figures read from the plan (``plan.json``) instead of the log come next; then what the
``cannot`` questions ask about, each shown absent from the log. Last, every fact in the question
file is looked up among the forms printed here: one that is not is reported. Times are UTC.
The exit status is 1 when a fact no longer holds, an absent thing is present, or the question
file has a fact this script does not print.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import nerve  # noqa: E402
from tests.helpers.day import unpack_day  # noqa: E402

QUESTIONS = HERE / "heldout5.yaml"

# The shell hook's records: when the command started (its whole-second stamp), when the log
# took it, the command, its exit status, how long it ran, the folder and the shell session.
SH = """(select make_timestamp((data->>'timestamp')::bigint * 1000000) as began, ts,
    physical_ns as seen, data->>'command' as cmd, (data->>'exit')::int as status,
    (data->>'duration_ms')::bigint as ms, data->>'cwd' as cwd, data->>'session' as sess
    from events where kind = 'observation' and subject = 'shell')"""
# One row per process in a processes "top" reading (its CPU list and its memory list).
PROCS = """(select ts, q.name as name, q.pid as pid, q.cpu_permille as permille,
    q.rss_bytes as rss
    from (select ts, unnest(json_transform(list_concat(json_extract(data, '$.cpu[*]'),
                 json_extract(data, '$.memory[*]')),
            '[{"name": "VARCHAR", "pid": "BIGINT", "cpu_permille": "BIGINT",
               "rss_bytes": "BIGINT"}]')) as q
          from events where kind = 'observation' and subject = 'processes'
          and data->>'event' = 'top'))"""
# Process starts and exits the processes sense reported, with their command lines.
LIFE = """(select ts, data->>'event' as event, (data->>'pid')::bigint as pid,
    data->>'name' as name, data->>'cmdline' as cmdline
    from events where kind = 'observation' and subject = 'processes'
    and data->>'event' in ('started', 'exited'))"""
LOAD = """(select ts, (data->>'load1')::double as load1, (data->>'percent')::double as pct,
    (data->>'cores_logical')::int as cores
    from events where kind = 'observation' and subject = 'cpu')"""
MEM = """(select ts, (data->'readings'->>'used_mib')::int as used_mib,
    (data->'readings'->>'swap_used_mib')::int as swap_mib, (data->>'total_bytes')::bigint as total
    from events where kind = 'observation' and subject = 'memory')"""
DISK = """(select ts, (data->'readings'->>'free_mib:/')::int as free_mib,
    (data->>'percent')::double as pct, (data->'readings'->>'read_kib_per_s')::int as read_kib
    from events where kind = 'observation' and subject = 'disk')"""
NET = """(select ts, data->>'event' as event, (data->>'port')::int as port,
    data->>'address' as addr, (data->>'pid')::bigint as pid,
    (data->'readings'->>'down_kib_per_s')::int as down_kib,
    (data->'readings'->>'errors')::int as errors
    from events where kind = 'observation' and subject = 'network')"""
SPELLS = """(select make_timestamp(start_ns // 1000) as s, make_timestamp(end_ns // 1000) as e,
    (end_ns - start_ns) / 1e9 as secs, afk, app, title from focus_spells)"""
FILES = """(select ts, data->>'path' as path, data->>'change' as change
    from events where kind = 'observation' and subject = 'files')"""
CHOSEN = """(select ts, subject as outcome, data->>'probe' as probe, data->>'source_line' as why
    from events where kind = 'attention.decision')"""
VERDICTS = """(select ts, data->>'check' as chk, data->>'result' as result,
    (data->>'findings_count')::int as findings
    from events where kind = 'check.verdict')"""


def hms(col: str) -> str:
    """SQL for a timestamp as HH:MM:SS."""
    return f"strftime({col}, '%H:%M:%S')"


def at(clock: str) -> str:
    """SQL for the evening's timestamp at ``clock`` (HH:MM:SS[.fff])."""
    return f"timestamp '2026-12-05 {clock}'"


class Fact(NamedTuple):
    """A fact: its name, the value its query returned when the set was written, the forms an
    answer may give it in (as in ``heldout5.yaml``) and the query."""

    name: str
    value: str
    forms: tuple[str, ...]
    query: str


def fact(name: str, value: str, forms: Sequence[str], query: str) -> Fact:
    return Fact(name, value, tuple(forms), " ".join(query.split()))


FACTS = [
    # ---- the shell ----
    fact("commands recorded", "28", ["28"], f"select count(*) from {SH}"),
    fact(
        "commands that exited non-zero",
        "false | make build | yes > /dev/null",
        ["false", "make build", "yes > /dev/null"],
        f"select string_agg(distinct cmd, ' | ' order by cmd) from {SH} where status <> 0",
    ),
    fact(
        "make build failures",
        "4",
        ["4"],
        f"select count(*) from {SH} where cmd = 'make build' and status <> 0",
    ),
    fact("make build runs", "5", ["5"], f"select count(*) from {SH} where cmd = 'make build'"),
    fact(
        "failing make build's status",
        "2",
        ["2"],
        f"select string_agg(distinct status::varchar, ',') from {SH} "
        "where cmd = 'make build' and status <> 0",
    ),
    fact(
        "first passing make build (hook stamp)",
        "19:29:58",
        ["19:29", "7:29", "19:29:58"],
        f"select {hms('min(began)')} from {SH} where cmd = 'make build' and status = 0",
    ),
    fact(
        "first passing make build (logged)",
        "19:30:00",
        ["19:30:00", "19:30", "7:30"],
        f"select {hms('min(ts)')} from {SH} where cmd = 'make build' and status = 0",
    ),
    fact(
        "first make build",
        "19:23:38",
        ["19:23", "7:23"],
        f"select {hms('min(began)')} from {SH} where cmd = 'make build'",
    ),
    fact("false's status", "1", ["1"], f"select status from {SH} where cmd = 'false'"),
    fact(
        "first command",
        "cd work/project",
        ["cd work/project"],
        f"select cmd from {SH} order by began, seen limit 1",
    ),
    fact(
        "last command's program",
        "curl",
        ["curl"],
        f"select split_part(cmd, ' ', 1) from {SH} order by began desc, seen desc limit 1",
    ),
    fact("curl's status", "0", ["0"], f"select status from {SH} where cmd like 'curl %'"),
    fact(
        "curl started",
        "19:32:38",
        ["19:32", "7:32"],
        f"select {hms('began')} from {SH} where cmd like 'curl %'",
    ),
    fact(
        "last three commands",
        "date -u | uptime | curl",
        ["date -u", "uptime", "curl"],
        f"select string_agg(c, ' | ' order by began, seen) from (select began, seen, "
        f"case when cmd like 'curl %' then 'curl' else cmd end as c from {SH} "
        "order by began desc, seen desc limit 3)",
    ),
    fact(
        "commands from 19:30 on",
        "make test | sleep 3 | date -u | uptime | curl",
        ["make test", "sleep 3", "date -u", "uptime", "curl"],
        f"select string_agg(case when cmd like 'curl %' then 'curl' else cmd end, ' | ' "
        f"order by began, seen) from {SH} where began >= {at('19:30:00')}",
    ),
    fact(
        "commands in the last three minutes (from 19:30:58.8)",
        "4",
        ["4"],
        f"select count(*) from {SH} where began >= {at('19:30:58.810')}",
    ),
    fact(
        "make test's status",
        "0",
        ["make test", "0"],
        f"select status from {SH} where cmd = 'make test'",
    ),
    fact(
        "make test started",
        "19:30:28",
        ["19:30:28", "19:30", "7:30"],
        f"select {hms('began')} from {SH} where cmd = 'make test'",
    ),
    fact(
        "make test logged",
        "19:30:30",
        ["19:30:30"],
        f"select {hms('ts')} from {SH} where cmd = 'make test'",
    ),
    fact(
        "command after the last failing make build",
        "make clean",
        ["make clean"],
        f"select cmd from (select cmd, status, lag(cmd) over w as prev_cmd, "
        f"lag(status) over w as prev_status, sess, began from {SH} "
        "window w as (partition by sess order by began, seen)) "
        "where prev_cmd = 'make build' and prev_status <> 0 order by began desc limit 1",
    ),
    fact(
        "commands run in docs (not cd)",
        "cat guide.md",
        ["cat guide.md"],
        f"select string_agg(cmd, ' | ') from {SH} where cwd like '%/docs' and cmd not like 'cd%'",
    ),
    fact(
        "commands run in src (not cd)",
        "ls -l",
        ["ls -l"],
        f"select string_agg(cmd, ' | ') from {SH} where cwd like '%/src' and cmd not like 'cd%'",
    ),
    fact(
        "sleep 3's duration, ms",
        "3002",
        ["3002", "3.002", "3.0 s", "3 s", "3 seconds"],
        f"select ms from {SH} where cmd = 'sleep 3'",
    ),
    fact(
        "longest command",
        "yes > /dev/null",
        ["yes > /dev/null"],
        f"select cmd from {SH} order by ms desc limit 1",
    ),
    fact(
        "yes's duration, ms",
        "240000",
        ["240", "4 min"],
        f"select ms from {SH} where cmd = 'yes > /dev/null'",
    ),
    fact(
        "yes's status (interrupted)",
        "130",
        ["130"],
        f"select status from {SH} where cmd = 'yes > /dev/null'",
    ),
    fact("shell sessions", "3", ["3"], f"select count(distinct sess) from {SH}"),
    fact("cd commands", "6", ["6"], f"select count(*) from {SH} where cmd like 'cd %'"),
    fact(
        "command after starting http.server",
        "echo $!",
        ["echo $!"],
        f"select cmd from (select cmd, lag(cmd) over (partition by sess order by began, seen) "
        f"as prev from {SH}) where prev like '%http.server%'",
    ),
    fact(
        "last command started before going idle (19:25:28.8)",
        "./tools/memgrow.py",
        ["memgrow.py"],
        f"select cmd from {SH} where began < {at('19:25:28.810')} order by began desc limit 1",
    ),
    fact(
        "first command started after input again (19:28:28.8)",
        "make build",
        ["make build"],
        f"select cmd from {SH} where began > {at('19:28:28.822')} order by began, seen limit 1",
    ),
    fact(
        "command started 10 minutes ago (19:23:58)",
        "false",
        ["false"],
        f"select cmd from {SH} where began = {at('19:23:58')}",
    ),
    fact(
        "window in front 10 minutes ago (19:23:58)",
        "XTerm | make build - ~/work/project",
        ["XTerm", "make build"],
        f"select app || ' | ' || title from {SPELLS} "
        f"where s <= {at('19:23:58.8')} and e > {at('19:23:58.8')}",
    ),
    fact(
        "command started at 7.25pm",
        "./tools/memgrow.py",
        ["memgrow.py"],
        f"select string_agg(cmd, ' | ') from {SH} "
        f"where began >= {at('19:25:00')} and began < {at('19:26:00')}",
    ),
    fact(
        "window in front at 7.25pm",
        "XTerm",
        ["XTerm"],
        f"select app from {SPELLS} where s <= {at('19:25:00')} and e > {at('19:25:00')}",
    ),
    fact(
        "commands around half seven (19:29:30-19:30:30)",
        "make build | ls build | make test",
        ["make test", "make build", "ls build"],
        f"select string_agg(cmd, ' | ' order by began, seen) from {SH} "
        f"where began between {at('19:29:30')} and {at('19:30:30')}",
    ),
    fact(
        "cpuhog.py running at half seven",
        "True",
        ["cpuhog.py"],
        f"select bool_or(began <= {at('19:30:00')} and began + ms * interval 1 millisecond "
        f"> {at('19:30:00')}) from {SH} where cmd like '%cpuhog.py'",
    ),
    fact(
        "http.server and make build started 19:24-19:25",
        "2",
        ["http.server"],
        f"select count(*) from {SH} where began >= {at('19:24:00')} and began < {at('19:25:00')} "
        "and (cmd like '%http.server%' or cmd = 'make build')",
    ),
    fact(
        "file changed since 19:31",
        "project/docs/guide.md",
        ["guide.md"],
        f"select string_agg(path, ' | ') from {FILES} where ts >= {at('19:31:00')}",
    ),
    # ---- processes ----
    fact("yes's pid", "16845", ["16845"], f"select distinct pid from {PROCS} where name = 'yes'"),
    fact(
        "pid 17085",
        "memgrow.py",
        ["memgrow.py", "17085"],
        f"select distinct name from {PROCS} where pid = 17085",
    ),
    fact(
        "pid 18048",
        "cpuhog.py",
        ["cpuhog.py", "18048"],
        f"select distinct name from {PROCS} where pid = 18048",
    ),
    fact(
        "http.server's pid",
        "16634",
        ["16634", "http.server"],
        f"select pid from {LIFE} where event = 'started' and cmdline like '%http.server%'",
    ),
    fact(
        "port pid 16634 opened",
        "8765",
        ["8765"],
        f"select port from {NET} where event = 'port_opened' and pid = 16634",
    ),
    fact(
        "what pid 19042 ran",
        "nab_bench",
        ["nab_bench", "19042"],
        f"select regexp_extract(cmdline, 'nab_bench') from {LIFE} where pid = 19042",
    ),
    fact(
        "pid 19042 exited",
        "19:29:45",
        ["19:29:45", "19:29", "7:29"],
        f"select {hms('ts')} from {LIFE} where pid = 19042 and event = 'exited'",
    ),
    fact(
        "memgrow.py's peak rss, bytes",
        "1585336320",
        ["1585336320", "1.48 GiB", "1.5 GiB", "1.59 GB", "1.6 GB"],
        f"select max(rss) from {PROCS} where name = 'memgrow.py'",
    ),
    fact(
        "memgrow.py's peak rss, MiB",
        "1512",
        ["1511", "1512"],
        f"select round(max(rss) / 1048576)::int from {PROCS} where name = 'memgrow.py'",
    ),
    fact(
        "memgrow.py's run, ms",
        "193162",
        ["193", "3 min", "3m13", "3:13"],
        f"select ms from {SH} where cmd like '%memgrow.py'",
    ),
    fact(
        "memgrow.py started",
        "19:25:18",
        ["19:25", "7:25"],
        f"select {hms('began')} from {SH} where cmd like '%memgrow.py'",
    ),
    fact(
        "memgrow.py ended (start + run)",
        "19:28:31",
        ["19:28", "7:28"],
        f"select {hms('began + ms * interval 1 millisecond')} from {SH} "
        "where cmd like '%memgrow.py'",
    ),
    fact(
        "memgrow.py's status", "0", ["0"], f"select status from {SH} where cmd like '%memgrow.py'"
    ),
    fact(
        "memgrow.py's rss at 19:27 (19:27:05 reading)",
        "947802112",
        ["947802112", "0.88 GiB"],
        f"select distinct rss from {PROCS} where name = 'memgrow.py' "
        f"and ts between {at('19:27:00')} and {at('19:27:10')}",
    ),
    fact(
        "... in MiB",
        "903",
        ["903"],
        f"select distinct rss // 1048576 from {PROCS} where name = 'memgrow.py' "
        f"and ts between {at('19:27:00')} and {at('19:27:10')}",
    ),
    fact(
        "memgrow.py's rss at 19:26:45",
        "780029952",
        ["780029952", "0.73 GiB"],
        f"select distinct rss from {PROCS} where name = 'memgrow.py' and {hms('ts')} = '19:26:45'",
    ),
    fact(
        "... in MiB",
        "743",
        ["743"],
        f"select distinct rss // 1048576 from {PROCS} where name = 'memgrow.py' "
        f"and {hms('ts')} = '19:26:45'",
    ),
    fact(
        "cpuhog.py's peak cpu, permille",
        "1786",
        ["1786", "178.6", "179"],
        f"select max(permille) from {PROCS} where name = 'cpuhog.py'",
    ),
    fact(
        "cpuhog.py's run, ms",
        "120055",
        ["120", "2 min"],
        f"select ms from {SH} where cmd like '%cpuhog.py'",
    ),
    fact(
        "cpuhog.py started",
        "19:28:58",
        ["19:28:5", "19:29", "7:29", "7:28"],
        f"select {hms('began')} from {SH} where cmd like '%cpuhog.py'",
    ),
    fact(
        "cpuhog.py ended (start + run)",
        "19:30:58",
        ["19:30:58", "19:31", "7:31"],
        f"select {hms('began + ms * interval 1 millisecond')} from {SH} "
        "where cmd like '%cpuhog.py'",
    ),
    fact(
        "cpuhog.py's exit seen",
        "19:31:05",
        ["19:31"],
        f"select {hms('ts')} from {LIFE} where pid = 18048 and event = 'exited'",
    ),
    fact(
        "exits of http.server (pid 16634) seen",
        "0",
        ["still running", "still up", "still listening", "never exited", "not exited", "no exit"],
        f"select count(*) from {LIFE} where pid = 16634 and event = 'exited'",
    ),
    fact(
        "yes ended (start + run)",
        "19:28:38",
        ["19:28:3", "19:28:4", "7:28"],
        f"select {hms('began + ms * interval 1 millisecond')} from {SH} "
        "where cmd = 'yes > /dev/null'",
    ),
    fact(
        "yes started",
        "19:24:38",
        ["19:24:38", "19:24:40"],
        f"select {hms('began')} from {SH} where cmd = 'yes > /dev/null'",
    ),
    fact(
        "yes's peak cpu, permille",
        "918",
        ["918", "91.8", "92"],
        f"select max(permille) from {PROCS} where name = 'yes'",
    ),
    fact(
        "top cpu process",
        "cpuhog.py",
        ["cpuhog.py"],
        f"select name from {PROCS} order by permille desc limit 1",
    ),
    fact(
        "top memory process",
        "memgrow.py",
        ["memgrow.py"],
        f"select name from {PROCS} order by rss desc limit 1",
    ),
    fact(
        "long-running or background commands",
        "python3 -m http.server 8765 --bind 127.0.0.1 > /dev/null 2>&1 & | yes > /dev/null | "
        "./tools/memgrow.py | ./tools/cpuhog.py",
        ["http.server", "memgrow.py", "cpuhog.py"],
        f"select string_agg(cmd, ' | ' order by began) from {SH} where ms > 60000 or cmd like '%&'",
    ),
    fact(
        "seen in top while away",
        "memgrow.py | yes",
        ["memgrow.py", "yes > /dev/null"],
        f"select string_agg(distinct name, ' | ' order by name) from {PROCS} "
        f"where ts between {at('19:25:28.8')} and {at('19:28:28.8')} "
        "and name in ('memgrow.py', 'yes')",
    ),
    fact(
        "first of yes and memgrow.py",
        "yes > /dev/null",
        ["yes > /dev/null"],
        f"select cmd from {SH} where cmd in ('yes > /dev/null', './tools/memgrow.py') "
        "order by began limit 1",
    ),
    fact(
        "peak load1 while cpuhog.py ran",
        "3.48",
        ["3.48"],
        f"select max(load1) from {LOAD} where ts between {at('19:28:58')} and {at('19:30:58')}",
    ),
    fact(
        "python 19042's peak cpu, permille",
        "999",
        ["19042"],
        f"select max(permille) from {PROCS} where pid = 19042",
    ),
    fact(
        "yes's mean cpu over its top readings, permille",
        "596",
        ["59.6", "60%"],
        f"select round(avg(permille))::int from {PROCS} where name = 'yes'",
    ),
    fact(
        "make build's total run time, ms",
        "85",
        ["85"],
        f"select sum(ms) from {SH} where cmd = 'make build'",
    ),
    # ---- apps, windows, away ----
    fact(
        "apps",
        "Firefox, Vim, XTerm",
        ["Firefox", "Vim", "XTerm"],
        f"select string_agg(distinct app, ', ' order by app) from {SPELLS} where not afk",
    ),
    fact("app count", "3", ["3"], f"select count(distinct app) from {SPELLS} where not afk"),
    fact(
        "Vim's focus, s",
        "146",
        ["146", "145.8", "145", "2 min 26", "2m26s", "2m 26s", "2:26", "2 min 25"],
        f"select round(sum(secs))::int from {SPELLS} where app = 'Vim'",
    ),
    fact(
        "XTerm's focus, s",
        "175",
        ["175", "175.3", "2 min 55", "2m55s", "2m 55s", "2:55"],
        f"select round(sum(secs))::int from {SPELLS} where app = 'XTerm'",
    ),
    fact(
        "Firefox's focus, s",
        "110",
        ["110", "109.8", "1 min 50", "1m50s", "1m 50s", "1:50"],
        f"select round(sum(secs))::int from {SPELLS} where app = 'Firefox'",
    ),
    fact(
        "most focused app",
        "XTerm",
        ["XTerm"],
        f"select app from {SPELLS} where not afk group by app order by sum(secs) desc limit 1",
    ),
    fact(
        "Stack Overflow in front",
        "19:29:10",
        ["19:29", "7:29"],
        f"select {hms('s')} from {SPELLS} where title like '%Stack Overflow%'",
    ),
    fact(
        "Stack Overflow page",
        "undefined reference to main",
        ["undefined reference to main"],
        f"select regexp_extract(title, '^(.*) - Stack Overflow', 1) from {SPELLS} "
        "where title like '%Stack Overflow%'",
    ),
    fact(
        "Firefox pages in order",
        "Directory listing for / - localhost:8765 | undefined reference to main - Stack "
        "Overflow | nerve - the event log",
        ["localhost:8765", "Directory listing", "Stack Overflow", "the event log"],
        f"select string_agg(replace(title, ' - Mozilla Firefox', ''), ' | ' order by s) "
        f"from {SPELLS} where app = 'Firefox' and title <> 'Mozilla Firefox'",
    ),
    fact(
        "app in front at half seven (19:30:30)",
        "XTerm",
        ["XTerm"],
        f"select app from {SPELLS} where s <= {at('19:30:30')} and e > {at('19:30:30')}",
    ),
    fact(
        "window at 19:32:30",
        "guide.md (~/work/project/docs) - VIM",
        ["guide.md"],
        f"select title from {SPELLS} where s <= {at('19:32:30')} and e > {at('19:32:30')}",
    ),
    fact(
        "files in Vim titles",
        "guide.md, main.c, util.c",
        ["main.c", "util.c", "guide.md"],
        f"select string_agg(distinct split_part(title, ' ', 1), ', ' order by "
        f"split_part(title, ' ', 1)) from {SPELLS} where app = 'Vim'",
    ),
    fact(
        "last window",
        "guide.md (~/work/project/docs) - VIM",
        ["guide.md"],
        f"select title from {SPELLS} order by s desc limit 1",
    ),
    fact(
        "directory listing in front",
        "19:24:30",
        ["19:24:2", "19:24:3", "7:24"],
        f"select {hms('s')} from {SPELLS} where title like 'Directory listing%'",
    ),
    fact(
        "nerve page in front",
        "19:31:20",
        ["19:31", "7:31"],
        f"select {hms('s')} from {SPELLS} where title like 'nerve - the event log%'",
    ),
    fact(
        "away spell, s", "184", ["184", "3 min"], f"select round(secs)::int from {SPELLS} where afk"
    ),
    fact(
        "away by the 'back' event, ms",
        "182475",
        ["182"],
        "select (data->>'away_ms')::bigint from events where kind = 'observation' "
        "and subject = 'focus' and data->>'event' = 'back'",
    ),
    fact("away from", "19:25:26", ["19:25", "7:25"], f"select {hms('s')} from {SPELLS} where afk"),
    fact(
        "'away' event logged",
        "19:26:30",
        ["19:26:30", "away"],
        f"select {hms('ts')} from events where kind = 'observation' and subject = 'focus' "
        "and data->>'event' = 'away'",
    ),
    fact("back at", "19:28:30", ["19:28", "7:28"], f"select {hms('e')} from {SPELLS} where afk"),
    fact(
        "away at 19:27",
        "True",
        ["away", "idle", "no input"],
        f"select bool_or(afk) from {SPELLS} where s <= {at('19:27:00')} and e > {at('19:27:00')}",
    ),
    fact(
        "Stack Overflow in front, s",
        "30",
        ["30 s", "30 sec", "30.0", "half a minute"],
        f"select round(secs)::int from {SPELLS} where title like '%Stack Overflow%'",
    ),
    # ---- files and checks ----
    fact(
        "files changed",
        "project/build/app, project/docs/guide.md, project/src/main.c, project/src/util.c",
        ["main.c", "util.c", "guide.md", "build/app"],
        f"select string_agg(distinct path, ', ' order by path) from {FILES}",
    ),
    fact(
        "files added",
        "project/build/app, project/src/util.c",
        ["util.c", "build/app"],
        f"select string_agg(path, ', ' order by path) from {FILES} where change = 'added'",
    ),
    fact("main.c changes", "2", ["2"], f"select count(*) from {FILES} where path like '%main.c'"),
    fact(
        "main.c last changed",
        "19:29:40",
        ["19:29", "7:29"],
        f"select {hms('max(ts)')} from {FILES} where path like '%main.c'",
    ),
    fact(
        "guide.md first changed",
        "19:25:00",
        ["19:25:00", "19:25", "7:25"],
        f"select {hms('min(ts)')} from {FILES} where path like '%guide.md'",
    ),
    fact(
        "build/app appeared",
        "19:30:00",
        ["19:30", "7:30"],
        f"select {hms('ts')} from {FILES} where path like '%build/app'",
    ),
    fact("file changes", "6", ["6"], f"select count(*) from {FILES}"),
    fact(
        "files changed 19:29-19:31",
        "project/build/app, project/src/main.c",
        ["main.c", "build/app"],
        f"select string_agg(path, ', ' order by path) from {FILES} "
        f"where ts between {at('19:29:00')} and {at('19:31:00')}",
    ),
    fact(
        "last file changed",
        "project/docs/guide.md",
        ["guide.md"],
        f"select path from {FILES} order by ts desc limit 1",
    ),
    fact(
        "checks on guide.md",
        "conflict-markers",
        ["conflict-markers"],
        f"select string_agg(distinct chk, ', ') from {VERDICTS}",
    ),
    fact(
        "their results and findings",
        "passed 0",
        ["passed", "0 findings", "no findings", "findings 0"],
        f"select string_agg(distinct result, ', ') || ' ' || sum(findings) from {VERDICTS}",
    ),
    fact("check runs", "2", ["2"], f"select count(*) from {VERDICTS}"),
    # ---- ports and network ----
    fact(
        "http.server's address",
        "127.0.0.1",
        ["127.0.0.1"],
        f"select addr from {NET} where event = 'port_opened' and port = 8765",
    ),
    fact(
        "port 8765 seen open",
        "19:25:05",
        ["19:25:05"],
        f"select {hms('ts')} from {NET} where event = 'port_opened' and port = 8765",
    ),
    fact(
        "http.server command",
        "19:24:18",
        ["19:24", "7:24"],
        f"select {hms('began')} from {SH} where cmd like '%http.server%'",
    ),
    fact(
        "port closed",
        "33605",
        ["33605"],
        f"select string_agg(port::varchar, ', ') from {NET} where event = 'port_closed'",
    ),
    fact("peak download, KiB/s", "66", ["66", "65.8"], f"select max(down_kib) from {NET}"),
    fact(
        "... in bytes/s",
        "67423.4",
        ["67423"],
        "select max((data->>'bytes_recv_per_s')::double) from events "
        "where kind = 'observation' and subject = 'network'",
    ),
    fact("network errors", "0", ["0"], f"select max(errors) from {NET}"),
    # ---- sense readings ----
    fact("peak load1", "16.24", ["16.24"], f"select max(load1) from {LOAD}"),
    fact(
        "peak load1 at",
        "19:23:35",
        ["19:23:35", "19:23", "7:23"],
        f"select {hms('ts')} from {LOAD} order by load1 desc limit 1",
    ),
    fact("first load1", "15.48", ["15.48"], f"select load1 from {LOAD} order by ts limit 1"),
    fact("lowest load1", "0.81", ["0.81"], f"select min(load1) from {LOAD}"),
    fact(
        "load1 nearest 19:30",
        "3.14",
        ["3.14"],
        f"select load1 from {LOAD} order by abs(epoch(ts) - epoch({at('19:30:00')})) limit 1",
    ),
    fact(
        "load1 just before 19:30",
        "3.48",
        ["3.48"],
        f"select load1 from {LOAD} where ts < {at('19:30:00')} order by ts desc limit 1",
    ),
    fact("lowest cpu percent", "12.4", ["12.4"], f"select min(pct) from {LOAD}"),
    fact("cores", "2", ["2"], f"select distinct cores from {LOAD}"),
    fact(
        "total memory, bytes",
        "25276190720",
        ["25276190720", "23.5", "24105", "25.3 GB"],
        f"select distinct total from {MEM}",
    ),
    fact("peak used memory, MiB", "2655", ["2655"], f"select max(used_mib) from {MEM}"),
    fact("lowest used memory, MiB", "686", ["686"], f"select min(used_mib) from {MEM}"),
    fact(
        "last used memory, MiB",
        "696",
        ["696"],
        f"select used_mib from {MEM} order by ts desc limit 1",
    ),
    fact(
        "sharpest drop in used memory",
        "19:28:35",
        ["19:28:35", "19:28", "7:28"],
        f"select {hms('ts')} from (select ts, used_mib - lag(used_mib) over (order by ts) as d "
        f"from {MEM}) order by d limit 1",
    ),
    fact("peak swap used, MiB", "0", ["0"], f"select max(swap_mib) from {MEM}"),
    fact(
        "last free disk, MiB",
        "75972",
        ["75972", "74.2", "79.7", "79.66"],
        f"select free_mib from {DISK} where free_mib is not null order by ts desc limit 1",
    ),
    fact(
        "disk used, percent",
        "26.9",
        ["26.9"],
        f"select string_agg(distinct pct::varchar, ',') from {DISK} where pct is not null",
    ),
    fact(
        "peak disk read, KiB/s",
        "1172",
        ["1172", "1.14 MiB", "1.1 MiB", "1.2 MB"],
        f"select max(read_kib) from {DISK}",
    ),
    fact(
        "mean load1 in the last five minutes (from 19:28:58.8)",
        "2.05",
        ["2.05"],
        f"select round(avg(load1), 2) from {LOAD} where ts >= {at('19:28:58.810')}",
    ),
    fact(
        "mean used memory 19:30-19:33, MiB",
        "698.5",
        ["698.5", "698", "699"],
        f"select avg(used_mib) from {MEM} where ts between {at('19:30:00')} and {at('19:33:00')}",
    ),
    # ---- attention ----
    fact("surfaced", "5", ["5"], f"select count(*) from {CHOSEN} where outcome = 'surface'"),
    fact("held", "11", ["11"], f"select count(*) from {CHOSEN} where outcome like 'hold:%'"),
    fact(
        "why held",
        "direction, transient",
        ["direction", "transient", "held", "hold"],
        f"select string_agg(distinct split_part(outcome, ':', 2), ', ' order by "
        f"split_part(outcome, ':', 2)) from {CHOSEN} where outcome like 'hold:%'",
    ),
    fact(
        "first surfaced",
        "19:26:30 away: no input for 64 s",
        ["19:26:30", "19:26", "7:26", "away", "no input for 64"],
        f"select {hms('ts')} || ' ' || why from {CHOSEN} where outcome = 'surface' "
        "order by ts limit 1",
    ),
    fact(
        "surfaced lines naming memgrow.py",
        "2",
        ["memgrow.py"],
        f"select count(*) from {CHOSEN} where outcome = 'surface' and why like '%memgrow.py%'",
    ),
    fact(
        "first surfaced about memory",
        "19:26:45",
        ["19:26:45", "19:26", "7:26"],
        f"select {hms('min(ts)')} from {CHOSEN} where outcome = 'surface' and probe like '%rss%'",
    ),
    fact(
        "decision on the 19:28:48 make build",
        "hold:transient",
        ["hold", "transient"],
        f"select string_agg(distinct outcome, ', ') from {CHOSEN} where why like '$ make build%'",
    ),
    fact(
        "desktop notifications failed",
        "5",
        ["failed"],
        "select count(*) from events where kind = 'attention.notify_failed'",
    ),
    fact(
        "... because",
        "dbus-launch",
        ["dbus-launch", "notify-send"],
        "select distinct regexp_extract(data->>'error', 'dbus-launch') from events "
        "where kind = 'attention.notify_failed'",
    ),
    fact(
        "held around half seven (19:29:30-19:31)",
        "value:disk.read_kib_per_s",
        ["disk"],
        f"select string_agg(probe, ', ') from {CHOSEN} where outcome like 'hold:%' "
        f"and ts between {at('19:29:30')} and {at('19:31:00')}",
    ),
    # ---- the device and the daemon ----
    fact("node", "vm", ["vm"], "select string_agg(distinct node, ', ') from events"),
    fact("nodes", "1", ["1"], "select count(distinct node) from events"),
    fact(
        "daemon pid",
        "14876",
        ["14876"],
        "select data->>'pid' from events where kind = 'daemon.started'",
    ),
    fact(
        "daemon started",
        "19:22:53",
        ["19:22:53", "7:22"],
        f"select {hms('ts')} from events where kind = 'daemon.started'",
    ),
    fact(
        "daemon stopped",
        "19:33:11",
        ["19:33:11", "7:33"],
        f"select {hms('ts')} from events where kind = 'daemon.stopped'",
    ),
    fact(
        "senses",
        "cpu, disk, files, focus, memory, network, power, processes, shell",
        ["focus", "shell", "processes"],
        "select array_to_string(json_transform(data->'senses', '[\"VARCHAR\"]'), ', ') "
        "from events where kind = 'config.loaded'",
    ),
]


class PlanFact(NamedTuple):
    """A figure the set accepts beside the log's, read from plan.json."""

    name: str
    value: str
    forms: tuple[str, ...]
    read: Callable[[dict[str, Any]], str]
    how: str


def _focus_seconds(plan: dict[str, Any], app: str) -> str:
    return str(round(sum(s["seconds"] for s in plan["focus"] if s["app"] == app), 1))


def _first_change(plan: dict[str, Any], path: str) -> str:
    return str(min(f["t"]["iso"] for f in plan["files"] if f["path"] == path))[11:19]


def _peak_mib(plan: dict[str, Any], name: str) -> str:
    return str(next(p["peak_rss_mib"] for p in plan["processes"] if p["name"] == name))


PLAN_FACTS = [
    PlanFact(
        "yes's mean cpu (plan), percent",
        "58",
        ("58",),
        lambda p: str(next(q["mean_cpu_percent"] for q in p["processes"] if q["name"] == "yes")),
        "processes[name=yes].mean_cpu_percent",
    ),
    PlanFact(
        "memgrow.py's peak (plan), MiB",
        "1544",
        ("1544",),
        lambda p: _peak_mib(p, "memgrow.py"),
        "processes[name=memgrow.py].peak_rss_mib",
    ),
    PlanFact(
        "XTerm's focus (plan, idle counted), s",
        "356.0",
        ("356", "5 min 56"),
        lambda p: _focus_seconds(p, "XTerm"),
        "sum of focus[app=XTerm].seconds",
    ),
    PlanFact(
        "Vim's focus (plan), s",
        "151.7",
        ("151.7", "152", "2 min 32"),
        lambda p: _focus_seconds(p, "Vim"),
        "sum of focus[app=Vim].seconds",
    ),
    PlanFact(
        "guide.md first changed (plan)",
        "19:24:58",
        ("19:24:58", "7:24"),
        lambda p: _first_change(p, "project/docs/guide.md"),
        "min of files[guide.md].t",
    ),
    PlanFact(
        "Firefox's focus (plan), s",
        "109.8",
        ("109.8",),
        lambda p: _focus_seconds(p, "Firefox"),
        "sum of focus[app=Firefox].seconds",
    ),
]

# What the `cannot` questions ask about, with the text that would carry it were it logged.
ABSENT = {
    "a temperature": ["temperature", "celsius"],
    "a fan": ["fan_", "rpm"],
    "the compiler's error (command output)": ["expected ';'"],
    "file contents (README.md)": ["a small c program"],
    "a GPU": ["gpu"],
    "Wi-Fi": ["wifi", "wi-fi", "ssid"],
    "an HTTP status line": ["http/1", "200 ok"],
    "mail or chat": ["mail", "slack"],
    "clicks and keystrokes": ["click", "keystroke"],
    "searches and videos": ["google", "youtube"],
    "a page's address": ["stackoverflow.com", "questions/"],
    "music": ["spotify"],
    "brightness, printing, weather": ["brightness", "printer", "weather"],
}


def scalar(ws: Any, query: str) -> str:
    """The query's one value as text (``None`` when it returned no row)."""
    rows = ws.sql(query).fetchall()
    return "None" if not rows else str(rows[0][0])


def earliest_and_latest(ws: Any) -> tuple[str, str]:
    rows = ws.sql(f"select {hms('min(ts)')}, {hms('max(ts)')} from events").fetchall()
    return str(rows[0][0]), str(rows[0][1])


def question_facts() -> list[tuple[str, str]]:
    """(question id, form) for every form of every fact in the question file."""
    data = YAML(typ="safe").load(QUESTIONS.read_text())
    out = []
    for item in data["questions"]:
        for fact_ in item.get("expect") or ():
            for form in fact_ if isinstance(fact_, list) else [fact_]:
                out.append((str(item["id"]), str(form)))
    return out


def main() -> int:
    bad = 0
    with tempfile.TemporaryDirectory(prefix="heldout5-") as tmp:
        day = unpack_day(Path(tmp))
        ws = nerve.open(day.root)
        first, last = earliest_and_latest(ws)
        print(f"log from {first} to {last} UTC; now is {day.plan['now']['iso']}\n")
        for f in FACTS:
            got = scalar(ws, f.query)
            ok = got == f.value
            bad += not ok
            print(f"{'ok   ' if ok else 'FALSE'} {f.name}: expected {f.value!r}, read {got!r}")
            print(f"      forms: {' / '.join(f.forms)}")
            print(f"      {f.query}")
        print("\nfrom the plan (tests/fixtures/day/plan.json):")
        for p in PLAN_FACTS:
            got = p.read(day.plan)
            ok = got == p.value
            bad += not ok
            print(
                f"{'ok   ' if ok else 'FALSE'} {p.name}: expected {p.value!r}, read {got!r}"
                f" ({p.how}); forms: {' / '.join(p.forms)}"
            )
        print("\nabsent from the log (what the cannot questions ask about):")
        for what, needles in ABSENT.items():
            where = " or ".join(
                "lower(coalesce(line, '') || coalesce(data::varchar, '')) like "
                f"'%{n.replace(chr(39), chr(39) * 2)}%'"
                for n in needles
            )
            query = f"select count(*) from events where {where}"
            got = scalar(ws, query)
            ok = got == "0"
            bad += not ok
            print(f"{'ok   ' if ok else 'FALSE'} no {what}: {got} events\n      {query}")
    forms = {form for f in FACTS for form in f.forms} | {
        form for p in PLAN_FACTS for form in p.forms
    }
    unprinted = [(q, form) for q, form in question_facts() if form not in forms]
    for q, form in unprinted:
        print(f"FALSE question {q}: fact {form!r} is not one this script prints")
    bad += len(unprinted)
    print(
        f"\n{len(FACTS) + len(PLAN_FACTS)} facts, {len(ABSENT)} absences: "
        f"{'all hold' if not bad else f'{bad} do not hold'}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
