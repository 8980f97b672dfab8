"""``nerve dev``'s view, drawn with rich: :mod:`~nerve.dev.view` renders a
:class:`~nerve.runtime.frame.Frame` into the terminal (and runs a foreground kernel
with it), :mod:`~nerve.dev.attach` builds one from a running daemon's socket and log.

It sits above ``nerve.runtime``: the kernel keeps the data the view shows (highlights, agent
reads, counters) and never imports rich or this package."""
