"""The service's settings, declared once each (`Settings` and the groups it holds).

- `settings`: the root `Settings`, and the `LeaderElectionSettings` both loops share;
- `listeners`: each listener's `ListenerLimits` and `AuthSettings`;
- `rules`: the rules the policy's vocabulary lacks (strings, paths, repeated words), `group` and `SettingsError`;
- `tree`: every declared leaf with its flag and file key, the config file's reader, `build`;
- `documents`: the chart's values schema and the settings reference printed from the declarations.

The policy's own settings (`PolicySettings`) and the loops' (`PreemptionLoopSettings`, `ScalerLoopSettings`)
live beside the code that reads them and are declared the same way; `Settings` holds them as groups. The
names below are what the rest of the program imports.
"""

from extender.config.listeners import OBSERVE_LIMITS, VERB_LIMITS, AuthSettings, ListenerLimits
from extender.config.rules import SettingsError
from extender.config.settings import LeaderElectionSettings, Settings
from extender.config.tree import load_config_file

__all__ = [
    "OBSERVE_LIMITS",
    "VERB_LIMITS",
    "AuthSettings",
    "LeaderElectionSettings",
    "ListenerLimits",
    "Settings",
    "SettingsError",
    "load_config_file",
]
