"""nerve's version, in a module of its own: what reports it need not load the package's face."""

__version__ = "0.1.0"
