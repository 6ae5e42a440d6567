"""Runs the fleet store's queries (docs/fleet.sql) with DuckDB.

    python3 tests/reference/fleet_sql.py docs/fleet.sql STORE

The file's statements run in order from STORE's parent directory, with
STORE seen as `store/` (a symbolic link when it has another name), as the
file says to run it. Prints one JSON object: each named query's rows (a
list of objects, column by name; timestamps as ISO 8601 text).
"""

import decimal
import json
import os
import sys
import tempfile

import duckdb


def statements(text):
    """The file's statements, each with the name of the `-- name:` line
    before it (None for the rest). Whole-line comments are left out; a
    statement ends with a line that ends with `;`."""
    name, lines, out = None, [], []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-- name:"):
            name = stripped[len("-- name:"):].strip()
            continue
        if stripped.startswith("--") or not stripped:
            continue
        lines.append(line)
        if stripped.endswith(";"):
            out.append((name, "\n".join(lines)))
            name, lines = None, []
    if lines:
        out.append((name, "\n".join(lines)))
    return out


def value(v):
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def main():
    sql_path, store = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(sql_path, encoding="utf-8") as f:
        text = f.read()
    if os.path.basename(store) == "store":
        workdir = os.path.dirname(store)
    else:
        workdir = tempfile.mkdtemp(prefix="fleet-sql-")
        os.symlink(store, os.path.join(workdir, "store"))
    os.chdir(workdir)
    con = duckdb.connect()
    answers = {}
    for name, statement in statements(text):
        # A relation for a query, None for the views' statements.
        relation = con.sql(statement)
        if name is None:
            continue
        columns = relation.columns
        answers[name] = [dict(zip(columns, map(value, row))) for row in relation.fetchall()]
    json.dump(answers, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
