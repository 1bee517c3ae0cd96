"""`tfjob-extender replay`: a cluster's own TFJob history through the simulator, against the default scheduler
and the baselines. `reading` gets the Nodes and TFJobs (a `/debug/state` dump, or the API server, read-only);
`history` turns them into a simulator `Workload` (pure); `comparison` runs `tfjob-extender simulate`'s
comparison on it over seeds and words the gain; `command` holds the flags, the output and the exit codes.
"""
