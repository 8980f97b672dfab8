"""The front door's parts, under :class:`nerve.api.Workspace`.

``core`` holds the workspace's own operations (:class:`~nerve.door.core.Core`: opening, SQL,
emit, replay, ask, and as private methods the writes and daemon calls the nouns make) with
the reads of ``reads`` mixed in. The nouns are what the workspace shows: ``nouns``
(``ws.events``, ``ws.log``, ``ws.privacy``, ``ws.daemon``, ``ws.settings``), ``named``
(``ws.audit``, ``ws.senses``, ``ws.sense(name)``), ``runs`` (``ws.runs``, ``ws.run(id)``),
``fleet`` and ``sync``. Each imports what its methods need inside them, so ``nerve.open``
stays cheap.
"""
