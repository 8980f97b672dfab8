"""Privacy: redaction at capture, pause, and verifiable forgetting, retention and archive.

``detectors`` (the built-in pack) · ``scan`` (redacting text and JSON payloads) ·
``settings`` (the ``privacy:`` section of nerve.yaml) · ``policy`` (which rules apply to an
event; drop or redact before the WAL) · ``pause`` (the ``capture.paused``/``capture.resumed``
records) · ``ops`` (workspace-level calls the CLI makes: pause, resume, test) ·
``selection``, ``forget`` (``nerve forget`` and retention; the mechanics are in
:mod:`nerve.log.erasure`) · ``archive`` (``nerve archive``; see :mod:`nerve.log.archive`).
"""
