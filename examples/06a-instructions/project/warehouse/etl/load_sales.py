"""Load one day of the billing export into analytics.sales (run every night)."""

import sys

from warehouse_db import connect, read_export

day = sys.argv[1]
rows = read_export(day)
with connect() as db:
    db.executemany("INSERT INTO analytics.sales VALUES (?, ?, ?, ?)", rows)
