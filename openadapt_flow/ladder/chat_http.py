"""One chat-completions request to an OpenAI-compatible endpoint: stdlib HTTP, always with a timeout."""

from __future__ import annotations

import json
from typing import Any

from openadapt_flow.errors import FlowError


class ModelError(FlowError):
    """The grounding model could not be reached or gave no usable answer."""


def post_chat(base_url: str, body: dict[str, Any], *, timeout_s: float, api_key: str | None = None) -> str:
    """POST `body` to `<base_url>/chat/completions` and return the reply's text; every failure is a ModelError."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    # urllib.request is imported here, on the first call: only a model rung or a workflow's llm call needs it, and
    # with http.client and email it costs every CLI start ~25 ms.
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            reply = json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        raise ModelError(f"model endpoint {url} answered HTTP {e.code}") from e
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise ModelError(f"model endpoint {url} unreachable or too slow ({timeout_s:g} s): {e}") from e
    except ValueError as e:
        raise ModelError(f"model endpoint {url} did not answer JSON") from e
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as e:
        raise ModelError(f"model endpoint {url}: reply has no choices[0].message.content") from e
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise ModelError(f"model endpoint {url}: reply content is not text")
    return content
