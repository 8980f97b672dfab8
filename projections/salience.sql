-- Sense v0.1 §4: salience, novelty and uncertainty of every observation, from exact integer
-- counts, in thousandths rounded half-up: the same numbers nerve's observer computes.
--   salience    = observations of this source in the recency window / window length
--   novelty     = 1 - observations of this source so far / all observations so far
--   uncertainty = Inferred or Untrusted observations in the window / window length
-- The window is `attention_window` in the one-row table `nerve_settings`: `attention.window`
-- from nerve.yaml (64 unless configured).
WITH obs AS (
    SELECT
        physical_ns, logical, id, source, source_name, trust, line,
        row_number() OVER upto AS seen,
        count(*) OVER (PARTITION BY source ORDER BY physical_ns, logical
                       ROWS UNBOUNDED PRECEDING) AS source_seen,
        list(source) OVER recent AS recent_sources,
        sum(CASE WHEN trust >= 2 THEN 1 ELSE 0 END) OVER recent AS recent_low,
        count(*) OVER recent AS size
    FROM events
    WHERE kind = 'observation'
    WINDOW upto AS (ORDER BY physical_ns, logical ROWS UNBOUNDED PRECEDING),
           recent AS (ORDER BY physical_ns, logical
                      ROWS BETWEEN (SELECT attention_window FROM nerve_settings) - 1 PRECEDING
                      AND CURRENT ROW)
)
SELECT
    physical_ns, logical, id, source_name, trust, line,
    (2000 * len(list_filter(recent_sources, lambda s: s = source)) + size) // (2 * size) AS salience_milli,
    (2000 * (seen - source_seen) + seen) // (2 * seen) AS novelty_milli,
    (2000 * recent_low + size) // (2 * size) AS uncertainty_milli
FROM obs
ORDER BY physical_ns, logical
