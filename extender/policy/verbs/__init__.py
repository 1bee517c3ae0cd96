"""The extender's verbs as pure functions: `filter` (`filtering`) and `prioritize` (`scoring`); `preempt` is
`preemption.verb`. The top of the policy: it may import every other sub-package, none imports it.
"""
