"""One history across a person's devices (``nerve sync``; issue 45).

Words, used the same way in code, CLI and docs:

- **group**: the devices that share a history; a name, a 32-byte **group key** and a
  **transport** (NATS JetStream or an S3 bucket). See :mod:`nerve.sync.group`.
- **device**: one workspace in a group, named by the person; its events carry its ``node``.
- **join code**: one-time text carrying the transport, group name and key.
- **box**: what the transport holds: a batch or a status, encrypted under the group key
  (:mod:`nerve.sync.box`).
- **shared event / shared digest / peer log**: see :mod:`nerve.sync.history`.
- **round**: send, receive, announce (:mod:`nerve.sync.engine`).
"""
