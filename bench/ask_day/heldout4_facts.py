"""The facts the fourth held-out question set (``heldout4.yaml``) relies on, read from the log.

    .venv/bin/python bench/ask_day/heldout4_facts.py

The recorded day (``tests/fixtures/day/``) is unpacked into a temporary folder and every fact
is read with SQL through ``nerve.open(folder).sql(...)``: each line prints the fact's name, the
value the question set expects, the value the query read and ``ok`` or ``FALSE``; the query
itself follows, so a reader can run it again. A few figures the set accepts beside the log's
are read from the plan (``plan.json``) and printed last. Times are UTC (the bench's time zone).
The exit status is 1 when a fact no longer holds.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import nerve  # noqa: E402
from tests.helpers.day import unpack_day  # noqa: E402

# The person's commands as the shell hook recorded them (start time, command, exit, ms).
COMMANDS = """(select strftime(make_timestamp((data->>'timestamp')::bigint * 1000000), '%H:%M:%S')
    as start, data->>'command' as cmd, (data->>'exit')::int as exit,
    (data->>'duration_ms')::bigint as ms, data->>'cwd' as cwd, data->>'session' as session
    from events where kind = 'observation' and subject = 'shell')"""
# One reading per row: the sense, the time it was read, the reading's name and value.
READINGS = """(select subject as sense, ts, unnest(map_keys(r)) as name,
    unnest(map_values(r)) as value
    from (select subject, ts, json_transform(data->'readings', '"MAP(VARCHAR, DOUBLE)"') as r
          from events where kind = 'observation' and subject in
          ('cpu', 'memory', 'disk', 'network')))"""
CPU = """(select ts, (data->>'percent')::double as pct, (data->>'load1')::double as load1
    from events where kind = 'observation' and subject = 'cpu')"""
MEMORY = """(select ts, (data->'readings'->>'used_mib')::int as mib
    from events where kind = 'observation' and subject = 'memory')"""
# Every process the processes sense listed as a top user of CPU or memory, per reading.
TOP = """(select ts, p.name as name, p.pid as pid, p.cpu_permille as cpu, p.rss_bytes as rss
    from (select ts, unnest(json_transform(list_concat(
            json_extract(data, '$.cpu[*]'), json_extract(data, '$.memory[*]')),
          '[{"name": "VARCHAR", "pid": "BIGINT", "cpu_permille": "BIGINT",
             "rss_bytes": "BIGINT"}]')) as p
          from events where kind = 'observation' and subject = 'processes'
          and data->>'event' = 'top'))"""
FOCUS = "(select * from focus_spells)"
DECISIONS = """(select strftime(ts, '%H:%M:%S') as t, subject as outcome,
    data->>'probe' as probe, data->>'source_line' as why
    from events where kind = 'attention.decision')"""


def hhmmss(column: str) -> str:
    """SQL for a timestamp column as HH:MM:SS."""
    return f"strftime({column}, '%H:%M:%S')"


class Fact(NamedTuple):
    """One fact: its name, the value the question set expects, and the query that reads it."""

    name: str
    expected: str
    sql: str


FACTS: tuple[Fact, ...] = (
    # the log's span and the daemon
    Fact(
        "daemon started",
        "19:22:53",
        f"select {hhmmss('ts')} from events where kind = 'daemon.started'",
    ),
    Fact("daemon pid", "14876", "select data->>'pid' from events where kind = 'daemon.started'"),
    Fact(
        "daemon stopped",
        "19:33:11",
        f"select {hhmmss('ts')} from events where kind = 'daemon.stopped'",
    ),
    Fact("first event", "19:22:53", f"select {hhmmss('min(ts)')} from events"),
    Fact("last event", "19:33:11", f"select {hhmmss('max(ts)')} from events"),
    Fact(
        "senses",
        "cpu,disk,files,focus,memory,network,power,processes,shell",
        "select string_agg(s, ',' order by s) from (select unnest(from_json("
        "data->'senses', '[\"VARCHAR\"]')) as s from events where kind = 'config.loaded')",
    ),
    Fact(
        "days in the log",
        "2026-12-05",
        "select string_agg(distinct strftime(ts, '%Y-%m-%d'), ',') from events",
    ),
    # commands
    Fact("commands", "28", f"select count(*) from {COMMANDS}"),
    Fact("distinct commands", "22", f"select count(distinct cmd) from {COMMANDS}"),
    Fact("failed commands", "6", f"select count(*) from {COMMANDS} where exit <> 0"),
    Fact(
        "failures",
        "make build=2 x4, false=1 x1, yes > /dev/null=130 x1",
        f"select string_agg(cmd || '=' || exit || ' x' || n, ', ' order by n desc, cmd) "
        f"from (select cmd, exit, count(*) n from {COMMANDS} where exit <> 0 group by all)",
    ),
    Fact(
        "failure times",
        "19:23:38,19:23:50,19:23:58,19:24:38,19:24:48,19:28:48",
        f"select string_agg(start, ',' order by start) from {COMMANDS} where exit <> 0",
    ),
    Fact("make build runs", "5", f"select count(*) from {COMMANDS} where cmd = 'make build'"),
    Fact(
        "make build passed",
        "19:29:58",
        f"select string_agg(start, ',') from {COMMANDS} where cmd = 'make build' and exit = 0",
    ),
    Fact(
        "first make build",
        "19:23:38",
        f"select min(start) from {COMMANDS} where cmd = 'make build'",
    ),
    Fact(
        "last failed make build",
        "19:28:48",
        f"select max(start) from {COMMANDS} where cmd = 'make build' and exit <> 0",
    ),
    Fact(
        "make test",
        "19:30:28 exit 0",
        f"select start || ' exit ' || exit from {COMMANDS} where cmd = 'make test'",
    ),
    Fact(
        "make clean",
        "19:28:48 exit 0",
        f"select start || ' exit ' || exit from {COMMANDS} where cmd = 'make clean'",
    ),
    Fact(
        "false",
        "19:23:58 exit 1",
        f"select start || ' exit ' || exit from {COMMANDS} where cmd = 'false'",
    ),
    Fact(
        "yes",
        "19:24:38 exit 130 240000 ms",
        f"select start || ' exit ' || exit || ' ' || ms || ' ms' from {COMMANDS} "
        "where cmd like 'yes%'",
    ),
    Fact(
        "memgrow.py",
        "19:25:18 exit 0 193162 ms",
        f"select start || ' exit ' || exit || ' ' || ms || ' ms' from {COMMANDS} "
        "where cmd like '%memgrow%'",
    ),
    Fact(
        "cpuhog.py",
        "19:28:58 exit 0 120055 ms",
        f"select start || ' exit ' || exit || ' ' || ms || ' ms' from {COMMANDS} "
        "where cmd like '%cpuhog%'",
    ),
    Fact("longest command", "yes > /dev/null", f"select arg_max(cmd, ms) from {COMMANDS}"),
    Fact(
        "http.server command",
        "19:24:18 exit 0",
        f"select start || ' exit ' || exit from {COMMANDS} where cmd like '%http.server%'",
    ),
    Fact(
        "curl",
        "19:32:38 exit 0",
        f"select start || ' exit ' || exit from {COMMANDS} where cmd like 'curl%'",
    ),
    Fact(
        "last command",
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/",
        f"select arg_max(cmd, start) from {COMMANDS}",
    ),
    Fact(
        "first commands",
        "cd work/project,ls,cat README.md",
        f"select string_agg(cmd, ',' order by start, ms) from {COMMANDS} "
        "where start = (select min(start) from " + COMMANDS + ")",
    ),
    Fact(
        "commands after 19:31",
        "sleep 3,date -u,uptime,curl",
        "select string_agg(case when cmd like 'curl%' then 'curl' else cmd end, ',' "
        f"order by start, cmd) from {COMMANDS} where start >= '19:31:00'",
    ),
    Fact(
        "commands in the last 3 minutes (since 19:30:58)",
        "4",
        f"select count(*) from {COMMANDS} where start >= '19:30:58'",
    ),
    Fact(
        "commands between 19:24 and 19:25",
        "11",
        f"select count(*) from {COMMANDS} where start >= '19:24:00' and start < '19:25:00'",
    ),
    Fact(
        "commands failed after 19:29",
        "0",
        f"select count(*) from {COMMANDS} where start > '19:29:00' and exit <> 0",
    ),
    Fact(
        "commands failed since the passing build (19:29:58)",
        "0",
        f"select count(*) from {COMMANDS} where start >= '19:29:58' and exit <> 0",
    ),
    Fact(
        "commands while away (19:25:26-19:28:30)",
        "0",
        f"select count(*) from {COMMANDS} where start > '19:25:26' and start < '19:28:30'",
    ),
    Fact("cd commands", "6", f"select count(*) from {COMMANDS} where cmd like 'cd %'"),
    Fact("shell sessions", "3", f"select count(distinct session) from {COMMANDS}"),
    Fact(
        "working folders",
        "/tmp/nerve-day/home/work/project,/tmp/nerve-day/home/work/project/"
        "docs,/tmp/nerve-day/home/work/project/src",
        f"select string_agg(distinct cwd, ',' order by cwd) from {COMMANDS}",
    ),
    Fact(
        "commands in docs",
        "cat guide.md,cd ../docs",
        f"select string_agg(cmd, ',' order by cmd) from {COMMANDS} where cwd like '%/docs'",
    ),
    Fact(
        "command output is not in the log",
        "0",
        "select count(*) from events, (values ('%tests passed%'), ('%expected '';''%'), "
        "('%A small C program%'), ('%Makefile  README%'), ('%load average:%'), "
        "('%How to build the app%')) as output(text) "
        "where cast(data as varchar) ilike output.text or line ilike output.text",
    ),
    # processes
    Fact(
        "memgrow.py peak rss (bytes, MiB)",
        "1585336320 1512",
        f"select max(rss) || ' ' || round(max(rss) / 1048576)::int from {TOP} "
        "where name = 'memgrow.py'",
    ),
    Fact(
        "memgrow.py peak at",
        "19:28:15",
        f"select {hhmmss('arg_max(ts, rss)')} from {TOP} where name = 'memgrow.py'",
    ),
    Fact("memgrow.py pid", "17085", f"select distinct pid from {TOP} where name = 'memgrow.py'"),
    Fact("top memory process", "memgrow.py", f"select arg_max(name, rss) from {TOP}"),
    Fact(
        "top cpu process",
        "cpuhog.py 1786",
        f"select arg_max(name, cpu) || ' ' || max(cpu) from {TOP}",
    ),
    Fact(
        "cpuhog.py peak at",
        "19:30:05",
        f"select {hhmmss('arg_max(ts, cpu)')} from {TOP} where name = 'cpuhog.py'",
    ),
    Fact("cpuhog.py pid", "18048", f"select distinct pid from {TOP} where name = 'cpuhog.py'"),
    Fact("yes peak cpu permille", "918", f"select max(cpu) from {TOP} where name = 'yes'"),
    Fact("yes pid", "16845", f"select distinct pid from {TOP} where name = 'yes'"),
    Fact("yes rss bytes", "1257472", f"select max(rss) from {TOP} where name = 'yes'"),
    Fact(
        "exits seen",
        "cpuhog.py 18048 19:31:05,yes 16845 19:28:45",
        f"select string_agg(data->>'name' || ' ' || (data->>'pid') || ' ' || {hhmmss('ts')}, "
        "',' order by data->>'name') from events where subject = 'processes' "
        "and data->>'event' = 'exited' and data->>'name' in ('yes', 'cpuhog.py', "
        "'memgrow.py', 'python3')",
    ),
    Fact(
        "http.server started",
        "16634 python3 19:24:55",
        f"select (data->>'pid') || ' ' || (data->>'name') || ' ' || {hhmmss('ts')} "
        "from events where subject = 'processes' and data->>'event' = 'started' "
        "and data->>'cmdline' like '%http.server%'",
    ),
    Fact(
        "http.server never exited",
        "0",
        "select count(*) from events where subject = "
        "'processes' and data->>'event' = 'exited' and data->>'pid' = '16634'",
    ),
    Fact(
        "users of the processes started or exited",
        "root",
        "select string_agg(distinct data->>'user', ',') from events "
        "where subject = 'processes' and data->>'event' in ('started', 'exited')",
    ),
    # ports
    Fact(
        "port opened",
        "8765 127.0.0.1 python3 16634 root 19:25:05",
        f"select (data->>'port') || ' ' || (data->>'address') || ' ' || (data->>'name') || ' ' "
        f"|| (data->>'pid') || ' ' || (data->>'user') || ' ' || {hhmmss('ts')} from events "
        "where data->>'event' = 'port_opened'",
    ),
    Fact(
        "port closed",
        "33605 nats-server 13469 root 19:23:05",
        f"select (data->>'port') || ' ' || (data->>'name') || ' ' || (data->>'pid') || ' ' "
        f"|| (data->>'user') || ' ' || {hhmmss('ts')} from events "
        "where data->>'event' = 'port_closed'",
    ),
    # focus, apps, windows
    Fact(
        "seconds per app",
        "XTerm 175, Vim 146, Firefox 110",
        f"select string_agg(app || ' ' || s, ', ' order by s desc) from (select app, "
        f"round(sum(end_ns - start_ns) / 1e9)::int s from {FOCUS} where not afk group by app)",
    ),
    Fact("distinct apps", "3", f"select count(distinct app) from {FOCUS} where not afk"),
    Fact("switches to Firefox", "4", f"select count(*) from {FOCUS} where app = 'Firefox'"),
    Fact(
        "firefox titles",
        "Mozilla Firefox,Directory listing for / - localhost:8765 - Mozilla "
        "Firefox,undefined reference to main - Stack Overflow - Mozilla Firefox,nerve - the "
        "event log - Mozilla Firefox",
        f"select string_agg(title, ',' order by start_ns) from {FOCUS} where app = 'Firefox'",
    ),
    Fact(
        "Stack Overflow focus",
        "19:29:10 30 s",
        f"select {hhmmss('make_timestamp(start_ns // 1000)')} || ' ' || "
        f"round((end_ns - start_ns) / 1e9)::int || ' s' from {FOCUS} "
        "where title like '%Stack Overflow%'",
    ),
    Fact(
        "event log page focus",
        "19:31:20 40 s",
        f"select {hhmmss('make_timestamp(start_ns // 1000)')} || ' ' || "
        f"round((end_ns - start_ns) / 1e9)::int || ' s' from {FOCUS} "
        "where title like 'nerve - the event log%'",
    ),
    Fact(
        "localhost page focus",
        "19:24:30 20 s",
        f"select {hhmmss('make_timestamp(start_ns // 1000)')} || ' ' || "
        f"round((end_ns - start_ns) / 1e9)::int || ' s' from {FOCUS} "
        "where title like 'Directory listing%'",
    ),
    Fact(
        "util.c focus",
        "19:24:05 15 s",
        f"select {hhmmss('make_timestamp(start_ns // 1000)')} || ' ' || "
        f"round((end_ns - start_ns) / 1e9)::int || ' s' from {FOCUS} "
        "where title like 'util.c%'",
    ),
    Fact(
        "guide.md focus (the last)",
        "19:32:00 71 s",
        f"select {hhmmss('make_timestamp(start_ns // 1000)')} || ' ' || "
        f"round((end_ns - start_ns) / 1e9)::int || ' s' from {FOCUS} "
        "where title like 'guide.md%'",
    ),
    Fact(
        "window focused at 19:30:30",
        "XTerm make build - ~/work/project",
        f"select app || ' ' || title from {FOCUS} where start_ns <= 1796499030000000000 "
        "and end_ns > 1796499030000000000",
    ),
    Fact(
        "window focused at 19:23:30",
        "Vim main.c (~/work/project/src) - VIM",
        f"select app || ' ' || title from {FOCUS} where start_ns <= 1796498610000000000 "
        "and end_ns > 1796498610000000000",
    ),
    Fact(
        "window before Stack Overflow",
        "XTerm",
        f"select app from {FOCUS} where end_ns = (select start_ns from {FOCUS} "
        "where title like '%Stack Overflow%')",
    ),
    Fact(
        "window after the event log page",
        "Vim guide.md (~/work/project/docs) - VIM",
        f"select app || ' ' || title from {FOCUS} where start_ns = (select end_ns from {FOCUS} "
        "where title like 'nerve - the event log%')",
    ),
    Fact(
        "away",
        "19:25:26 to 19:28:30, 182475 ms",
        f"select {hhmmss('make_timestamp(start_ns // 1000)')} || ' to ' || "
        f"{hhmmss('make_timestamp(end_ns // 1000)')} || ', ' || "
        "(select data->>'away_ms' from events where data->>'event' = 'back') || ' ms' "
        f"from {FOCUS} where afk",
    ),
    Fact(
        "last window",
        "Vim guide.md (~/work/project/docs) - VIM",
        f"select arg_max(app || ' ' || title, start_ns) from {FOCUS}",
    ),
    # files
    Fact(
        "file changes",
        "6",
        "select count(*) from events where kind = 'observation' and subject = 'files'",
    ),
    Fact(
        "file changes, in order",
        "19:23:27 modified project/src/main.c,19:24:05 added "
        "project/src/util.c,19:24:59 modified project/docs/guide.md,19:29:39 modified "
        "project/src/main.c,19:29:59 added project/build/app,19:31:59 modified "
        "project/docs/guide.md",
        f"select string_agg({hhmmss('make_timestamp(valid_time_ns // 1000)')} || ' ' || "
        "(data->>'change') || ' ' || (data->>'path'), ',' order by valid_time_ns) "
        "from events where kind = 'observation' and subject = 'files'",
    ),
    Fact(
        "distinct files changed",
        "4",
        "select count(distinct data->>'path') from events "
        "where kind = 'observation' and subject = 'files'",
    ),
    Fact(
        "files deleted",
        "0",
        "select count(*) from events where kind = 'observation' "
        "and subject = 'files' and data->>'change' not in ('modified', 'added')",
    ),
    Fact(
        "checks on guide.md",
        "conflict-markers passed,conflict-markers passed",
        "select string_agg((data->>'check') || ' ' || (data->>'result'), ',') from events "
        "where kind = 'check.verdict'",
    ),
    # cpu and load
    Fact("load1 first", "15.48", f"select arg_min(load1, ts) from {CPU}"),
    Fact(
        "load1 peak",
        "16.24 19:23:35",
        f"select max(load1) || ' ' || {hhmmss('arg_max(ts, load1)')} from {CPU}",
    ),
    Fact(
        "load1 lowest",
        "0.81 19:32:40",
        f"select min(load1) || ' ' || {hhmmss('arg_min(ts, load1)')} from {CPU}",
    ),
    Fact("load1 last", "0.84", f"select arg_max(load1, ts) from {CPU}"),
    Fact(
        "load5, load15 last",
        "4.5 6.49",
        "select (data->>'load5') || ' ' || "
        "(data->>'load15') from events where kind = 'observation' and subject = 'cpu' "
        "order by ts desc limit 1",
    ),
    Fact(
        "cores",
        "2",
        "select distinct data->>'cores_logical' from events "
        "where kind = 'observation' and subject = 'cpu'",
    ),
    Fact(
        "cpu % lowest",
        "12.4 19:31:30",
        f"select min(pct) || ' ' || {hhmmss('arg_min(ts, pct)')} from {CPU}",
    ),
    Fact(
        "cpu % median 19:20-19:30",
        "100.0",
        f"select median(pct) from {CPU} where ts < '2026-12-05 19:30'",
    ),
    Fact(
        "cpu % median after 19:31",
        "15.1",
        f"select round(median(pct), 1) from {CPU} where ts >= '2026-12-05 19:31'",
    ),
    Fact(
        "cpu % at or after 19:31:05 never above",
        "24.2",
        f"select max(pct) from {CPU} where ts >= '2026-12-05 19:31:05'",
    ),
    Fact(
        "load1 range while cpuhog.py ran (19:28:58-19:30:58)",
        "2.81..3.48",
        f"select min(load1) || '..' || max(load1) from {CPU} "
        "where ts between '2026-12-05 19:28:58' and '2026-12-05 19:30:58'",
    ),
    # memory
    Fact("memory used first", "2219", f"select arg_min(mib, ts) from {MEMORY}"),
    Fact(
        "memory used peak",
        "2655 19:23:25",
        f"select max(mib) || ' ' || {hhmmss('arg_max(ts, mib)')} from {MEMORY}",
    ),
    Fact("memory used mean", "1784", f"select round(avg(mib))::int from {MEMORY}"),
    Fact(
        "memory used lowest",
        "686 19:29:45",
        f"select min(mib) || ' ' || {hhmmss('arg_min(ts, mib)')} from {MEMORY}",
    ),
    Fact("memory used last", "696", f"select arg_max(mib, ts) from {MEMORY}"),
    Fact(
        "memory peak while memgrow.py ran",
        "2317",
        f"select max(mib) from {MEMORY} where ts between '2026-12-05 19:25:18' "
        "and '2026-12-05 19:28:32'",
    ),
    Fact(
        "memory total (GiB)",
        "23.5",
        "select distinct round((data->>'total_bytes')::bigint"
        " / 2^30, 1) from events where kind = 'observation' and subject = 'memory'",
    ),
    Fact(
        "swap used, max",
        "0",
        f"select max(value)::int from {READINGS} where name = 'swap_used_mib'",
    ),
    Fact(
        "memory pressure ever",
        "false",
        "select lower(bool_or((data->>'pressure')::bool)::varchar) from events "
        "where kind = 'observation' and subject = 'memory'",
    ),
    # disk and network
    Fact(
        "disk free (GiB), first and last",
        "74.2 74.2",
        "select string_agg(round((data->>'free_bytes')::bigint / 2^30, 1)::varchar, ' ' "
        "order by ts) from (select * from events where kind = 'observation' and subject = "
        "'disk' and data->>'free_bytes' is not null order by ts) where ts in ((select min(ts) "
        "from events where data->>'free_bytes' is not null), (select max(ts) from events "
        "where data->>'free_bytes' is not null))",
    ),
    Fact(
        "disk used %",
        "26.9",
        "select distinct data->>'percent' from events "
        "where kind = 'observation' and subject = 'disk' and data->>'free_bytes' is not null",
    ),
    Fact(
        "disk read peak KiB/s",
        "1172 19:29:55",
        f"select max(value)::int || ' ' || {hhmmss('arg_max(ts, value)')} from {READINGS} "
        "where name = 'read_kib_per_s'",
    ),
    Fact(
        "disk write peak KiB/s",
        "1682 19:24:55",
        f"select max(value)::int || ' ' || {hhmmss('arg_max(ts, value)')} from {READINGS} "
        "where name = 'write_kib_per_s'",
    ),
    Fact(
        "network down peak KiB/s",
        "66 19:23:25",
        f"select max(value)::int || ' ' || {hhmmss('arg_max(ts, value)')} from {READINGS} "
        "where name = 'down_kib_per_s'",
    ),
    Fact("network errors", "0", f"select max(value)::int from {READINGS} where name = 'errors'"),
    Fact(
        "network traffic after 19:24",
        "0",
        f"select max(value)::int from {READINGS} "
        "where name in ('down_kib_per_s', 'up_kib_per_s') and ts > '2026-12-05 19:24'",
    ),
    # energy (the power sense: estimated, no counter, no battery)
    Fact(
        "energy estimated, no counter",
        "5 Estimator no powercap counter",
        "select count(*) || ' ' || any_value(data->>'provenance') || ' ' || "
        "any_value(data->>'reason') from events where kind = 'observation' "
        "and subject = 'power'",
    ),
    # attention
    Fact(
        "decisions",
        "surface 5, hold:direction 6, hold:transient 5",
        f"select string_agg(outcome || ' ' || n, ', ' order by outcome = 'surface' desc, "
        f"outcome) from (select outcome, count(*) n from {DECISIONS} group by all)",
    ),
    Fact(
        "surfaced",
        "19:26:30 away: no input for 64 s | 19:26:45 top cpu: yes 55% [16845], "
        "python 49% [19042], [pytest-xdist r 30% [27321]; memory: memgrow.py 743 MiB [17085], "
        "[pytest-xdist r 321 MiB [27333] | 19:27:05 top cpu: python 52% [19042], yes 51% "
        "[16845], [pytest-xdist r 33% [27321]; memory: memgrow.py 903 MiB [17085], "
        "[pytest-xdist r 321 MiB [27333] | 19:27:35 net all down 0.0 KiB/s up 0.0 KiB/s | "
        "19:28:30 back after 182 s away",
        f"select string_agg(t || ' ' || why, ' | ' order by t) from {DECISIONS} "
        "where outcome = 'surface'",
    ),
    Fact(
        "surfaced probes",
        "novelty,value:processes.top_rss_bytes,value:processes.top_cpu_permille,novelty,novelty",
        f"select string_agg(probe, ',' order by t) from {DECISIONS} where outcome = 'surface'",
    ),
    Fact(
        "first decision",
        "19:24:00 hold:direction cpu 100.0% load1 14.32 (2 cores)",
        f"select t || ' ' || outcome || ' ' || why from {DECISIONS} order by t limit 1",
    ),
    Fact(
        "last decision",
        "19:33:05 hold:direction mem 2.9% (0.7 of 23.5 GiB) swap 0.0%",
        f"select t || ' ' || outcome || ' ' || why from {DECISIONS} order by t desc limit 1",
    ),
    Fact("decisions after 19:29", "2", f"select count(*) from {DECISIONS} where t > '19:29:00'"),
    Fact(
        "surfaced after 19:29",
        "0",
        f"select count(*) from {DECISIONS} where t > '19:29:00' and outcome = 'surface'",
    ),
    Fact(
        "the held make build",
        "19:28:50 hold:transient $ make build [exit 2]",
        f"select distinct t || ' ' || outcome || ' ' || why from {DECISIONS} "
        "where why like '%make build%'",
    ),
    Fact(
        "desktop notifications that failed",
        "5 dbus-launch",
        "select count(*) || ' ' || case when bool_and(data->>'error' like '%dbus-launch%') "
        "then 'dbus-launch' else 'other errors' end from events "
        "where kind = 'attention.notify_failed'",
    ),
    Fact(
        "held decisions",
        "11",
        f"select count(*) from {DECISIONS} where outcome like 'hold%'",
    ),
    # more readings the questions name
    Fact(
        "commands over a minute",
        "./tools/cpuhog.py,./tools/memgrow.py,yes > /dev/null",
        f"select string_agg(cmd, ',' order by cmd) from {COMMANDS} where ms > 60000",
    ),
    Fact(
        "commands in the last 3 minutes (since 19:30:58)",
        "sleep 3,date -u,uptime,curl",
        "select string_agg(case when cmd like 'curl%' then 'curl' else cmd end, ',' "
        f"order by start, cmd) from {COMMANDS} where start >= '19:30:58'",
    ),
    Fact(
        "commands in the minute before memgrow.py (19:24:18-19:25:18)",
        "cat guide.md,cd ..,cd ../docs,cd src,cd work/project,cd work/project,echo $!,ls -l,"
        "make build,python3 -m http.server 8765 --bind 127.0.0.1 > /dev/null 2>&1 &,"
        "yes > /dev/null",
        f"select string_agg(cmd, ',' order by cmd) from {COMMANDS} "
        "where start >= '19:24:18' and start < '19:25:18'",
    ),
    Fact(
        "the command after the last failed build (log order)",
        "make clean",
        "select data->>'command' from events where kind = 'observation' and subject = 'shell' "
        "and (physical_ns, logical) > (select (physical_ns, logical) from events "
        "where data->>'command' = 'make build' and data->>'exit' = '2' "
        "order by physical_ns desc, logical desc limit 1) order by physical_ns, logical limit 1",
    ),
    Fact(
        "session length (first to last event, s)",
        "618",
        "select round(epoch(max(ts)) - epoch(min(ts)))::int from events",
    ),
    Fact(
        "docs file changes",
        "2",
        "select count(*) from events where kind = 'observation' and subject = 'files' "
        "and data->>'path' like 'project/docs/%'",
    ),
    Fact(
        "windows focused while cpuhog.py ran (19:28:58-19:30:58)",
        "Firefox undefined reference to main - Stack Overflow - Mozilla Firefox,"
        "Vim main.c (~/work/project/src) - VIM,XTerm make build - ~/work/project",
        f"select string_agg(app || ' ' || title, ',' order by start_ns) from {FOCUS} "
        "where start_ns >= 1796498938000000000 and start_ns < 1796499058000000000",
    ),
    Fact(
        "cpu % while yes ran (19:24:38-19:28:38), mean",
        "99.975",
        f"select avg(pct) from {CPU} where ts between '2026-12-05 19:24:38' "
        "and '2026-12-05 19:28:38'",
    ),
    Fact(
        "cpu % after cpuhog.py ended (the hook's start + duration, 19:30:58)",
        "68.7,14.0,15.5,12.4,18.4,14.9,13.5,13.4,24.2,15.3",
        f"select string_agg(pct::varchar, ',' order by ts) from {CPU} "
        "where ts > (select make_timestamp(((data->>'timestamp')::bigint * 1000 "
        "+ (data->>'duration_ms')::bigint) * 1000) from events "
        "where data->>'command' = './tools/cpuhog.py')",
    ),
    Fact(
        "cpu % p95",
        "100.0",
        f"select quantile_cont(pct, 0.95) from {CPU}",
    ),
    Fact(
        "load1 mean while cpuhog.py ran",
        "3.2",
        f"select round(avg(load1), 2) from {CPU} "
        "where ts between '2026-12-05 19:28:58' and '2026-12-05 19:30:58'",
    ),
    Fact(
        "load1 mean in the last 10 minutes (since 19:23:58.81)",
        "4.72",
        f"select round(avg(load1), 2) from {CPU} where ts >= '2026-12-05 19:23:58.81'",
    ),
    Fact(
        "load1 readings 19:26:30-19:28:00",
        "6.15,5.47",
        f"select string_agg(load1::varchar, ',' order by ts) from {CPU} "
        "where ts between '2026-12-05 19:26:30' and '2026-12-05 19:28:00'",
    ),
    Fact(
        "memory used in the minute 19:27",
        "2137,2311,2059,2148",
        f"select string_agg(mib::varchar, ',' order by ts) from {MEMORY} "
        "where ts >= '2026-12-05 19:27' and ts < '2026-12-05 19:28'",
    ),
    Fact(
        "disk free MiB, first and last",
        "75984,75972",
        f"select string_agg(value::int::varchar, ',' order by ts) from {READINGS} "
        "where name = 'free_mib:/' and ts in ((select min(ts) from events "
        "where data->>'free_bytes' is not null), (select max(ts) from events "
        "where data->>'free_bytes' is not null))",
    ),
    Fact(
        "yes cpu permille, mean over the readings",
        "596",
        f"select round(avg(cpu))::int from (select distinct ts, cpu from {TOP} "
        "where name = 'yes' and cpu is not null)",
    ),
    Fact(
        "power: no battery, no thermal zones",
        "no battery {}",
        "select (state->>'battery') || ' ' || (state->'zones')::varchar from sense_state "
        "where sense = 'power' order by physical_ns desc limit 1",
    ),
)


def plan_facts(plan: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The plan's own figures the set accepts beside the log's: (name, expected, read)."""
    seconds: dict[str, float] = {}
    for spell in plan["focus"]:
        seconds[spell["app"]] = seconds.get(spell["app"], 0.0) + spell["seconds"]
    memgrow = next(p for p in plan["processes"] if p["name"] == "memgrow.py")
    server = next(p for p in plan["processes"] if p["name"] == "http.server")
    idle = plan["idle"][0]
    return [
        (
            "plan: seconds per app",
            "XTerm 356, Vim 152, Firefox 110",
            ", ".join(
                f"{app} {round(s)}" for app, s in sorted(seconds.items(), key=lambda x: -x[1])
            ),
        ),
        ("plan: memgrow.py peak rss MiB", "1544", str(memgrow["peak_rss_mib"])),
        (
            "plan: away",
            "19:25:28 to 19:28:28",
            f"{idle['last_input']['iso'][11:19]} to {idle['input_again']['iso'][11:19]}",
        ),
        ("plan: http.server still running at the end", "True", str(server["still_running_at_end"])),
    ]


def show(name: str, expected: str, got: str) -> bool:
    """Print a fact and, when it does not hold, what was read; whether it holds."""
    holds = got == expected
    print(f"{'ok   ' if holds else 'FALSE'} {name}: {expected}")
    if not holds:
        print(f"      read: {got}")
    return holds


def read(ws: Any, sql: str) -> str:
    """The first column of the first row ``sql`` returns, as text ('' when none)."""
    rows = ws.sql(sql).fetchall()
    return "" if not rows or rows[0][0] is None else str(rows[0][0])


def check(ws: Any, fact: Fact) -> bool:
    """Print ``fact``, the value its query read and whether they agree; whether they do."""
    holds = show(fact.name, fact.expected, read(ws, fact.sql))
    print(f"      sql: {' '.join(fact.sql.split())}")
    return holds


def main() -> int:
    """Check every fact against the unpacked day; 0 when all hold, else 1."""
    with tempfile.TemporaryDirectory() as tmp:
        day = unpack_day(Path(tmp))
        ws = nerve.open(day.root)
        results = [check(ws, fact) for fact in FACTS]
        results += [show(*fact) for fact in plan_facts(day.plan)]
    print(f"{sum(results)} of {len(results)} facts hold")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
