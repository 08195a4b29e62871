"""`ctx.llm`: model calls from a workflow through the configured OpenAI-compatible endpoint (config `ladder.model`)."""

from __future__ import annotations

import os
from typing import Any

from openadapt_flow.bundle.config import ModelConfig
from openadapt_flow.ladder.chat_http import post_chat


def chat(
    mc: ModelConfig,
    prompt: str,
    *,
    system: str | None = None,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    model: str | None = None,
) -> str:
    """One chat-completions request; the reply's text. ModelError (never a hang: the config's timeout bounds it)."""
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    body: dict[str, object] = {"model": model or mc.model, "messages": messages, "temperature": temperature}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    key = os.environ.get(mc.api_key_env) if mc.api_key_env else None
    return post_chat(mc.url, body, timeout_s=mc.timeout_s, api_key=key)


class Llm:
    """`ctx.llm.generate(prompt, ...)`: checkpointed like a tool, and counted in `policy.max_model_calls`."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def generate(
        self,
        prompt: str,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        model: str | None = None,
    ) -> Any:
        options = {"system": system, "max_tokens": max_tokens, "temperature": temperature, "model": model}
        return self._ctx.generate(prompt, **{k: v for k, v in options.items() if v is not None})
