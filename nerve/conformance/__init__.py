"""The conformance suite: published vectors in ``conformance/v1`` checked against nerve.

Each vector file is JSON with a ``vector`` key naming its checker. ``run_all`` runs every
file; another implementation can read the same files and README to check itself. The
checkers live by subject (``log``: C1, C2, N1, N2; ``attention``: C3, C3V, C5; ``recall``: C4),
the runner in ``runner``.
"""

from nerve.conformance.log import preimage_of
from nerve.conformance.recall import check_c4
from nerve.conformance.runner import CHECKERS, VectorResult, run_all, run_file

__all__ = ["CHECKERS", "VectorResult", "check_c4", "preimage_of", "run_all", "run_file"]
