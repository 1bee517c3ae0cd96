"""Elastic TFJobs: growing workers into idle room (`scale_out`), moving them onto their PS nodes
(`consolidation`), and the scaler's plan as `filter` reads it from the TFJob (`workerplan`). Imports `rank`,
`gang` and `core`; never preemption.
"""
