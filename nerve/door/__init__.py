"""The front door's method groups, mixed into :class:`nerve.api.Workspace`.

``reads`` (streamed SQL, the tail, a sense's data, the log's snapshot, the daemon's live
counts), ``runs`` (workflow runs and gate checks) and ``fleet`` (the shared Iceberg table).
Each imports what its methods need inside them, so ``nerve.open`` stays cheap.
"""
