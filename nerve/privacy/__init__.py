"""Privacy at capture: detectors and rules that keep secrets out of the log, and pause.

``detectors`` (the built-in pack) · ``scan`` (redacting text and JSON payloads) ·
``settings`` (the ``privacy:`` section of nerve.yaml) · ``policy`` (which rules apply to an
event; drop or redact before the WAL) · ``pause`` (the ``capture.paused``/``capture.resumed``
records) · ``ops`` (workspace-level calls the CLI makes: pause, resume, test).
"""
