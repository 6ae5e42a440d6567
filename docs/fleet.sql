-- The fleet store's queries (docs/fleet.md). DuckDB SQL; run from the
-- directory that holds the store as `store/`:
--
--   cd target/fleet && duckdb < ../../docs/fleet.sql
--   python3 tests/reference/fleet_sql.py docs/fleet.sql target/fleet/store   (what the tests run)
--
-- `device` and `day` are the Hive partitions (store/steps/device=…/day=…/).
-- Each query is named by the `-- name:` line before it.

CREATE OR REPLACE VIEW steps AS
    SELECT * FROM read_parquet('store/steps/*/*/*.parquet', hive_partitioning = true);
CREATE OR REPLACE VIEW readings AS
    SELECT * FROM read_parquet('store/readings/*/*/*.parquet', hive_partitioning = true);

-- name: hints_per_device_and_dimension
-- Per device, the hints, and how many told each dimension (a hint can
-- tell several). `watch` is a watch that fired (by value or heartbeat;
-- `watches` says which and why, `throttled` for a change held back).
SELECT device,
       count(*) FILTER (WHERE hint IS NOT NULL) AS hints,
       count(*) FILTER (WHERE hint IS NOT NULL AND time) AS time,
       count(*) FILTER (WHERE hint IS NOT NULL AND tasks) AS tasks,
       count(*) FILTER (WHERE hint IS NOT NULL AND context_length) AS context_length,
       count(*) FILTER (WHERE hint IS NOT NULL AND tool_error) AS tool_error,
       count(*) FILTER (WHERE hint IS NOT NULL AND watch) AS watch
FROM steps
GROUP BY device
ORDER BY device;

-- name: tool_error_devices
-- The devices whose agent kept retrying a failing tool: how often it was
-- told, the longest run of failures, and when first.
SELECT device,
       count(*) AS tool_error_hints,
       max(tool_error_count) AS most_failures_in_a_row,
       min(instant) AS first_told
FROM steps
WHERE tool_error
GROUP BY device
ORDER BY device;

-- name: above_to_told
-- Per device and watched field: the first reading above the watch's
-- `above`, and the first hint at or after that step (every hint tells the
-- live fields): when, and how long after.
WITH first_above AS (
    SELECT device, field, min(number) AS number
    FROM readings
    WHERE kind = 'read' AND above IS NOT NULL AND value > above
    GROUP BY device, field
), first_told AS (
    SELECT a.device, a.field, min(t.number) AS number
    FROM first_above a
    JOIN readings t ON t.device = a.device AND t.field = a.field
                   AND t.kind = 'told' AND t.number >= a.number
    GROUP BY a.device, a.field
)
SELECT a.device, a.field, r.value AS reading, r.above,
       r.instant AS above_at, t.instant AS told_at,
       date_diff('microsecond', r.instant, t.instant) / 1e6 AS seconds
FROM first_above a
JOIN readings r ON r.device = a.device AND r.field = a.field
               AND r.number = a.number AND r.kind = 'read'
LEFT JOIN first_told f ON f.device = a.device AND f.field = a.field
LEFT JOIN readings t ON t.device = f.device AND t.field = f.field
                    AND t.number = f.number AND t.kind = 'told'
ORDER BY a.device, a.field;
