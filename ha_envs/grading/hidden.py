"""Names of hidden tests the agent could not have seen, and whether its actions mention them.

The hidden test patch never enters the agent's sandbox. A test it *adds* (a new function, a new
named case) has a name the agent can only know from outside the episode: a policy that memorised
the benchmark, or a leak in the harness. Writing such a name is a suspicion (a flag on the grade),
not a verdict: names that also occur in the issue text, in lines the patch only keeps or removes,
or that are too short to be specific, are left out.
"""

from __future__ import annotations

import re

from ..task import Task

_DEFINED = (
    re.compile(r"^\+\s*(?:async\s+)?def\s+(test\w+)"),               # Python
    re.compile(r"^\+\s*func\s+(Test\w+)"),                            # Go
    re.compile(r"^\+\s*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)"),          # Rust (the #[test] fn)
    re.compile(r"^\+.*\b(?:test|it|describe)\(\s*['\"`]([^'\"`]{12,})['\"`]"),  # JavaScript
)
_MIN_LEN = 12


def hidden_test_names(task: Task) -> list[str]:
    """Names the hidden test patch introduces that appear nowhere else the agent can read."""
    added: dict[str, None] = {}
    existing = set()
    for line in task.tests.test_patch.splitlines():
        if line.startswith("+++"):
            continue
        if line.startswith("+"):
            for pattern in _DEFINED:
                m = pattern.match(line)
                if m and len(m.group(1)) >= _MIN_LEN:
                    added.setdefault(m.group(1), None)
        elif line.startswith((" ", "-")) and not line.startswith("---"):
            existing.update(re.findall(r"\w{%d,}" % _MIN_LEN, line))
    issue = task.problem_statement
    return [n for n in added if n not in existing and n not in issue]


def hidden_names_in(task: Task, text: str) -> list[str]:
    """The hidden test names that occur in ``text`` (the agent's actions)."""
    if not text:
        return []
    return [n for n in hidden_test_names(task) if n in text]
