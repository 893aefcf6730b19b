"""Fixtures: a locally trained tokenizer, and a fake OpenAI-compatible server."""

from __future__ import annotations

import pytest

from ha_agents.chat.template import CHATML
from ha_agents.chat.toy_tokenizer import toy_tokenizer
from ha_envs.harness import TOOLS
from ha_envs.loaders import load_suite


@pytest.fixture(scope="session")
def tokenizer():
    corpus = [t.problem_statement for t in load_suite("mini")] + [t.gold_patch for t in load_suite("mini")]
    corpus += [CHATML.jinja, str([t.openai_schema() for t in TOOLS.values()])] * 3
    return toy_tokenizer(corpus, vocab_size=2000)
