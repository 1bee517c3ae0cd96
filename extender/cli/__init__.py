"""The `tfjob-extender` command line: `args` parses the arguments and builds `Settings`, `serving` runs the
extender's HTTP service (verbs, observe listener, loops in-process or in shadow mode), `loop_process` runs the
preemption loop and the scaler in a process of their own. `extender.__main__` only dispatches. No policy lives here.
"""
