"""Why an episode ended: one enum for the env, the agent loop, the runs and every reader of a record.

A member is a ``str`` (its value), so ``info["termination"]``, a record's ``termination`` field and
``trajectories.jsonl`` keep the plain names they always had (``"max_turns"``), old files read back
unchanged, and ``Termination(name)`` turns a name read from anywhere into the member (an unknown
name is a ``ValueError`` naming the known ones).

Two properties decide what an ending means for learning (``ha_agents.records.classify`` reads them):

- ``masked``: an infrastructure fault (the sandbox, the grader's environment, the model server, the
  machine holding the env, or a bug): no verdict, the sample carries no gradient;
- ``truncated``: the episode ran out of budget: graded as it stands, dropped by GRPO (the paper)
  unless a trainer keeps it.

Every other ending is the agent's doing and is graded (``submitted``, ``format_errors``,
``verdict_tampered``; Harness-R1's engineer episode ends ``patch_scored``, ``invalid_patch`` or
``no_op_patch``).
"""

from __future__ import annotations

from enum import Enum


class Termination(str, Enum):
    """An episode's ending. Compares and hashes as its value (``Termination.MAX_TURNS == "max_turns"``)."""

    SUBMITTED = "submitted"
    """The agent submitted; graded."""
    MAX_TURNS = "max_turns"
    """The harness's turn cap was reached (truncated)."""
    CONTEXT_LIMIT = "context_limit"
    """The next prompt would not fit the model's context (truncated; ended by the agent loop)."""
    AGENT_TIMEOUT = "agent_timeout"
    """The episode's wall-clock budget ran out (truncated)."""
    FORMAT_ERRORS = "format_errors"
    """Too many unusable messages in a row (the agent's doing: reward 0, not graded)."""
    VERDICT_TAMPERED = "verdict_tampered"
    """The grader found the verdict forged (canaries, exit status, the watched run): reward 0, not masked."""
    SANDBOX_ERROR = "sandbox_error"
    """The sandbox failed (a dead container, a killed shell): masked."""
    GRADING_ERROR = "grading_error"
    """The grader's environment failed (the base does not start either): masked."""
    MODEL_ERROR = "model_error"
    """The model server failed after its retries: masked."""
    ENV_LOST = "env_lost"
    """The machine holding the env died with it (a remote env's Ray actor, its node or raylet): masked;
    a run gives the episode one more try elsewhere."""
    INTERNAL_ERROR = "internal_error"
    """Nothing planned for it (a bug, a broken task): masked, with the error, so the run goes on."""
    PATCH_SCORED = "patch_scored"
    """Harness-R1: the engineer's patch was applied and scored against the target."""
    INVALID_PATCH = "invalid_patch"
    """Harness-R1: the engineer's patch did not parse, apply or validate (its doing: reward 0)."""
    NO_OP_PATCH = "no_op_patch"
    """Harness-R1: the engineer's patch changed nothing (its doing: reward 0)."""

    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__

    @property
    def masked(self) -> bool:
        return self in _MASKED

    @property
    def truncated(self) -> bool:
        return self in _TRUNCATED

    @classmethod
    def _missing_(cls, value: object) -> "Termination":
        raise ValueError(f"unknown termination {value!r}; known: {', '.join(t.value for t in cls)}")


_MASKED = frozenset({Termination.SANDBOX_ERROR, Termination.GRADING_ERROR, Termination.MODEL_ERROR,
                     Termination.ENV_LOST, Termination.INTERNAL_ERROR})
_TRUNCATED = frozenset({Termination.MAX_TURNS, Termination.CONTEXT_LIMIT, Termination.AGENT_TIMEOUT})

MASKED = frozenset(t.value for t in _MASKED)
"""The names of the masked endings (plain strings: ``record["termination"] in MASKED``)."""
TRUNCATED = frozenset(t.value for t in _TRUNCATED)
"""The names of the truncated endings."""

__all__ = ["MASKED", "TRUNCATED", "Termination"]
