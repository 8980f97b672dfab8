"""Privacy: forgetting verifiably, retention and archive (and redaction at capture)."""
