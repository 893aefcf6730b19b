"""The typed episode record: round trips, older files, and the one rule every reader uses."""

from __future__ import annotations

import json

import pytest

from ha_agents.records.episode_record import SCHEMA_VERSION, EpisodeRecord, classify
from ha_agents.records.log import JsonlLog, append_jsonl, read_jsonl
from ha_agents.runs.evaluate import summarize
from ha_agents.train.base import BatchPolicy, prepare_batch
from ha_agents.train.grpo import Rollout, rates
from ha_evolve.summary import trajectory_stats

# A line as the writer of schema 1 left it (before the typed record): `policy` beside `model`, no
# `schema`, and a field this version does not know.
SCHEMA_1 = {"instance_id": "mini__ttl_cache", "benchmark": "mini", "policy": "oracle", "model": "oracle",
            "harness": "h1", "harness_hash": "8c770daf53c8f640", "reward": 1.0, "resolved": True,
            "termination": "submitted", "mask_sample": False, "error": "", "turns": 3, "tool_counts": {"bash": 2},
            "hooks": {}, "edits": 1, "test_runs": 0, "delivery": None, "timings": {"episode_s": 1.2}, "patch": "diff",
            "grade": {"resolved": True}, "flags": [], "messages": [], "model_calls": [], "token_ids": [],
            "loss_mask": [], "logprobs": [], "token_error": "", "skill": None, "seed": 7, "duration_s": 1.3,
            "grader_version": "9", "dataset": "suite:mini", "grading_scripts": None, "task_fingerprint": "abc",
            "run": 2, "demonstration": True}


def test_a_schema_1_line_reads_and_round_trips():
    rec = EpisodeRecord.from_json(SCHEMA_1)
    assert rec.schema == 1 and rec.model == "oracle" and rec.run == 2 and rec.extra == {"demonstration": True}
    again = EpisodeRecord.from_json(json.loads(json.dumps(rec.to_json())))
    assert again == rec
    out = rec.to_json()
    assert out["policy"] == "oracle" and out["demonstration"] is True  # old readers and unknown fields keep working
    assert set(SCHEMA_1) <= set(out)


def test_new_records_carry_the_schema_and_reject_non_records():
    assert EpisodeRecord(instance_id="x").to_json()["schema"] == SCHEMA_VERSION
    with pytest.raises(ValueError, match="not an episode record"):
        EpisodeRecord.from_json({"update": 3})


@pytest.mark.parametrize("termination,mask,expect", [
    ("submitted", False, (False, False)), ("max_turns", False, (True, False)), ("context_limit", False, (True, False)),
    ("agent_timeout", False, (True, False)), ("sandbox_error", True, (False, True)),
    ("grading_error", False, (False, True)),  # a masked termination is masked even if the flag was lost
    ("internal_error", True, (False, True)), ("format_errors", False, (False, False))])
def test_classify(termination, mask, expect):
    o = classify({"instance_id": "t", "termination": termination, "mask_sample": mask, "reward": 0.0})
    assert (o.truncated, o.masked) == expect and o.usable == (expect == (False, False))


def _records():
    base = {"token_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "logprobs": [None, -0.1, -0.2]}
    rows = [("a", 1, 1.0, "submitted", False), ("a", 2, 1.0, "submitted", False), ("a", 3, 0.0, "submitted", False),
            ("a", 4, 1.0, "max_turns", False), ("b", 1, 0.0, "sandbox_error", True), ("b", 2, 1.0, "submitted", False)]
    return [dict(base, instance_id=i, run=r, reward=w, resolved=bool(w), termination=t, mask_sample=m)
            for i, r, w, t, m in rows]


def test_every_reader_agrees_on_truncation_masking_and_groups():
    recs = _records()
    # GRPO: group a keeps 3 (the truncated one is out of the baseline): advantages 1/3, 1/3, -2/3
    batch = prepare_batch(recs, BatchPolicy())
    adv = sorted(round(s.advantage, 4) for s in batch.samples)
    assert adv == [-0.6667, 0.3333, 0.3333] and batch.dropped == {"truncated": 1, "masked": 1, "zero_advantage": 1}
    report = rates([Rollout.from_record(r) for r in recs])
    assert report.masked == 1 and report.trainable_rate == pytest.approx(3 / 6)
    stats = trajectory_stats(recs)
    assert stats.truncated == pytest.approx(1 / 6) and stats.masked == pytest.approx(1 / 6)
    assert summarize(recs, ["a", "b"], 4, "m", "h").masked == 1


def test_the_log_mends_a_cut_line_and_appends(tmp_path):
    path = tmp_path / "t.jsonl"
    append_jsonl(path, {"instance_id": "a", "run": 1})
    with path.open("a") as fh:
        fh.write('{"instance_id": "b", "ru')  # a killed writer
    log = JsonlLog(path)
    assert log.done() == {("a", 1)}
    log.append({"instance_id": "c", "run": 1})
    assert [r["instance_id"] for r in read_jsonl(path)] == ["a", "c"]


def test_terminations_are_one_enum_that_reads_and_writes_plain_names():
    from ha_envs import MASKED, TERMINATIONS, TRUNCATED, Termination

    assert Termination("max_turns") is Termination.MAX_TURNS and Termination.MAX_TURNS == "max_turns"
    assert json.dumps({"t": Termination.ENV_LOST}) == '{"t": "env_lost"}' and f"{Termination.SUBMITTED}" == "submitted"
    assert {t.value for t in Termination if t.masked} == MASKED and {t.value for t in Termination if t.truncated} == TRUNCATED
    assert "env_lost" in MASKED and "internal_error" in MASKED and "patch_scored" not in MASKED
    assert set(TERMINATIONS) < {t.value for t in Termination}  # the env's own endings are among them
    with pytest.raises(ValueError, match="unknown termination 'gave_up'; known: submitted"):
        Termination("gave_up")
    rec = EpisodeRecord.from_json(SCHEMA_1)
    assert rec.termination is Termination.SUBMITTED
    with pytest.raises(ValueError, match="unknown termination"):
        EpisodeRecord.from_json(dict(SCHEMA_1, termination="gave_up"))


def test_a_record_is_a_read_only_view_of_its_line_and_grows_only_by_copy():
    rec = EpisodeRecord.from_json(SCHEMA_1)
    assert dict(rec) == rec.to_json() and list(rec) == list(rec.to_json()) and len(rec) == len(rec.to_json())
    assert rec["run"] == 2 and rec["policy"] == "oracle" and rec["demonstration"] is True and rec.get("node") is None
    assert "node" not in rec and "group" not in rec
    with pytest.raises(KeyError):
        rec["nothing"]
    with pytest.raises(TypeError):
        rec["run"] = 3  # noqa - frozen: a run adds what it knows with with_fields
    moved = rec.with_fields(run=5, node="n1", snapshot="copied")
    assert (moved.run, moved.node, moved["snapshot"], rec.run) == (5, "n1", "copied", 2)
    assert moved.extra == {"demonstration": True, "snapshot": "copied"}
    assert EpisodeRecord.from_json(json.loads(json.dumps(dict(moved)))) == moved
    # every reader gives a typed record and a line the same outcome
    for line in _records():
        assert classify(EpisodeRecord.from_json(line)) == classify(line)


def test_episodes_read_back_typed_from_a_log_old_lines_included(tmp_path):
    from ha_agents.records.episode_record import read_episodes

    log = JsonlLog(tmp_path / "trajectories.jsonl")
    log.append(SCHEMA_1)
    log.append(EpisodeRecord(instance_id="b", run=1, termination="env_lost", mask_sample=True))
    recs = read_episodes(tmp_path / "trajectories.jsonl")
    assert [type(r) for r in recs] == [EpisodeRecord, EpisodeRecord]
    assert recs[0].schema == 1 and recs[0].model == "oracle" and recs[1].termination.masked
    assert read_jsonl(tmp_path / "trajectories.jsonl")[1]["termination"] == "env_lost"
