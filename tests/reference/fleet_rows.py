"""What a fleet store holds, counted by DuckDB (`cargo xtask fleet`'s check).

    python3 tests/reference/fleet_rows.py STORE

Prints one JSON object, the shape `envaware-sim fleet --rows-json` writes
with the store's own reader: the rows, the rows stored twice (a device's
step number more than once), and per device its rows, its rows stored
twice, its hints per dimension, and each row's number and `written_at`
(microseconds since the epoch).
"""

import json
import os
import sys

import duckdb

DIMENSIONS = ["time", "tasks", "context_length", "tool_error", "watch"]


def main():
    store = os.path.abspath(sys.argv[1])
    con = duckdb.connect()
    files = os.path.join(store, "steps", "*", "*", "*.parquet")
    # A view cannot take a parameter: the path goes in as a quoted literal.
    quoted = "'" + files.replace("'", "''") + "'"
    con.execute(
        f"CREATE VIEW steps AS SELECT * FROM read_parquet({quoted}, hive_partitioning = true)"
    )
    rows, distinct = con.execute(
        "SELECT count(*), count(DISTINCT (device, number)) FROM steps"
    ).fetchone()
    counts = ", ".join(
        f"count(*) FILTER (WHERE hint IS NOT NULL AND {d})" for d in DIMENSIONS
    )
    devices = {}
    for row in con.execute(
        "SELECT device, count(*), count(DISTINCT number), "
        f"count(*) FILTER (WHERE hint IS NOT NULL), {counts} "
        "FROM steps GROUP BY device ORDER BY device"
    ).fetchall():
        device, n, numbers, hints = row[:4]
        devices[device] = {
            "rows": n,
            "duplicates": n - numbers,
            "hints": dict(zip(["all"] + DIMENSIONS, [hints] + list(row[4:]))),
            "written": [],
        }
    for device, number, written in con.execute(
        "SELECT device, number, epoch_us(written_at) FROM steps ORDER BY device, number"
    ).fetchall():
        devices[device]["written"].append([number, written])
    answer = {
        "reader": f"DuckDB {duckdb.__version__}",
        "rows": rows,
        "duplicates": rows - distinct,
        "devices": devices,
    }
    json.dump(answer, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
