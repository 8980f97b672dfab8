"""The front door's parts, under :class:`nerve.api.Workspace`.

``core`` is what a workspace does (:class:`~nerve.door.core.Core`, with its operations as
private methods), built from method groups by subject: ``reads``, ``info`` and ``admin``.
``nouns`` and ``named`` are what the workspace shows of them: ``ws.events``, ``ws.log``,
``ws.audit``, ``ws.sense(name)`` … each method one call. ``fleet``, ``sync`` and ``runs``
are nouns that do their own work (``ws.fleet``, ``ws.sync``, ``ws.runs`` and ``ws.run(id)``).
Each imports what its methods need inside them, so ``nerve.open`` stays cheap.
"""
