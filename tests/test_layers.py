"""The packages import one way: tasks -> sandbox -> grading -> env -> harness -> make() -> agents ->
evolution -> CLI. Read from the source (function-level imports included, since a lazy import is
still a dependency), so a new circle fails here rather than at some user's first import order."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ha_envs", "ha_agents", "ha_evolve", "ha_cli")
LAYERS = [  # lowest first; a module may import its own layer's modules and any layer below
    ("tasks", ("ha_envs.task", "ha_envs.actions", "ha_envs.messages", "ha_envs.loaders", "ha_envs.signals",
               "ha_envs.termination")),
    ("sandbox core", ("ha_envs.sandbox.base", "ha_envs.sandbox.shell", "ha_envs.sandbox.daemon",
                      "ha_envs.sandbox.limits", "ha_envs.sandbox.reaper",
                      "ha_envs.sandbox.live")),
    ("provisioning", ("ha_envs.sandbox.provision",)),
    ("sandbox", ("ha_envs.sandbox",)),
    ("grading", ("ha_envs.grading", "ha_envs.swe_datasets", "ha_envs.validate", "ha_envs.harbor")),
    ("env", ("ha_envs.env",)),
    ("harness", ("ha_envs.harness",)),
    ("make", ("ha_envs.factory", "ha_envs")),
    # ha_agents: the wings below the loop, the loop, then what runs many episodes
    ("agents: chat", ("ha_agents.chat",)),
    ("agents: llm", ("ha_agents.llm",)),
    ("agents: records", ("ha_agents.records",)),
    ("agents: loop", ("ha_agents.loop", "ha_agents.episode")),
    ("agents: cluster", ("ha_agents.cluster",)),
    ("agents: runs", ("ha_agents.runs",)),
    ("agents: gateway", ("ha_agents.gateway",)),
    ("agents: train", ("ha_agents.train",)),
    ("agents: adapters", ("ha_agents.adapters",)),
    ("agents", ("ha_agents",)),
    ("evolution", ("ha_evolve",)),
    ("evolution: Harness-R1", ("ha_evolve.harness_r1",)),
    ("cli", ("ha_cli",)),
]


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            rel = p.relative_to(ROOT)
            if "suites" in rel.parts:  # task data (the bundled repositories), not the library
                continue
            name = ".".join(rel.with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = p
    return mods


def _graph() -> dict[str, set[str]]:
    mods = _modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            deps |= {k for t in targets if (k := known(t)) and k != mod}
        graph[mod] = deps
    return graph


def _layer(mod: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (rank, len(p))
    assert best is not None, f"{mod} is in no layer: add it to LAYERS"
    return best[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_layers_import_downward_only():
    upward = []
    for mod, deps in sorted(_graph().items()):
        for dep in sorted(deps):
            if _layer(dep) > _layer(mod):
                upward.append(f"{mod} ({LAYERS[_layer(mod)][0]}) imports {dep} ({LAYERS[_layer(dep)][0]})")
    assert upward == []


def test_the_checker_sees_a_circle():
    """The checker itself must catch the kinds of circle it guards against."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _layer("ha_envs.sandbox.docker") < _layer("ha_envs.grading.grader") < _layer("ha_envs.env")
    assert _layer("ha_envs.env") < _layer("ha_envs.harness.wrappers") < _layer("ha_envs.factory")
    assert _layer("ha_envs.sandbox.base") < _layer("ha_envs.sandbox.provision.pyenv") < _layer("ha_envs.sandbox.local")
    assert _layer("ha_agents.chat.template") < _layer("ha_agents.loop") < _layer("ha_agents.runs.rollouts")
    assert _layer("ha_agents.runs.rollouts") < _layer("ha_agents.train.driver") < _layer("ha_agents")
    assert _layer("ha_evolve.schedule") < _layer("ha_evolve.harness_r1.engineer") < _layer("ha_cli.main")


def test_no_library_function_is_over_80_lines():
    """A function a reader must hold in their head at once stays short (the bundled tasks' code is data)."""
    long = []
    for mod, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{mod}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert long == []
