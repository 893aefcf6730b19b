"""Harness-R1: harness editing as a learned, outcome-verified skill.

- ``patches``: the patch format (``harnessadapt-patch-v1``), parsed and applied to a HarnessSpec;
- ``harness_edit``: the editing environment (``ha_evolve/HarnessEdit-v0``): a failure batch of a frozen
  target in, a patch out, the target's paired success gain as the reward;
- ``engineer``: the engineer's training items, SFT data, evaluation, ablations and baselines;
- ``verl_engineer``: verl's one-turn agent loop for the engineer (needs verl).

It builds on the rest of ``ha_evolve`` (the proposers' catalogue, the summaries) and nothing there
imports it."""
