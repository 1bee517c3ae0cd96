"""Which gang goes first: KOD2 weights and size classes (`weights`), each gang's summary (`gang_summary`) and
the queue of them (`queue`), ranks (`ranking`), whether a gang may start now (`admission`, `backfill`), what
a job waits for (`standing`, `jobstates`) and half-placed gangs (`partial`). Imports `gang` and `core`.
"""
