"""`ctx.llm`: model calls from a workflow through the configured OpenAI-compatible endpoint (config `ladder.model`)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from openadapt_flow.ladder.model_rung import ModelError
from openadapt_flow.runtime.config import ModelConfig


def chat(mc: ModelConfig, prompt: str, *, system: str | None = None, max_tokens: int | None = None,
         temperature: float = 0.0, model: str | None = None) -> str:
    """One chat-completions request; the reply's text. ModelError (never a hang: the config's timeout bounds it)."""
    url = mc.url.rstrip("/") + "/chat/completions"
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    body: dict[str, Any] = {"model": model or mc.model, "messages": messages, "temperature": temperature}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(mc.api_key_env) if mc.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=mc.timeout_s) as resp:
            reply = json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise ModelError(f"model endpoint {url} answered HTTP {e.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise ModelError(f"model endpoint {url} unreachable or too slow ({mc.timeout_s:g} s): {e}") from None
    except ValueError:
        raise ModelError(f"model endpoint {url} did not answer JSON") from None
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ModelError(f"model endpoint {url}: reply has no choices[0].message.content") from None
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise ModelError(f"model endpoint {url}: reply content is not text")
    return content


class Llm:
    """`ctx.llm.generate(prompt, ...)`: checkpointed like a tool, and counted in `policy.max_model_calls`."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def generate(self, prompt: str, *, system: str | None = None, max_tokens: int | None = None,
                 temperature: float = 0.0, model: str | None = None) -> Any:
        options = {"system": system, "max_tokens": max_tokens, "temperature": temperature, "model": model}
        return self._ctx.generate(prompt, **{k: v for k, v in options.items() if v is not None})
