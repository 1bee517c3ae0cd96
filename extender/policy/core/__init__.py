"""The floor of the policy: the frozen views and snapshot it decides on, resources and capacity, settings.

Nothing here knows about gangs, ranks, preemption or scaling: every other sub-package of the policy imports
from `core`, and `core` imports from none of them.
"""
