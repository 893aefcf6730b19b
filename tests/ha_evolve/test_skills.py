"""The skill teacher: screened skills, retries with the reasons, the skill in the episode as a
non-trainable segment, never at evaluation; the ablation forms."""

from __future__ import annotations

import json

from ha_agents.episode import run_episode
from ha_agents.runs.evaluate import evaluate
from ha_agents.llm.fake_server import FakeOpenAIServer
from ha_agents.llm.openai_http import OpenAIClient, parse_model_spec
from ha_envs.loaders import load_suite
from ha_evolve.skills import SkillTeacher, near_answer_hint, screen, skill_library

TASK = next(t for t in load_suite("mini") if t.instance_id == "mini__ttl_cache")
GOOD = ("When an entry's lifetime ends at a deadline, treat the deadline itself as expired, and make sure "
        "that reading an entry never moves its deadline unless the policy says reads renew it.")


def test_screen_rejects_leaks_and_keeps_mechanisms():
    assert screen(GOOD, TASK).ok
    for leak, why in [("Edit ttlcache/clock.py and compare with >=.", "names a file"),
                      ("Stop _link_front from stamping the deadline.", "identifiers"),
                      ("```\nreturn self.now() >= deadline\n```", "code or diff"),
                      ("- return a > b\n+ return a >= b", "code or diff"),
                      (" ".join(["word"] * 130), "at most 120")]:
        verdict = screen(leak, TASK)
        assert not verdict.ok and any(why in r for r in verdict.reasons), (leak, verdict)


def _records():
    base = {"instance_id": TASK.instance_id, "termination": "submitted", "messages": [], "turns": 3}
    return [dict(base, run=1, resolved=False), dict(base, run=2, resolved=True)]


def test_teacher_retries_with_the_reasons_then_accepts():
    replies = ["## Contrast\nx\n## Tool use\ny\n## Skill\nChange _link_front in ttlcache/store.py.\n",
               f"## Contrast\nThe success tested the boundary.\n## Tool use\nNo test after edits.\n## Skill\n{GOOD}\n"]
    prompts = []

    def respond(body):
        prompts.append(body["messages"][0]["content"])
        return {"content": replies[len(prompts) - 1]}

    with FakeOpenAIServer(respond) as srv:
        report = SkillTeacher(OpenAIClient(parse_model_spec(f"openai:teacher@{srv.url}"))).teach(TASK, _records())
    assert report.skill == GOOD and report.attempts == 2 and len(report.rejected) == 1
    assert "one success and one failure" in prompts[0] and "REJECTED" in prompts[1] and "names a file" in prompts[1]
    assert "## Contrast" in report.report


def test_teacher_gives_up_after_three_leaks():
    with FakeOpenAIServer(lambda body: {"content": "## Skill\nLook at ttlcache/clock.py.\n"}) as srv:
        report = SkillTeacher(OpenAIClient(parse_model_spec(f"openai:t@{srv.url}"))).teach(TASK, _records())
    assert report.skill is None and report.attempts == 3 and len(report.rejected) == 3


def test_skill_is_a_non_trainable_segment_and_never_in_evaluation(tmp_path):
    rec = run_episode(TASK, "null", "h0", skill=GOOD)
    (seg,) = [m for m in rec["messages"] if m.get("source") == "skill"]
    assert GOOD in seg["content"] and seg["trainable"] is False and rec["skill"] == GOOD
    order = [m.get("source") for m in rec["messages"]]
    assert order.index("skill") == order.index("task") + 1
    evaluate([TASK], "null", out_dir=tmp_path / "e")
    (line,) = (tmp_path / "e" / "trajectories.jsonl").read_text().splitlines()
    ev = json.loads(line)
    assert ev["skill"] is None and not any(m.get("source") == "skill" for m in ev["messages"])


def test_ablation_forms():
    hint = near_answer_hint(TASK)
    assert "ttlcache/clock.py" in hint and not screen(hint, TASK).ok  # the leaking form leaks, by design
    lib = skill_library(TASK)
    assert screen(lib, TASK).ok and "edge" in lib


def test_screen_rejects_the_repositorys_names_and_paraphrases_of_the_fix():
    for leak, why in [("Check how LRUStore orders its entries.", "LRUStore"),      # a class of the repository
                      ("Make TTLCache forget entries at the deadline.", "TTLCache"),
                      ("Keep the work inside the ttlcache package.", "ttlcache"),  # its package directory
                      ("The conftest fixtures freeze time.", "conftest"),          # one of its file names
                      ("Ask the Clock whether a deadline passed.", "Clock"),       # a plain-word class, as a name
                      ("Restart the TTL separately from moving the entry.", "paraphrases identifiers of the fix"),
                      ("Keep restarting ttl apart from reordering.", "_restart_ttl"),
                      ("Do not let link front stamp anything.", "_link_front")]:
        verdict = screen(leak, TASK)
        assert not verdict.ok and any(why in r for r in verdict.reasons), (leak, verdict)


def test_screen_keeps_innocent_text():
    for text in ["Verify each class separately before trusting the whole suite.",
                 "Clock skew between reads and writes matters: compare at the boundary itself.",
                 GOOD]:
        assert screen(text, TASK).ok, (text, screen(text, TASK))


MONEY = next(t for t in load_suite("mini") if t.instance_id == "mini__invoice_rounding")
HINTS = [  # near-answer hints in plain words: no file, path, identifier or code
    ("round the amount half-up to the cent in the money helper; only that line changes", "points at where"),
    ("Round halves away from zero to whole cents in the money helper.", "points at where"),
    ("The rounding function goes through a float; make it quantise exactly.", "points at where"),
    ("Halves must go away from zero. It is a one-line change.", "bounds the edit"),
    ("Amounts drift at exact halves; the fix is in how amounts are rounded, nothing else changes.", "bounds the edit"),
    ("Use half up rounding for every amount.", "says part of a name"),
]
MECHANISMS = [  # mechanism-level skills: when the strategy applies and why, no place and no edit
    "When amounts cross from binary floating point to exact decimals, halves can drift; keep the arithmetic exact "
    "until the final rounding step, apply the rule the specification states, and check inputs that land on a half.",
    "When a reported total differs by the smallest unit, reproduce it with the exact inputs from the report, find "
    "the first intermediate value that differs, and fix the cause rather than adjusting the total.",
]


def test_the_screen_reads_near_answer_hints_for_meaning():
    """Hints that name nothing still say where the fix goes or how small it is: the meaning check
    rejects them (each for its reason) while mechanism skills pass on this task and on every task."""
    from ha_evolve.skills import SKILL_LIBRARY, points_at_the_fix

    for hint, why in HINTS:
        verdict = screen(hint, MONEY)
        assert not verdict.ok and any(why in r for r in points_at_the_fix(hint, MONEY)), (hint, verdict)
    for skill in MECHANISMS:
        assert screen(skill, MONEY).ok, screen(skill, MONEY)
    for task in load_suite("mini"):
        for skill in [*SKILL_LIBRARY.values(), *MECHANISMS[1:]]:
            assert screen(skill, task).ok, (task.instance_id, skill, screen(skill, task))
    assert screen(GOOD, TASK).ok and points_at_the_fix("The order of function calls matters.", MONEY) == []
