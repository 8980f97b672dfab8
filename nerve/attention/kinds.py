"""The event kinds attention writes, in a module light enough for readers (``audit``) to
import without the pipeline."""

HIGHLIGHT, DECISION, LINK, SNAPSHOT = (
    "attention.highlight", "attention.decision", "chain.link", "attention.snapshot",
)  # fmt: skip
MUTE = "attention.mute"  # a person muted a probe's notifications for a while (Mute 1 h)
