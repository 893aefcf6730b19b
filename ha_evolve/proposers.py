"""Harness proposers: read the preparation trajectories and the current spec, return a candidate
spec with a written diagnosis.

- ``rule``: a mutator that needs no model; it adds, removes or re-parameterises catalogue parts,
  guided by the trajectory statistics (many long outputs -> a condenser; untested submits -> a
  submit gate; ...), one change per proposal, never one tried before.
- ``llm``: a teacher model (any ``LLMClient``) reads the statistics, the digests within a budget and
  the current spec (prompt: ``prompts/harness_teacher.md``) and writes the whole changed spec, which
  may add script tools and rule hooks.
- ``cli``: an external coding agent runs in a work directory holding ``harness.yaml`` and the
  trajectory summaries (``prompts/cli_teacher.md``); the edited ``harness.yaml`` is read back.

Every proposer has the same signature (``Proposer.propose``) and is registered by name.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol

import yaml

from ha_envs.harness import HOOKS, TOOLS, HarnessSpec, HarnessSpecError
from ha_envs.harness.custom import MESSAGE_FIELDS, TRIGGERS
from ha_envs.harness.spec import Component

from .summary import TrajectoryStats, digest_all, trajectory_stats

PROMPTS = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class Proposal:
    """One proposer's answer: a candidate (None when it produced none) and why."""

    proposer: str
    candidate: HarnessSpec | None
    diagnosis: str
    error: str = ""
    raw: str = ""
    """The teacher's whole reply (LLM, CLI), for the log."""
    exhausted: bool = False
    """No candidate because the proposer has nothing left to offer (not because one was invalid):
    the schedule stops there."""


@dataclass(frozen=True)
class ProposerOptions:
    """What the proposers may need; each uses its own fields."""

    teacher: str = ""
    """``llm``: the teacher model spec (``openai:NAME@URL``, ...)."""
    command: str = ""
    """``cli``: the command run in the work directory (e.g. ``claude -p "$(cat PROMPT.md)"``)."""
    budget_chars: int = 24000
    """How much trajectory text a teacher reads (about 4 characters a token)."""
    timeout_s: float = 1800.0
    """``cli``: how long the external agent may take."""


class Proposer(Protocol):
    name: str

    def propose(self, current: HarnessSpec, records: list[dict[str, Any]], tried: set[str]) -> Proposal:
        """A candidate for ``current`` given its preparation trajectories; ``tried``: spec hashes
        proposed before (a proposer must not offer one again)."""


PROPOSERS: dict[str, Callable[[ProposerOptions], Proposer]] = {}


def register_proposer(name: str) -> Callable[[Callable[[ProposerOptions], Proposer]], Callable[[ProposerOptions], Proposer]]:
    def deco(factory: Callable[[ProposerOptions], Proposer]) -> Callable[[ProposerOptions], Proposer]:
        if name in PROPOSERS:
            raise ValueError(f"a proposer named {name!r} is already registered")
        PROPOSERS[name] = factory
        return factory
    return deco


def make_proposer(name: str, options: ProposerOptions | None = None) -> Proposer:
    if name not in PROPOSERS:
        raise ValueError(f"unknown proposer {name!r}; available: {', '.join(sorted(PROPOSERS))}")
    return PROPOSERS[name](options or ProposerOptions())


def _named(spec: HarnessSpec, parent: HarnessSpec, how: str) -> HarnessSpec:
    return replace(spec, name=f"{parent.name.split('+')[0]}+{spec.hash[:8]}", description=how)


# -- rule-based ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutation:
    why: Callable[[TrajectoryStats], str | None]
    """The evidence for it in the statistics (None: it does not apply)."""
    apply: Callable[[HarnessSpec, TrajectoryStats], HarnessSpec | None]
    """The change to the current spec (None: nothing to change), given the same statistics."""


Apply = Callable[[HarnessSpec, TrajectoryStats], "HarnessSpec | None"]


def _add_hook(name: str, **params: Any) -> Apply:
    def apply(spec: HarnessSpec, st: TrajectoryStats) -> HarnessSpec | None:
        if name in spec.hook_names:
            return None
        return replace(spec, hooks=spec.hooks + (Component(name, dict(params)),))
    return apply


def with_tools(spec: HarnessSpec, names: list[str]) -> HarnessSpec | None:
    new = [n for n in names if n not in spec.tool_names]
    if not new:
        return None
    tools = list(spec.tools)
    at = next((i for i, c in enumerate(tools) if c.name == "submit"), len(tools))
    tools[at:at] = [Component(n) for n in new]
    return replace(spec, tools=tuple(tools))


def _add_tools(*names: str) -> Apply:
    def apply(spec: HarnessSpec, st: TrajectoryStats) -> HarnessSpec | None:
        return with_tools(spec, list(names))
    return apply


def _called_but_missing(spec: HarnessSpec, st: TrajectoryStats) -> list[str]:
    """Catalogue tools the policy called that ``spec`` lacks, most called first (a name outside the
    catalogue is the policy's invention: nothing to add)."""
    return [n for n, _ in sorted(st.unknown_tools.items(), key=lambda kv: (-kv[1], kv[0]))
            if n in TOOLS and n not in spec.tool_names]


def _missing_tools_evidence(st: TrajectoryStats) -> str | None:
    known = {n: c for n, c in st.unknown_tools.items() if n in TOOLS}
    if not known:  # one call is evidence enough to try: the policy expects a tool the catalogue has; the gate decides
        return None
    calls = ", ".join(f"{n} ({c}x)" for n, c in sorted(known.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"the policy called tools this harness lacks: {calls} over {st.n} trajectories: offer them"


def _add_missing_tools(spec: HarnessSpec, st: TrajectoryStats) -> HarnessSpec | None:
    return with_tools(spec, _called_but_missing(spec, st))


def _retune(hook: str, key: str, scale: float) -> Apply:
    def apply(spec: HarnessSpec, st: TrajectoryStats) -> HarnessSpec | None:
        hooks = list(spec.hooks)
        for i, c in enumerate(hooks):
            if c.name == hook and c.define is None:
                cur = {**HOOKS[hook].defaults, **c.params}[key]
                new: Any = ([max(1, int(round(v * scale))) for v in cur] if isinstance(cur, (list, tuple))
                            else max(1, int(round(cur * scale))))  # budget_reminder's turns_left is a list
                if new == cur:
                    return None
                hooks[i] = Component(hook, {**c.params, key: new})
                return replace(spec, hooks=tuple(hooks))
        return None
    return apply


def _when(field_name: str, threshold: float, text: str, below: bool = False) -> Callable[[TrajectoryStats], str | None]:
    """Evidence that holds when the statistic is at least ``threshold`` (``below``: under it)."""
    def why(st: TrajectoryStats) -> str | None:
        value = getattr(st, field_name)
        return text.format(v=value) if (value < threshold) == below else None
    return why


RULES: tuple[Mutation, ...] = (
    Mutation(_missing_tools_evidence, _add_missing_tools),
    Mutation(_when("test_runs_per_traj", 1.0, "only {v:.2f} test runs per trajectory: add a test runner and a quick check",
                   below=True),
             _add_tools("run_tests", "run_check")),
    Mutation(_when("untested_submits", 0.3, "{v:.0%} of submissions came with no test after the last edit: gate them"),
             _add_hook("submit_gate")),
    Mutation(_when("untested_submits", 0.3, "{v:.0%} of submissions untested: remind to verify"),
             _add_hook("verification_reminder")),
    Mutation(_when("long_outputs_per_traj", 1.0, "{v:.1f} long tool outputs per trajectory crowd the context: condense them"),
             _add_hook("long_output_condenser")),
    Mutation(_when("repeated_actions_per_traj", 0.5, "{v:.1f} repeated actions per trajectory: alert on repeats"),
             _add_hook("repeated_action_alert")),
    Mutation(_when("repeated_actions_per_traj", 0.5, "repeated actions: detect stuck loops"),
             _add_hook("stuck_detector")),
    Mutation(_when("truncated", 0.2, "{v:.0%} of trajectories ran out of turns: show the budget"),
             _add_hook("budget_reminder")),
    Mutation(_when("never_edited", 0.3, "{v:.0%} of trajectories never changed a file: give editing tools"),
             _add_tools("read_file", "edit_file", "create_file")),
    Mutation(_when("tool_errors_per_traj", 1.0, "{v:.1f} failed tool calls per trajectory: let the agent see and undo its changes"),
             _add_tools("view_diff", "restore_file")),
    Mutation(_when("truncated", 0.2, "still {v:.0%} truncated: remind about the budget earlier"),
             _retune("budget_reminder", "turns_left", 2.0)),
)


class RuleMutator:
    """One catalogue change per proposal, the first whose evidence holds and which is new."""

    name = "rule"

    def propose(self, current: HarnessSpec, records: list[dict[str, Any]], tried: set[str]) -> Proposal:
        stats = trajectory_stats(records)
        for rule in RULES:
            why = rule.why(stats)
            if why is None:
                continue
            cand = rule.apply(current, stats)
            if cand is None:
                continue
            try:
                cand.validate()
            except HarnessSpecError:
                continue
            if cand.hash in tried or cand.hash == current.hash:
                continue
            return Proposal(self.name, _named(cand, current, why), why)
        return Proposal(self.name, None, "no rule applies that has not been tried",
                        error="no candidate: the statistics call for nothing new", exhausted=True)


@register_proposer("rule")
def _rule(options: ProposerOptions) -> Proposer:
    return RuleMutator()


# -- teachers ------------------------------------------------------------------------------------

def catalogue_text() -> dict[str, str]:
    return {
        "catalogue_tools": ", ".join(f"{n}{json.dumps(t.options) if t.options else ''}" for n, t in sorted(TOOLS.items())),
        "catalogue_hooks": ", ".join(f"{n} [{'/'.join(h.points)}]" for n, h in sorted(HOOKS.items())),
        "trigger_fields": "; ".join(f"{k} ({t.__name__}, at {'/'.join(p)}): {d}" for k, (t, p, d) in TRIGGERS.items()),
        "message_fields": ", ".join("{" + f + "}" for f in MESSAGE_FIELDS),
    }


def teacher_prompt(current: HarnessSpec, records: list[dict[str, Any]], budget_chars: int) -> str:
    stats = trajectory_stats(records)
    text = (PROMPTS / "harness_teacher.md").read_text()
    return text.format(spec_yaml=yaml.safe_dump(current.to_dict(), sort_keys=False).strip(), n=stats.n,
                       stats=json.dumps(stats.to_dict(), indent=1), digests=digest_all(records, budget_chars),
                       **catalogue_text())


def parse_reply(reply: str, current: HarnessSpec, proposer: str, tried: set[str]) -> Proposal:
    """A teacher's reply -> a Proposal: the last ```yaml block is the whole candidate spec."""
    blocks = re.findall(r"```ya?ml\s*\n(.*?)```", reply, re.S)
    diagnosis = reply.split("## Harness")[0].replace("## Diagnosis", "").strip()[:4000]
    if not blocks:
        return Proposal(proposer, None, diagnosis, "the reply holds no ```yaml block with a harness", reply)
    try:
        data = yaml.safe_load(blocks[-1])
        cand = HarnessSpec.from_dict(data, origin="the teacher's harness").validate()
    except (yaml.YAMLError, HarnessSpecError) as exc:
        return Proposal(proposer, None, diagnosis, f"the proposed harness is invalid: {exc}", reply)
    if cand.hash == current.hash or cand.hash in tried:
        return Proposal(proposer, None, diagnosis, "the proposed harness is one already tried", reply)
    return Proposal(proposer, _named(cand, current, diagnosis[:200]), diagnosis, "", reply)


@dataclass
class LLMTeacher:
    """A teacher model writes the changed spec in one call."""

    client: Any
    budget_chars: int = 24000
    name: str = field(default="llm", init=False)

    def propose(self, current: HarnessSpec, records: list[dict[str, Any]], tried: set[str]) -> Proposal:
        prompt = teacher_prompt(current, records, self.budget_chars)
        try:
            reply = self.client.complete([{"role": "user", "content": prompt}], []).text
        except Exception as exc:  # noqa: BLE001 - a teacher failure is a round without a candidate
            return Proposal(self.name, None, "", f"the teacher call failed: {exc}")
        return parse_reply(reply, current, self.name, tried)


@register_proposer("llm")
def _llm(options: ProposerOptions) -> Proposer:
    if not options.teacher:
        raise ValueError("the llm proposer needs a teacher model (--teacher openai:NAME@URL)")
    from ha_agents.llm.registry import make_model

    return LLMTeacher(make_model(options.teacher), options.budget_chars)


@dataclass
class CLITeacher:
    """An external coding agent edits ``harness.yaml`` in a work directory."""

    command: str
    budget_chars: int = 24000
    timeout_s: float = 1800.0
    name: str = field(default="cli", init=False)

    def propose(self, current: HarnessSpec, records: list[dict[str, Any]], tried: set[str]) -> Proposal:
        with tempfile.TemporaryDirectory(prefix="ha-cli-teacher-") as tmp:
            work = Path(tmp)
            current.save(work / "harness.yaml")
            stats = trajectory_stats(records)
            (work / "trajectories.md").write_text("# Statistics\n\n```json\n" + json.dumps(stats.to_dict(), indent=1)
                                                  + "\n```\n\n# Trajectories\n\n" + digest_all(records, self.budget_chars))
            cat = catalogue_text()
            (work / "components.md").write_text("\n\n".join(f"## {k}\n{v}" for k, v in cat.items()))
            (work / "PROMPT.md").write_text((PROMPTS / "cli_teacher.md").read_text())
            try:
                proc = subprocess.run(self.command, shell=True, cwd=work, capture_output=True, timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                return Proposal(self.name, None, "", f"the teacher command ran past {self.timeout_s:g}s")
            out = (proc.stdout + proc.stderr).decode(errors="replace")[-4000:]
            if proc.returncode != 0:
                return Proposal(self.name, None, "", f"the teacher command exited {proc.returncode}: {out[-500:]}", out)
            diagnosis = (work / "diagnosis.md").read_text()[:4000] if (work / "diagnosis.md").is_file() else ""
            try:
                cand = HarnessSpec.load(work / "harness.yaml").validate()
            except HarnessSpecError as exc:
                return Proposal(self.name, None, diagnosis, f"the edited harness is invalid: {exc}", out)
        if cand.hash == current.hash or cand.hash in tried:
            return Proposal(self.name, None, diagnosis, "the harness was left unchanged (or was tried before)", out)
        return Proposal(self.name, _named(cand, current, diagnosis[:200]), diagnosis, "", out)


@register_proposer("cli")
def _cli(options: ProposerOptions) -> Proposer:
    if not options.command:
        raise ValueError("the cli proposer needs a command (--teacher-command '...')")
    shlex.split(options.command)  # a malformed command fails here, not after the rollouts
    return CLITeacher(options.command, options.budget_chars, options.timeout_s)
