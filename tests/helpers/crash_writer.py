"""A writer that prints each event's line once its append has returned (is acknowledged).

It also seals and compacts often, printing ``#seal``/``#compact`` before and ``#done`` after,
so whoever kills it can tell which step the kill landed in.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from nerve.log.drafts import Draft
from nerve.log.store import EventLog


def main(root: Path, round_no: int) -> None:
    """Append, seal and compact on ``root`` until killed, printing what was acknowledged."""
    rng = random.Random(round_no)
    out = sys.stdout
    with EventLog(root, node="crash", seal_max_events=10**9) as log:
        counter = 0
        while True:
            batch = [f"r{round_no}-{counter + i}" for i in range(rng.randint(1, 5))]
            counter += len(batch)
            log.append_drafts(
                [Draft.of(source=1, line=text, payload={"n": text}) for text in batch]
            )
            out.write("\n".join(batch) + "\n")
            out.flush()
            roll = rng.random()
            if roll < 0.15:
                out.write("#seal\n")
                out.flush()
                log.seal()
                out.write("#done\n")
                out.flush()
            elif roll < 0.2:
                out.write("#compact\n")
                out.flush()
                log.compact(target_rows=200)
                out.write("#done\n")
                out.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
