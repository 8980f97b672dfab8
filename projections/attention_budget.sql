-- The attention budget over time: every gate decision with what it charged and what was left.
-- The newest row's budget_after_uj is the budget now (before refill since that decision).
SELECT
    physical_ns, logical, ts,
    data->>'outcome' AS outcome,
    data->>'probe' AS probe,
    (data->>'value_milli')::INTEGER AS value_milli,
    (data->>'cost_milli')::INTEGER AS cost_milli,
    (data->>'charged_uj')::BIGINT AS charged_uj,
    (data->>'budget_before_uj')::BIGINT AS budget_before_uj,
    (data->>'budget_after_uj')::BIGINT AS budget_after_uj,
    (data->>'chain_seq')::BIGINT AS chain_seq,
    data->>'source_event' AS source_event,
    data->>'source_line' AS source_line
FROM events
WHERE kind = 'attention.decision'
ORDER BY physical_ns, logical
