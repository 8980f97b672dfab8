"""The facts ``heldout3.yaml`` relies on, each read from the recorded day's log with SQL.

    .venv/bin/python bench/ask_day/heldout3_facts.py

The recorded day (``tests/fixtures/day/``) is unpacked into a temporary folder and opened with
``nerve.open``; every fact below is one SQL query over its events and projections. Each line
printed is the fact's name, the value the query gives, and ``ok`` when that is the value the
question set was written from (``DIFFERS`` and the value relied on when not). Times are UTC,
as the log stores them; the questions' "now" is the plan's, 2026-12-05 19:33:58 UTC. The exit
status is 1 when a fact differs.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import nerve  # noqa: E402
from tests.helpers.day import unpack_day  # noqa: E402

DAY = "2026-12-05"
NOW = "19:33:58"
AWAY, BACK = "19:25:26", "19:28:30"
SEEN_AT = ("19:24:35", "19:30:30", "19:31:30")  # clock times asked about as "which window"


def at(clock: str) -> str:
    """A clock time of the recorded day as an SQL timestamp (UTC)."""
    return f"TIMESTAMP '{DAY} {clock}'"


def hms(column: str) -> str:
    """SQL that shows a timestamp column as HH:MM:SS."""
    return f"strftime({column}, '%H:%M:%S')"


VALID = "make_timestamp(valid_time_ns // 1000)"
COMMANDS = f"""(select {VALID} t, data->>'command' cmd, (data->>'exit')::int ex,
    (data->>'duration_ms')::bigint ms, data->>'cwd' cwd, data->>'session' sess
    from events where source_name = 'shell' and kind = 'observation')"""
TOP = """(select ts, e.value->>'name' name, (e.value->>'pid')::int pid,
    (e.value->>'cpu_permille')::int cpu, (e.value->>'rss_bytes')::bigint rss
    from events, json_each(data->'{list}') e
    where source_name = 'process_tree' and data->>'event' = 'top')"""
PROCS = f"({TOP.format(list='cpu')} union all {TOP.format(list='memory')})"
CPU = f"""(select {VALID} t, (data->>'percent')::double pct, (data->>'load1')::double l1,
    (data->>'load5')::double l5, (data->>'load15')::double l15,
    (data->>'cores_logical')::int cores
    from events where source_name = 'endpoint' and subject = 'cpu')"""
MEM = f"""(select {VALID} t, (data->'readings'->>'used_mib')::int mib,
    (data->>'percent')::double pct,
    (data->>'total_bytes')::bigint total, (data->>'swap_used_bytes')::bigint swap,
    (data->>'pressure')::bool pressure
    from events where source_name = 'endpoint' and subject = 'memory')"""
DISK = f"""(select {VALID} t, (data->'readings'->>'free_mib:/')::int free_mib,
    (data->>'percent')::double pct, (data->>'total_bytes')::bigint total,
    (data->'readings'->>'read_kib_per_s')::int read_kib,
    (data->'readings'->>'write_kib_per_s')::int write_kib
    from events where source_name = 'endpoint' and subject = 'disk')"""
NET = f"""(select {VALID} t, data->>'event' event, (data->'readings'->>'down_kib_per_s')::int down,
    (data->'readings'->>'up_kib_per_s')::int up, (data->>'errors')::int errors,
    data->>'port' port, data->>'name' name, data->>'pid' pid, data->>'address' address
    from events where source_name = 'network')"""
FOCUS = f"""(select {VALID} t, data->>'event' event, data->>'app' app, data->>'title' title,
    data->>'pid' pid, data
    from events where source_name = 'app_focus')"""
SPELLS = """(select make_timestamp(start_ns // 1000) s, make_timestamp(end_ns // 1000) e,
    (end_ns - start_ns) / 1e9 secs, afk, app, title from focus_spells)"""
FILES = f"""(select {VALID} t, data->>'path' path, data->>'change' change
    from events where source_name = 'file_change')"""
DECISIONS = """(select ts, data->>'outcome' outcome, data->>'probe' probe,
    data->>'source_line' line, (data->>'budget_after_uj')::bigint budget
    from events where kind = 'attention.decision')"""
EVENTS = f"""(select {VALID} vt, ts, source_name, kind, data from events)"""


def between(column: str, start: str, end: str) -> str:
    """SQL: ``column`` in [start, end) of the recorded day."""
    return f"{column} >= {at(start)} and {column} < {at(end)}"


# (name, SQL giving one value, the value the question set relies on)
FACTS: list[tuple[str, str, str]] = [
    # the daemon and the log's span
    (
        "daemon started (time, pid)",
        f"""select {hms("ts")} || ' pid ' || (data->>'pid') from events
            where kind = 'daemon.started'""",
        "19:22:53 pid 14876",
    ),
    (
        "daemon stopped",
        f"select {hms('ts')} from events where kind = 'daemon.stopped'",
        "19:33:11",
    ),
    (
        "daemon ran (s)",
        """select round((max(physical_ns) filter (where kind = 'daemon.stopped')
            - max(physical_ns) filter (where kind = 'daemon.started')) / 1e9, 1) from events""",
        "617.6",
    ),
    (
        "daemon workspace",
        "select data->>'workspace' from events where kind = 'daemon.started'",
        "/tmp/nerve-day/home/work",
    ),
    (
        "senses loaded",
        """select string_agg(s, ',' order by s) from
            (select unnest(from_json(data->'senses', '["VARCHAR"]')) s
             from events where kind = 'config.loaded')""",
        "cpu,disk,files,focus,memory,network,power,processes,shell",
    ),
    (
        "daemon rss seen (bytes)",
        f"""select string_agg(distinct rss::varchar, ',' order by rss::varchar) from
            (select rss from {PROCS} where pid = 14876 union all
             select (data->>'rss_bytes')::bigint from events
             where source_name = 'process_tree' and data->>'pid' = '14876'
               and data->>'event' = 'started')""",
        "104865792,105783296",
    ),
    # commands
    ("commands", f"select count(*) from {COMMANDS}", "28"),
    ("shell sessions", f"select count(distinct sess) from {COMMANDS}", "3"),
    ("commands exiting non-zero", f"select count(*) from {COMMANDS} where ex <> 0", "6"),
    (
        "failed commands",
        f"""select string_agg(cmd || ' [' || ex || '] ' || {hms("t")}, ', ' order by t)
            from {COMMANDS} where ex <> 0""",
        "make build [2] 19:23:38, make build [2] 19:23:50, false [1] 19:23:58, "
        "yes > /dev/null [130] 19:24:38, make build [2] 19:24:48, make build [2] 19:28:48",
    ),
    (
        "make build runs",
        f"""select string_agg({hms("t")} || ' exit ' || ex, ', ' order by t) from {COMMANDS}
            where cmd = 'make build'""",
        "19:23:38 exit 2, 19:23:50 exit 2, 19:24:48 exit 2, 19:28:48 exit 2, 19:29:58 exit 0",
    ),
    ("make commands", f"select count(*) from {COMMANDS} where cmd like 'make %'", "7"),
    (
        "first command",
        f"select cmd || ' ' || {hms('t')} from {COMMANDS} order by t limit 1",
        "cd work/project 19:23:03",
    ),
    (
        "last command",
        f"""select cmd || ' ' || {hms("t")} || ' exit ' || ex from {COMMANDS}
            order by t desc limit 1""",
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/ 19:32:38 exit 0",
    ),
    (
        "longest commands (ms)",
        f"""select string_agg(cmd || ' ' || ms, ', ' order by ms desc) from
            (select * from {COMMANDS} order by ms desc limit 4)""",
        "yes > /dev/null 240000, ./tools/memgrow.py 193162, ./tools/cpuhog.py 120055, sleep 3 3002",
    ),
    (
        "exit codes of false, yes, memgrow, cpuhog, make test, make clean, curl",
        f"""select string_agg(cmd || '=' || ex, ', ' order by t) from {COMMANDS}
            where cmd in ('false', 'yes > /dev/null', './tools/memgrow.py', './tools/cpuhog.py',
                          'make test', 'make clean') or cmd like 'curl%'""",
        "false=1, yes > /dev/null=130, ./tools/memgrow.py=0, make clean=0, ./tools/cpuhog.py=0, "
        "make test=0, curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/=0",
    ),
    (
        "times of make test, make clean, uptime, echo $!, curl",
        f"""select string_agg(cmd || ' ' || {hms("t")}, ', ' order by t) from {COMMANDS}
            where cmd in ('make test', 'make clean', 'uptime', 'echo $!') or cmd like 'curl%'""",
        "echo $! 19:24:18, make clean 19:28:48, make test 19:30:28, uptime 19:31:41, "
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/ 19:32:38",
    ),
    (
        "commands in src",
        f"select string_agg(cmd, ', ' order by t) from {COMMANDS} where cwd like '%/src'",
        "cd src, ls -l",
    ),
    (
        "commands in docs",
        f"select string_agg(cmd, ', ' order by t) from {COMMANDS} where cwd like '%/docs'",
        "cd ../docs, cat guide.md",
    ),
    (
        "folder of the failed builds",
        f"""select string_agg(distinct cwd, ', ') from {COMMANDS}
            where cmd = 'make build' and ex <> 0""",
        "/tmp/nerve-day/home/work/project",
    ),
    (
        "commands naming 8765",
        f"select string_agg(cmd, ' | ' order by t) from {COMMANDS} where cmd like '%8765%'",
        "python3 -m http.server 8765 --bind 127.0.0.1 > /dev/null 2>&1 & | "
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/",
    ),
    (
        "commands 19:31:30-19:31:50",
        f"""select string_agg(cmd, ', ' order by t) from {COMMANDS}
            where {between("t", "19:31:30", "19:31:50")}""",
        "sleep 3, date -u, uptime",
    ),
    (
        "cat commands",
        f"select string_agg(cmd, ', ' order by t) from {COMMANDS} where cmd like 'cat %'",
        "cat README.md, cat guide.md",
    ),
    (
        "the command before and after false",
        f"""select string_agg(cmd || ' ' || {hms("t")}, ', ' order by t) from
            (select *, lead(cmd) over (order by t) nxt, lag(cmd) over (order by t) prv
             from {COMMANDS}) where nxt = 'false' or prv = 'false'""",
        "make build 19:23:50, python3 -m http.server 8765 --bind 127.0.0.1 > /dev/null 2>&1 & "
        "19:24:18",
    ),
    (
        "commands after make test",
        f"""select string_agg(cmd, ', ' order by t) from {COMMANDS}
            where t > (select t from {COMMANDS} where cmd = 'make test')""",
        "sleep 3, date -u, uptime, curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/",
    ),
    (
        "commands since 19:30",
        f"select string_agg(cmd, ', ' order by t) from {COMMANDS} where t >= {at('19:30:00')}",
        "make test, sleep 3, date -u, uptime, "
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/",
    ),
    (
        "commands 19:29-19:31",
        f"""select string_agg(cmd, ', ' order by t) from {COMMANDS}
            where {between("t", "19:29:00", "19:31:00")}""",
        "make build, ls build, make test",
    ),
    (
        "commands before 19:24",
        f"select string_agg(cmd, ', ' order by t) from {COMMANDS} where t < {at('19:24:00')}",
        "cd work/project, ls, cat README.md, make build, make build, false",
    ),
    (
        "commands 19:23:30-19:24:00",
        f"""select string_agg(cmd || ' [' || ex || ']', ', ' order by t) from {COMMANDS}
            where {between("t", "19:23:30", "19:24:00")}""",
        "make build [2], make build [2], false [1]",
    ),
    (
        "commands at 19:24:18 and at 19:28:48",
        f"""select string_agg({hms("t")} || ' ' || cmd, ', ' order by t) from {COMMANDS}
            where {hms("t")} in ('19:24:18', '19:28:48')""",
        "19:24:18 python3 -m http.server 8765 --bind 127.0.0.1 > /dev/null 2>&1 &, "
        "19:24:18 echo $!, 19:28:48 make build, 19:28:48 make clean",
    ),
    (
        "commands 19:24:30-19:24:50",
        f"""select string_agg(cmd, ', ' order by t) from {COMMANDS}
            where {between("t", "19:24:30", "19:24:50")}""",
        "cd work/project, cd work/project, yes > /dev/null, make build",
    ),
    (
        "commands 10 and 4 minutes before now (19:23:58, 19:29:58)",
        f"""select string_agg({hms("t")} || ' ' || cmd, ', ' order by t) from {COMMANDS}
            where {hms("t")} in ('19:23:58', '19:29:58')""",
        "19:23:58 false, 19:29:58 make build, 19:29:58 ls build",
    ),
    (
        "failures after 19:30, in the last 5 minutes (from 19:28:58)",
        f"""select (count(*) filter (where t >= {at("19:30:00")})) || ', '
            || (count(*) filter (where t >= {at("19:28:58")})) from {COMMANDS} where ex <> 0""",
        "0, 0",
    ),
    (
        "failures after 19:28",
        f"""select string_agg(cmd || ' ' || {hms("t")}, ', ' order by t) from {COMMANDS}
            where ex <> 0 and t >= {at("19:28:00")}""",
        "make build 19:28:48",
    ),
    (
        "failures that ended while memgrow ran",
        f"""select count(*) from {COMMANDS} c, (select t s, t + to_milliseconds(ms) e
            from {COMMANDS} where cmd = './tools/memgrow.py') m
            where c.ex <> 0 and c.t + to_milliseconds(c.ms) between m.s and m.e""",
        "0",
    ),
    (
        "commands started, and ended, before going away (19:25:26)",
        f"""select (count(*) filter (where t < {at(AWAY)})) || ', '
            || (count(*) filter (where t + to_milliseconds(ms) < {at(AWAY)})) from {COMMANDS}""",
        "18, 16",
    ),
    (
        "commands running when going away",
        f"""select string_agg(cmd, ', ' order by t) from {COMMANDS}
            where t < {at(AWAY)} and t + to_milliseconds(ms) > {at(AWAY)}""",
        "yes > /dev/null, ./tools/memgrow.py",
    ),
    (
        "first command run after coming back (19:28:30)",
        f"""select cmd || ' ' || {hms("t")} || ' exit ' || ex from {COMMANDS}
            where t > {at(BACK)} order by t limit 1""",
        "make build 19:28:48 exit 2",
    ),
    (
        "commands after the build passed",
        f"""select string_agg(cmd, ', ' order by t) from {COMMANDS} where t > (select min(t)
            from {COMMANDS} where cmd = 'make build' and ex = 0)""",
        "ls build, make test, sleep 3, date -u, uptime, "
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/",
    ),
    (
        "start and end of memgrow, cpuhog, yes (from the shell)",
        f"""select string_agg(cmd || ' ' || {hms("t")} || '-'
            || {hms("t + to_milliseconds(ms)")}, ', ' order by t) from {COMMANDS}
            where cmd in ('./tools/memgrow.py', './tools/cpuhog.py', 'yes > /dev/null')""",
        "yes > /dev/null 19:24:38-19:28:38, ./tools/memgrow.py 19:25:18-19:28:31, "
        "./tools/cpuhog.py 19:28:58-19:30:58",
    ),
    # processes
    (
        "memgrow.py: pid, peak rss, when",
        f"""select pid || ' ' || rss || ' ' || round(rss / 1048576, 1) || ' MiB ' || {hms("ts")}
            from {PROCS} where name = 'memgrow.py' order by rss desc limit 1""",
        "17085 1585336320 1511.9 MiB 19:28:15",
    ),
    (
        "memgrow.py rss at 19:27 (MiB)",
        f"""select string_agg({hms("ts")} || ' ' || round(rss / 1048576, 1), ', ' order by ts)
            from (select distinct ts, rss from {PROCS}
            where name = 'memgrow.py' and {between("ts", "19:27:00", "19:28:00")})""",
        "19:27:05 903.9, 19:27:25 1095.9, 19:27:45 1255.9",
    ),
    (
        "process with the most rss",
        f"select name || ' ' || pid from {PROCS} order by rss desc limit 1",
        "memgrow.py 17085",
    ),
    (
        "memgrow.py cmdline and user",
        """select e.value->>'cmdline' || ' ' || (e.value->>'user') from events,
            json_each(data->'memory') e where e.value->>'name' = 'memgrow.py'
            and e.value->>'cmdline' is not null limit 1""",
        "/usr/bin/python3 ./tools/memgrow.py root",
    ),
    (
        "process with the most cpu; its peak",
        f"""select name || ' ' || pid || ' ' || cpu || ' ' || {hms("ts")} from {PROCS}
            order by cpu desc limit 1""",
        "cpuhog.py 18048 1786 19:30:05",
    ),
    (
        "yes: pid, peak cpu (permille)",
        f"select pid || ' ' || max(cpu) from {PROCS} where name = 'yes' group by pid",
        "16845 918",
    ),
    (
        "top cpu at 19:30:05",
        f"""select name from {TOP.format(list="cpu")} where {hms("ts")} = '19:30:05'
            order by cpu desc limit 1""",
        "cpuhog.py",
    ),
    (
        "top cpu while away (each sample's first)",
        f"""select string_agg(distinct name, ', ' order by name) from
            (select ts, arg_max(name, cpu) name from {TOP.format(list="cpu")}
             where ts > {at(AWAY)} and ts < {at(BACK)} group by ts)""",
        "python, yes",
    ),
    (
        "processes started or exited: http.server, yes, cpuhog",
        f"""select string_agg(data->>'event' || ' ' || (data->>'name') || ' ' || (data->>'pid')
            || ' ' || {hms(VALID)}, ', ' order by valid_time_ns) from events
            where source_name = 'process_tree' and data->>'pid' in ('16634', '16845', '18048')
            and data->>'event' in ('started', 'exited')""",
        "started python3 16634 19:24:18, exited yes 16845 19:28:45, "
        "exited cpuhog.py 18048 19:31:05",
    ),
    (
        "http.server cmdline",
        """select data->>'cmdline' from events where source_name = 'process_tree'
            and data->>'pid' = '16634' and data->>'event' = 'started'""",
        "python3 -m http.server 8765 --bind 127.0.0.1",
    ),
    # cpu and load
    ("cores", f"select distinct cores from {CPU}", "2"),
    (
        "load1 highest",
        f"select l1 || ' ' || {hms('t')} from {CPU} order by l1 desc limit 1",
        "16.24 19:23:35",
    ),
    (
        "load1 lowest",
        f"select l1 || ' ' || {hms('t')} from {CPU} order by l1 limit 1",
        "0.81 19:32:40",
    ),
    (
        "load first and last",
        f"""select first(l1 order by t) || ' ' || first(l1 order by t desc) || ' '
            || {hms("max(t)")} from {CPU}""",
        "15.48 0.84 19:32:50",
    ),
    (
        "load at 19:31:40",
        f"select l1 || ' ' || l5 || ' ' || l15 from {CPU} where {hms('t')} = '19:31:40'",
        "1.71 5.57 6.97",
    ),
    (
        "load1 in the last 10 minutes (from 19:23:58): mean, min, max",
        f"""select round(avg(l1), 2) || ' ' || min(l1) || ' ' || max(l1) from {CPU}
            where t >= {at("19:23:58")}""",
        "4.72 0.81 14.32",
    ),
    (
        "cpu percent lowest",
        f"select pct || ' ' || {hms('t')} from {CPU} order by pct limit 1",
        "12.4 19:31:30",
    ),
    (
        "cpu percent: mean of readings, and weighted by time to the next reading",
        f"""select round(avg(pct), 1) || ' ' || round(sum(pct * d) / sum(d), 1) from
            (select pct, epoch(lead(t) over (order by t) - t) d from {CPU})""",
        "75.0 83.4",
    ),
    (
        "cpu percent: 95th percentile of the readings",
        f"select quantile_cont(pct, 0.95) from {CPU}",
        "100.0",
    ),
    (
        "cpu percent while cpuhog ran (19:28:58-19:30:58)",
        f"""select string_agg(pct::varchar, ', ' order by t) from {CPU}
            where {between("t", "19:28:58", "19:30:58")}""",
        "76.2, 100.0, 100.0, 99.8",
    ),
    (
        "cpu percent after cpuhog (from 19:30:58)",
        f"select string_agg(pct::varchar, ', ' order by t) from {CPU} where t >= {at('19:30:58')}",
        "68.7, 14.0, 15.5, 12.4, 18.4, 14.9, 13.5, 13.4, 24.2, 15.3",
    ),
    # memory
    (
        "memory first reading (MiB, %)",
        f"select mib || ' ' || pct || ' ' || {hms('t')} from {MEM} order by t limit 1",
        "2219 9.2 19:22:55",
    ),
    (
        "memory highest",
        f"select mib || ' ' || pct || ' ' || {hms('t')} from {MEM} order by mib desc limit 1",
        "2655 11.0 19:23:25",
    ),
    (
        "memory lowest",
        f"select mib || ' ' || pct || ' ' || {hms('t')} from {MEM} order by mib limit 1",
        "686 2.8 19:29:45",
    ),
    (
        "memory last reading",
        f"select mib || ' ' || pct || ' ' || {hms('t')} from {MEM} order by t desc limit 1",
        "696 2.9 19:33:05",
    ),
    (
        "memory total (bytes, GiB), swap used at most, any pressure",
        f"""select max(total) || ' ' || round(max(total) / 1073741824, 1) || ' '
            || max(swap) || ' ' || bool_or(pressure) from {MEM}""",
        "25276190720 23.5 0 false",
    ),
    (
        "memory while away: lowest, highest (MiB)",
        f"select min(mib) || ' ' || max(mib) from {MEM} where {between('t', AWAY, BACK)}",
        "1560 2317",
    ),
    (
        "memory: last reading before memgrow started, first after it ended",
        f"""select (select mib from {MEM} where t < {at("19:25:18")} order by t desc limit 1)
            || ' ' || (select mib || ' ' || pct from {MEM} where t > {at("19:28:31")}
            order by t limit 1)""",
        "1693 802 3.3",
    ),
    # disk and network
    (
        "disk free (MiB) first and last, percent used, size (bytes, GiB)",
        f"""select first(free_mib order by t) || ' ' || first(free_mib order by t desc) || ' '
            || max(pct) || ' ' || max(total) || ' ' || round(max(total) / 1073741824, 1)
            from {DISK} where free_mib is not null""",
        "75984 75972 26.9 270553174016 252.0",
    ),
    (
        "disk read highest",
        f"""select read_kib || ' ' || {hms("t")} from {DISK} order by read_kib desc nulls last
            limit 1""",
        "1172 19:29:55",
    ),
    (
        "disk write highest",
        f"""select write_kib || ' ' || {hms("t")} from {DISK} order by write_kib desc nulls last
            limit 1""",
        "1682 19:24:55",
    ),
    (
        "network busiest (KiB/s down) and errors",
        f"""select max(down) || ' ' || {hms("arg_max(t, down)")} || ' errors ' || max(errors)
            from {NET} where down is not null""",
        "66 19:23:25 errors 0",
    ),
    (
        "network while away (KiB/s, most)",
        f"""select max(greatest(down, up)) from {NET}
            where down is not null and {between("t", AWAY, BACK)}""",
        "0",
    ),
    (
        "ports opened and closed",
        f"""select string_agg(event || ' ' || port || ' ' || address || ' ' || name || ' ' || pid
            || ' ' || {hms("t")}, ', ' order by t) from {NET} where port is not null""",
        "port_closed 33605 127.0.0.1 nats-server 13469 19:23:05, "
        "port_opened 8765 127.0.0.1 python3 16634 19:24:25",
    ),
    (
        "port 8765 still listening at the end (network state)",
        """select (state->'ports'->'127.0.0.1:8765'->>'pid') from sense_state
            where sense = 'network'""",
        "16634",
    ),
    (
        "power: how it was measured; battery",
        """select (select string_agg(distinct (data->>'provenance') || ' ' || (data->>'reason'),
            ', ') from events where source_name = 'thermal_power') || '; '
            || (select state->>'battery' from sense_state where sense = 'power')""",
        "Estimator no powercap counter; no battery",
    ),
    # windows
    (
        "time in each app (s, away left out)",
        f"""select string_agg(app || ' ' || s, ', ' order by app) from
            (select app, round(sum(secs)) s from {SPELLS} where not afk group by app)""",
        "Firefox 110.0, Vim 146.0, XTerm 175.0",
    ),
    (
        "away stretch (start, end, s) and the back event's away_ms",
        f"""select {hms("s")} || ' ' || {hms("e")} || ' ' || round(secs) || ' '
            || (select data->>'away_ms' from {FOCUS} where event = 'back')
            from {SPELLS} where afk""",
        "19:25:26 19:28:30 184.0 182475",
    ),
    (
        "focus switches (focus events) and visits to Firefox",
        f"""select count(*) filter (where event = 'focus') || ' '
            || count(*) filter (where app = 'Firefox') from {FOCUS}""",
        "15 4",
    ),
    (
        "window at 19:24:35, 19:30:30, 19:31:30",
        f"""select string_agg(app || ': ' || title, ' | ' order by s) from {SPELLS}
            where {" or ".join(f"({at(c)} >= s and {at(c)} < e)" for c in SEEN_AT)}""",
        "Firefox: Directory listing for / - localhost:8765 - Mozilla Firefox | "
        "XTerm: make build - ~/work/project | Firefox: nerve - the event log - Mozilla Firefox",
    ),
    (
        "the spell before Stack Overflow; Stack Overflow's start and length",
        f"""select string_agg(app || ' ' || title || ' ' || {hms("s")} || ' ' || round(secs),
            ' | ' order by s) from (select *, lead(title) over (order by s) nxt from {SPELLS})
            where nxt like '%Stack Overflow%' or title like '%Stack Overflow%'""",
        "XTerm make build - ~/work/project 19:28:50 20.0 | Firefox undefined reference to main "
        "- Stack Overflow - Mozilla Firefox 19:29:10 30.0",
    ),
    (
        "first focus of the build window and of Vim",
        f"""select string_agg(app || ' ' || {hms("t")}, ', ' order by t) from
            (select app, min(t) t from {FOCUS} where title in ('make build - ~/work/project',
             'main.c (~/work/project/src) - VIM') group by app)""",
        "Vim 19:23:20, XTerm 19:23:40",
    ),
    (
        "last focus; Vim's pid",
        f"""select app || ' ' || title || ' ' || {hms("t")} || ' pid ' || pid from {FOCUS}
            where event = 'focus' order by t desc limit 1""",
        "Vim guide.md (~/work/project/docs) - VIM 19:32:00 pid 14641",
    ),
    (
        "time on guide.md (s, to the daemon's stop)",
        f"select round(secs, 1) from {SPELLS} where title like 'guide.md%'",
        "70.8",
    ),
    (
        "first focus after coming back",
        f"""select app || ' ' || title from {FOCUS} where event = 'focus' and t >= {at(BACK)}
            order by t limit 1""",
        "Vim main.c (~/work/project/src) - VIM",
    ),
    (
        "titles of Firefox and Vim",
        f"""select string_agg(distinct title, ' | ' order by title) from {FOCUS}
            where app in ('Firefox', 'Vim')""",
        "Directory listing for / - localhost:8765 - Mozilla Firefox | "
        "Mozilla Firefox | guide.md (~/work/project/docs) - VIM | "
        "main.c (~/work/project/src) - VIM | nerve - the event log - Mozilla Firefox | "
        "undefined reference to main - Stack Overflow - Mozilla Firefox | "
        "util.c (~/work/project/src) - VIM",
    ),
    (
        "focus while make test ran (19:30:28)",
        f"select app from {SPELLS} where {at('19:30:28')} >= s and {at('19:30:28')} < e",
        "XTerm",
    ),
    (
        "localhost page focused",
        f"select {hms('t')} from {FOCUS} where title like '%localhost:8765%'",
        "19:24:30",
    ),
    # files
    (
        "file changes",
        f"""select string_agg(path || ' ' || change || ' ' || {hms("t")}, ', ' order by t)
            from {FILES}""",
        "project/src/main.c modified 19:23:27, project/src/util.c added 19:24:05, "
        "project/docs/guide.md modified 19:24:59, project/src/main.c modified 19:29:39, "
        "project/build/app added 19:29:59, project/docs/guide.md modified 19:31:59",
    ),
    (
        "file changes: in all, main.c, under src, while away, after 19:30",
        f"""select count(*) || ' ' || count(*) filter (where path like '%main.c') || ' '
            || count(*) filter (where path like 'project/src/%') || ' '
            || count(*) filter (where {between("t", AWAY, BACK)}) || ' '
            || string_agg(path, ',') filter (where t >= {at("19:30:00")}) from {FILES}""",
        "6 2 3 0 project/docs/guide.md",
    ),
    (
        "checks on files",
        f"""select string_agg(data->>'check' || ' ' || (data->>'path') || ' '
            || (data->>'result') || ' ' || {hms("ts")}, ', ' order by ts) from events
            where kind = 'check.verdict'""",
        "conflict-markers project/docs/guide.md passed 19:25:00, "
        "conflict-markers project/docs/guide.md passed 19:32:00",
    ),
    # attention
    (
        "decisions: in all, surfaced, held",
        f"""select count(*) || ' ' || count(*) filter (where outcome = 'surface') || ' '
            || count(*) filter (where outcome like 'hold%') from {DECISIONS}""",
        "16 5 11",
    ),
    (
        "surfaced",
        f"""select string_agg({hms("ts")} || ' ' || probe || ': ' || line, ' | ' order by ts)
            from {DECISIONS} where outcome = 'surface'""",
        "19:26:30 novelty: away: no input for 64 s | 19:26:45 value:processes.top_rss_bytes: "
        "top cpu: yes 55% [16845], python 49% [19042], [pytest-xdist r 30% [27321]; memory: "
        "memgrow.py 743 MiB [17085], [pytest-xdist r 321 MiB [27333] | 19:27:05 "
        "value:processes.top_cpu_permille: top cpu: python 52% [19042], yes 51% [16845], "
        "[pytest-xdist r 33% [27321]; memory: memgrow.py 903 MiB [17085], [pytest-xdist r 321 "
        "MiB [27333] | 19:27:35 novelty: net all down 0.0 KiB/s up 0.0 KiB/s | 19:28:30 "
        "novelty: back after 182 s away",
    ),
    (
        "held",
        f"""select string_agg({hms("ts")} || ' ' || outcome || ' ' || probe, ', ' order by ts,
            probe) from {DECISIONS} where outcome like 'hold%'""",
        "19:24:00 hold:direction value:cpu.load1_centi, 19:24:20 hold:direction "
        "value:cpu.load1_centi, 19:25:10 hold:direction value:cpu.load1_centi, 19:27:55 "
        "hold:transient value:processes.top_rss_bytes, 19:28:30 hold:transient "
        "value:focus.idle_ms, 19:28:35 hold:direction value:memory.used_mib, 19:28:50 "
        "hold:transient value:shell.duration_ms, 19:28:50 hold:transient "
        "value:shell.exit_status, 19:28:55 hold:direction value:cpu.busy_permille, 19:30:25 "
        "hold:transient value:disk.read_kib_per_s, 19:33:05 hold:direction "
        "value:memory.used_mib",
    ),
    (
        "held at 19:28:50: what",
        f"select distinct line from {DECISIONS} where {hms('ts')} = '19:28:50'",
        "$ make build [exit 2]",
    ),
    (
        "lowest budget after a decision (uJ)",
        f"select budget || ' ' || {hms('ts')} from {DECISIONS} order by budget limit 1",
        "325075 19:27:35",
    ),
    (
        "desktop notifications that failed",
        """select count(*) || ' ' || count(*) filter (where data->>'error' like '%dbus-launch%')
            from events where kind = 'attention.notify_failed'""",
        "5 5",
    ),
    # the windows of time the time questions use
    (
        "19:26-19:28: the focus spells over it, and what was surfaced in it",
        f"""select (select string_agg(coalesce(app, 'away'), ', ' order by s) from {SPELLS}
            where s < {at("19:28:00")} and e > {at("19:26:00")}) || '; '
            || (select string_agg(probe, ', ' order by ts) from {DECISIONS}
            where outcome = 'surface' and {between("ts", "19:26:00", "19:28:00")})""",
        "away; novelty, value:processes.top_rss_bytes, value:processes.top_cpu_permille, novelty",
    ),
    (
        "in the first minute (19:22:53-19:23:53): commands and files",
        f"""select (select string_agg(cmd, ', ' order by t) from {COMMANDS}
            where {between("t", "19:22:53", "19:23:53")}) || '; ' || (select string_agg(path, ', ')
            from {FILES} where {between("t", "19:22:53", "19:23:53")})""",
        "cd work/project, ls, cat README.md, make build, make build; project/src/main.c",
    ),
    (
        "in the last minute (19:32:58-19:33:58): sources",
        f"""select string_agg(distinct source_name || ':' || kind, ', '
            order by source_name || ':' || kind) from {EVENTS}
            where {between("coalesce(vt, ts)", "19:32:58", NOW)} and kind <> 'sense.state'""",
        "endpoint:observation, nerve:attention.snapshot, nerve:chain.link, "
        "nerve:daemon.stopped, process_tree:observation, salience:attention.decision, "
        "salience:attention.highlight",
    ),
    (
        "in the last 2 minutes (19:31:58-19:33:58): commands, files, focus",
        f"""select (select string_agg(cmd, ', ') from {COMMANDS} where t >= {at("19:31:58")})
            || '; ' || (select string_agg(path, ', ') from {FILES} where t >= {at("19:31:58")})
            || '; ' || (select string_agg(title, ', ') from {FOCUS}
            where t >= {at("19:31:58")})""",
        "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/; project/docs/guide.md; "
        "guide.md (~/work/project/docs) - VIM",
    ),
]


def value(ws: Any, sql: str) -> str:
    """The one value ``sql`` gives, as text."""
    rows = ws.sql(sql).fetchall()
    return str(rows[0][0]) if rows else ""


def main() -> int:
    """Print every fact with the value read and whether it is the one relied on."""
    differs = 0
    with tempfile.TemporaryDirectory() as tmp:
        day = unpack_day(Path(tmp))
        ws = nerve.open(day.root)
        print(f"now (the plan's): {day.plan['now']['iso']}")
        for name, sql, relied in FACTS:
            got = value(ws, sql)
            same = got == relied
            differs += not same
            print(f"{name}: {got}  {'ok' if same else 'DIFFERS, relied on: ' + relied}")
        ws.close()
    print(f"{len(FACTS)} facts, {differs} differ")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
