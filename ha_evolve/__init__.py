"""ha_evolve: harness evolution (proposers, checks, the dual-rate gate, the epoch schedule, skills)
and Harness-R1's harness-editing environment, ``gymnasium.make("ha_evolve/HarnessEdit-v0", ...)``."""

import gymnasium

if "ha_evolve/HarnessEdit-v0" not in gymnasium.registry:
    gymnasium.register(id="ha_evolve/HarnessEdit-v0", entry_point="ha_evolve.harness_r1.harness_edit:make_harness_edit")
