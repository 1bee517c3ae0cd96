"""`tfjob-extender preflight`: a platform team's first questions about an install, answered from the API server.

The checks are pure (`checks`, `rights`, `webhook`: the objects read in, findings out, testable without a
cluster); `reading` is the thin part that asks the API server for those objects; `command` parses the flags,
prints one line per finding (or JSON) and turns the findings into the exit code.
"""
