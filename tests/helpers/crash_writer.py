"""A writer that prints each event's line once its append has returned (is acknowledged)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from nerve.log.store import Draft, EventLog


def main() -> None:
    root, round_no = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(round_no)
    with EventLog(root, node="crash", seal_max_events=rng.choice([5, 20, 50])) as log:
        counter = 0
        while True:
            batch = [f"r{round_no}-{counter + i}" for i in range(rng.randint(1, 5))]
            counter += len(batch)
            log.append_drafts(
                [Draft.of(source=1, line=text, payload={"n": text}) for text in batch]
            )
            sys.stdout.write("\n".join(batch) + "\n")
            sys.stdout.flush()
            if rng.random() < 0.05:
                log.compact(target_rows=200)


if __name__ == "__main__":
    main()
