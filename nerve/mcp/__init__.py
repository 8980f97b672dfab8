"""``nerve mcp``: the event log served to AI assistants over the Model Context Protocol.

``settings`` (the ``mcp:`` section of nerve.yaml) · ``sandbox`` (read-only DuckDB for the
``query`` tool) · ``tools`` (what each tool returns, as plain library calls) · ``budgets``
(the rows and bytes a call and a session may take) · ``recorder`` (the middleware every call
passes: budgets, the privacy screen of :mod:`nerve.privacy.screen`, the record) · ``access``
(the ``agent.access`` record of every call, and ``nerve audit access``) · ``token`` (the HTTP
bearer token) · ``server`` (the SDK's server, its tools and resources, stdio and streamable
HTTP).

Nothing here imports the SDK at module level but ``server``: the CLI and the config load
``settings`` and ``access`` without it.
"""
