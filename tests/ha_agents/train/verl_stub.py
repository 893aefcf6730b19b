"""A scripted stand-in for verl's ``LLMServerClient`` (importable by Ray actors): answers each
``generate`` with the next scripted text, encoded with the policy's tokenizer and ended with the
end-of-turn token, cut at ``max_tokens`` as a server would (and still reporting "completed", as
verl's servers report a length stop)."""

from __future__ import annotations

from typing import Any


class ScriptedServer:
    def __init__(self, tokenizer_dir: str, script: list[str], fail_at: int | None = None) -> None:
        self.tokenizer_dir = tokenizer_dir
        self.script = list(script)
        self.fail_at = fail_at
        self.calls: list[dict[str, Any]] = []
        self._tok = None
        self._turn: dict[str, int] = {}

    @property
    def tok(self) -> Any:
        if self._tok is None:
            from transformers import AutoTokenizer

            self._tok = AutoTokenizer.from_pretrained(self.tokenizer_dir, local_files_only=True)
        return self._tok

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **kw: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        turn = self._turn.get(request_id, 0)
        self._turn[request_id] = turn + 1
        self.calls.append({"request_id": request_id, "prompt_len": len(prompt_ids),
                           "max_tokens": sampling_params.get("max_tokens"), "turn": turn,
                           "seed": sampling_params.get("seed")})
        if self.fail_at is not None and turn == self.fail_at:
            raise ConnectionError("the rollout server went away")
        text = self.script[min(turn, len(self.script) - 1)]
        ids = list(self.tok.encode(text, add_special_tokens=False)) + [self.tok.convert_tokens_to_ids("<|im_end|>")]
        ids = ids[: sampling_params.get("max_tokens") or len(ids)]
        return TokenOutput(token_ids=ids, log_probs=[-0.25] * len(ids), stop_reason="completed")
