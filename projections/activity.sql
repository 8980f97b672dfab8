-- Events per source class and kind, per minute of HLC time.
SELECT
    time_bucket(INTERVAL 1 MINUTE, ts) AS minute,
    source_name AS source,
    kind,
    count(*) AS events
FROM events
GROUP BY ALL
ORDER BY minute, source, kind
