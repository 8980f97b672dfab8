-- Each sense's latest stored state: the payload of its newest `sense.state` event.
-- `undecodable` is true when that payload is not JSON (the daemon then falls back to the
-- sense's initial_state and records an error).
SELECT
    subject AS sense,
    physical_ns,
    logical,
    data -> 'state' AS state,
    data IS NULL AS undecodable
FROM events
WHERE kind = 'sense.state'
QUALIFY row_number() OVER (PARTITION BY subject ORDER BY physical_ns DESC, logical DESC) = 1
