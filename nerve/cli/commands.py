"""Every ``nerve`` command: the module that registers it, the help panel it is listed in
(``rich_help_panel=`` where the module registers it) and the first paragraph of its help.

``nerve --help`` lists these without importing a command module, and a command imports only
its own (``nerve.cli.tree``). Kept equal to the modules by ``tests/cli/test_cli_tree.py``, which
prints the table to paste here when they differ.
"""

PANELS = (  # nerve --help lists its commands under these headings, in this order
    "Everyday",
    "The log",
    "Privacy",
    "Attention & audit",
    "Workflows",
    "Fleet & sync",
    "Advanced",
)

COMMANDS: dict[str, tuple[str, str, str]] = {
    "setup": (
        "setup_cmds",
        "Everyday",
        "Make your own nerve: a workspace in your data folder, the shell hook, a user service.",
    ),
    "init": (
        "log_cmds",
        "The log",
        "Create a workspace: nerve.yaml, senses/, workflows/, projections/, data/.",
    ),
    "emit": (
        "log_cmds",
        "The log",
        "Append an event (or a batch with --jsonl) and print what was stored.",
    ),
    "import": (
        "log_cmds",
        "The log",
        "Import whole events (hlc, node kept); they must sort after the log's newest.",
    ),
    "replay": (
        "log_cmds",
        "The log",
        "Replay the log and print its digest; with --verify, check everything.",
    ),
    "seal": ("log_cmds", "The log", "Seal the unsealed tail into a segment now."),
    "compact": (
        "log_cmds",
        "The log",
        "Merge small adjacent segments; the events and the digest are unchanged.",
    ),
    "repair": (
        "log_cmds",
        "The log",
        "Open a damaged log: keep every good frame, move damaged files to quarantine/.",
    ),
    "query": (
        "log_cmds",
        "The log",
        "Run SQL in DuckDB over the log (a terminal shows --limit rows; pipes get all).",
    ),
    "tail": (
        "log_cmds",
        "Everyday",
        "Print the newest events; --json prints exactly what `nerve import` reads.",
    ),
    "payload": ("log_cmds", "The log", "Print the payload bytes stored under a content address."),
    "conformance": (
        "log_cmds",
        "The log",
        "Run every published conformance vector (or those in --vectors DIR).",
    ),
    "lock": (
        "key_cmds",
        "Privacy",
        "Stop capture and drop the key: the daemon (which holds it in memory) stops; "
        "reads need the key again.",
    ),
    "dev": (
        "daemon_cmds",
        "Everyday",
        "Run the daemon in the foreground with a live view (Ctrl+C stops).",
    ),
    "start": ("daemon_cmds", "Everyday", "Start the daemon (alias of `daemon start`)."),
    "stop": ("daemon_cmds", "Everyday", "Stop the daemon (alias of `daemon stop`)."),
    "status": ("daemon_cmds", "Everyday", "Daemon status (alias of `daemon status`)."),
    "logs": ("daemon_cmds", "Advanced", "The daemon's own log (alias of `daemon logs`)."),
    "validate": (
        "sense_cmds",
        "Advanced",
        "Check nerve.yaml and every sense it names; print every problem.",
    ),
    "attend": (
        "attend_cmds",
        "Attention & audit",
        "Catch a log up as the daemon would (--replay), try other settings (--replay --with), "
        "recompute every decision (--recompute), or print each decision as it is made (--follow).",
    ),
    "ask": (
        "ask_cmds",
        "Everyday",
        "Answer QUESTION from the log: deterministic recall first, the fallback only if needed.",
    ),
    "export": (
        "export_cmds",
        "The log",
        "Write the log as a DuckDB file that plain `duckdb FILE` queries, no nerve needed.",
    ),
    "forget": (
        "privacy_log_cmds",
        "Privacy",
        "Erase the payload and line of the events selected, and prove nothing else changed.",
    ),
    "archive": (
        "privacy_log_cmds",
        "Privacy",
        "Move whole sealed segments older than --before into DIR, a read-only nerve log.",
    ),
    "pause": (
        "privacy_cmds",
        "Privacy",
        "Stop capture: no sense computes until `nerve resume` (or the --for time is up).",
    ),
    "resume": (
        "privacy_cmds",
        "Privacy",
        "Start capture again after `nerve pause` (a capture.resumed event).",
    ),
    "shell-hook": ("shell_cmds", "Advanced", "Print the shell hook for SHELL."),
    "service": (
        "setup_cmds",
        "Advanced",
        "The user service that runs the daemon from login (systemd --user, launchd).",
    ),
    "key": ("key_cmds", "Privacy", "Keys of an encrypted workspace (see nerve init --encrypt)."),
    "daemon": ("daemon_cmds", "Advanced", "Run nerve's daemon in the background."),
    "sense": ("sense_cmds", "Advanced", "Inspect and trigger senses."),
    "audit": ("attend_cmds", "Attention & audit", "Verify and inspect the sealed surfacing log."),
    "workflow": ("workflow_cmds", "Workflows", "Run and inspect workflows."),
    "check": ("check_cmds", "Workflows", "Inspect and fire checks."),
    "privacy": ("privacy_cmds", "Privacy", "See what the privacy rules keep out of the log."),
    "mcp": (
        "mcp_cmds",
        "Advanced",
        "Serve this workspace's log to AI assistants over the Model Context Protocol.",
    ),
    "fleet": (
        "fleet_cmds",
        "Fleet & sync",
        "Many hosts: ship to an Iceberg table, query it, verify it.",
    ),
    "sync": (
        "sync_cmds",
        "Fleet & sync",
        "One history across your devices: a sync group over NATS JetStream or S3.",
    ),
    "ui": (
        "ui_cmds",
        "Everyday",
        "Serve this workspace's log as web pages (timeline, search, live tail, SQL, audit).",
    ),
}
