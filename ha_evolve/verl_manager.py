"""verl's ``AgentLoopManager`` with HarnessAgentLoop's co-evolution (``ha_evolve.verl_coevolution``),
named by verl's own setting ``actor_rollout_ref.rollout.agent.agent_loop_manager_class`` (needs
the verl extra; the plan and the epoch start live in ``verl_coevolution``, importable without it)."""

from __future__ import annotations

from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopManager

from .verl_coevolution import MANAGER_CLASS, PLAN_KEY, VerlCoEvolvePlan, VerlEpochStart


class CoEvolvingAgentLoopManager(AgentLoopManager):
    """verl's manager, with the epoch start before each epoch's first training step's rollouts.

    verl's sync trainer (``RayPPOTrainer.fit``) calls ``generate_sequences`` once per step, after
    the weights of the step before were synced to the rollout servers; validation calls (``meta_info
    validate``) pass straight through."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        path = (config.get(PLAN_KEY) or {}).get("coevolution")
        if not path:
            raise ValueError(f"{MANAGER_CLASS} needs the co-evolution plan: +{PLAN_KEY}.coevolution=PATH "
                             "(ha train --backend verl --evolve writes it)")
        total = int(config.trainer.get("total_training_steps") or 0)
        workers = int(config.actor_rollout_ref.rollout.agent.num_workers)
        self.epoch_start = VerlEpochStart(VerlCoEvolvePlan.load(path), self._generate, total, workers=workers)

    def _generate(self, batch: Any) -> Any:
        """verl's own dispatch to the agent-loop workers (no epoch start): evolution's rollouts."""
        return AgentLoopManager.generate_sequences(self, batch)

    def generate_sequences(self, prompts: Any) -> Any:
        if not prompts.meta_info.get("validate", False) and "global_steps" in prompts.meta_info:
            self.epoch_start.at_step(int(prompts.meta_info["global_steps"]))
        return self._generate(prompts)


__all__ = ["CoEvolvingAgentLoopManager"]
