"""Chat templates in the two families most open policies use, written for this project (not
copies of any model's file), for locally built tokenizers in tests, benchmarks and the demo:

- ``QWEN_STYLE``: ChatML turns, tools in the system turn, tool results grouped in a ``user`` turn as
  ``<tool_response>`` blocks, end of turn ``<|im_end|>`` followed by a newline;
- ``LLAMA_STYLE``: header-id turns, tools in the system turn as indented JSON, tool results as
  ``ipython`` turns, contents trimmed, end of turn ``<|eot_id|>`` with nothing after it.

``hf_tokenizer(tok, family)`` wraps a ``tokenizers.Tokenizer`` as a Hugging Face fast tokenizer with
the family's template and special tokens, ready for ``save_pretrained``.
"""

from __future__ import annotations

from typing import Any

QWEN_STYLE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n\\nFunction signatures are inside <tools></tools>:\\n<tools>' }}"
    "{%- for t in tools %}{{- '\\n' }}{{- t | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nCall a function as <tool_call>\\n{\"name\": ..., \"arguments\": {...}}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'tool' %}"
    "{%- if loop.first or loop.previtem.role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + m.content + '\\n</tool_response>' }}"
    "{%- if loop.last or loop.nextitem.role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif m.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + m.content }}"
    "{%- for tc in m.tool_calls or [] %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + tc.function.name + '\", \"arguments\": ' + (tc.function.arguments | tojson) + '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

LLAMA_STYLE = (
    "{{- bos_token }}"
    "{%- if messages[0].role == 'system' %}{%- set sys = messages[0].content | trim %}{%- set msgs = messages[1:] %}"
    "{%- else %}{%- set sys = '' %}{%- set msgs = messages %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{%- if tools %}{{- 'Environment: tools\\nAnswer a function call as JSON {\"name\": ..., \"parameters\": ...}.\\n\\n' }}"
    "{%- for t in tools %}{{- t | tojson(indent=4) + '\\n\\n' }}{%- endfor %}{%- endif %}"
    "{{- sys + '<|eot_id|>' }}"
    "{%- for m in msgs %}"
    "{%- if m.role == 'tool' %}{{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' + (m.content | trim) + '<|eot_id|>' }}"
    "{%- else %}{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + (m.content | trim) + '<|eot_id|>' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)

FAMILIES: dict[str, dict[str, Any]] = {
    "qwen": {"template": QWEN_STYLE, "eos": "<|im_end|>", "bos": None,
             "special": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]},
    "llama": {"template": LLAMA_STYLE, "eos": "<|eot_id|>", "bos": "<|begin_of_text|>",
              "special": ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                          "<|endoftext|>"]},
}


def hf_tokenizer(tok: Any, family: str) -> Any:
    """A ``PreTrainedTokenizerFast`` around ``tok`` (trained with the family's special tokens)."""
    from transformers import PreTrainedTokenizerFast

    f = FAMILIES[family]
    kw = {"bos_token": f["bos"]} if f["bos"] else {}
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=f["eos"], pad_token="<|endoftext|>", **kw)
    hf.chat_template = f["template"]
    return hf
