-- One row per workflow run: its newest status and what was asked for.
-- Every status change is a `workflow.status` event whose subject is the run id; the first one
-- of a run carries the request (prompt, max_rounds, dry_run, source, sense). `rounds` counts
-- the run's role messages. Statuses: queued, started, waiting, held, completed, failed,
-- crashed, interrupted, dropped.
WITH status AS (
    SELECT subject AS run, physical_ns, logical, ts, data
    FROM events
    WHERE kind = 'workflow.status'
),
newest AS (
    SELECT * FROM status
    QUALIFY row_number() OVER (PARTITION BY run ORDER BY physical_ns DESC, logical DESC) = 1
),
oldest AS (
    SELECT * FROM status
    QUALIFY row_number() OVER (PARTITION BY run ORDER BY physical_ns, logical) = 1
),
rounds AS (
    SELECT subject AS run, count(*) AS rounds
    FROM events
    WHERE kind = 'workflow.message'
    GROUP BY subject
)
SELECT
    newest.run,
    oldest.data ->> 'workflow' AS workflow,
    newest.data ->> 'status' AS status,
    newest.data ->> 'reason' AS reason,
    coalesce(rounds.rounds, 0) AS rounds,
    TRY_CAST(oldest.data -> 'request' ->> 'max_rounds' AS BIGINT) AS max_rounds,
    oldest.data -> 'request' ->> 'prompt' AS prompt,
    coalesce(TRY_CAST(oldest.data -> 'request' ->> 'dry_run' AS BOOLEAN), false) AS dry_run,
    oldest.data -> 'request' ->> 'source' AS source,
    oldest.data -> 'request' ->> 'sense' AS sense,
    oldest.physical_ns AS requested_ns,
    oldest.logical AS requested_logical,
    oldest.ts AS requested_at,
    newest.physical_ns AS updated_ns,
    newest.ts AS updated_at
FROM newest
JOIN oldest USING (run)
LEFT JOIN rounds USING (run)
