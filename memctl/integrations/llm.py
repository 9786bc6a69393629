"""The one place memctl talks to an LLM (through litellm), and only when a model is configured.

litellm is imported lazily (it costs ~4 s) with LITELLM_LOCAL_MODEL_COST_MAP=True set first,
because otherwise it fetches its price table from the network at import time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memctl.config import LLMSettings, Store, parse_section
from memctl.core.errors import MemctlError


class LLMUnavailable(MemctlError):
    kind = "llm_unavailable"


class LLMBadOutput(MemctlError):
    kind = "llm_bad_output"
    reply: LLMReply | None = None


@dataclass
class LLMReply:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 1

    def add(self, other: LLMReply) -> LLMReply:
        return LLMReply(
            text=other.text,
            model=other.model,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            calls=self.calls + other.calls,
        )

    def usage(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 8),
        }


def llm_settings(store: Store) -> LLMSettings | None:
    """The `llm` settings when a model is configured (config.yaml or MEMCTL_LLM_MODEL), else None."""
    settings = store.settings.llm
    return settings if settings.model else None


def _as_settings(settings: LLMSettings | Mapping[str, Any]) -> LLMSettings:
    return settings if isinstance(settings, LLMSettings) else parse_section("llm", settings)


def _litellm():
    # Why: litellm reads this variable at import time; without it, it fetches its price table
    # from the network. Set here, at the edge that imports litellm.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise LLMUnavailable(
            "litellm is not installed; reinstall memctl or unset llm.model."
        ) from None
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


def complete_text(
    settings: LLMSettings | Mapping[str, Any],
    messages: list[dict[str, str]],
    *,
    mock_response: Any = None,
) -> LLMReply:
    """One chat completion. `mock_response` goes through litellm's own mock path (tests)."""
    settings = _as_settings(settings)
    if not settings.model:
        raise LLMUnavailable("No LLM configured: set llm.model in config.yaml or MEMCTL_LLM_MODEL.")
    litellm = _litellm()
    model = settings.model
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "timeout": settings.timeout,
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
    }
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    if settings.api_key:
        kwargs["api_key"] = settings.api_key
    if mock_response is not None:
        kwargs["mock_response"] = mock_response
    try:
        response = litellm.completion(**kwargs)
    except Exception as exc:
        raise LLMUnavailable(
            f"The LLM call to '{model}' failed: {exc.__class__.__name__}: {exc}"
        ) from exc
    text = response.choices[0].message.content or ""
    usage = getattr(response, "usage", None)
    try:
        cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - unknown models have no price; that is not an error
        cost = 0.0
    return LLMReply(
        text=text,
        model=model,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=cost,
    )


_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> Any:
    """Accept bare JSON or JSON inside a ```json fence; raise ValueError otherwise."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCED.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise ValueError("reply is not valid JSON")


def complete_json(
    settings: LLMSettings | Mapping[str, Any],
    messages: list[dict[str, str]],
    *,
    mock_response: Any = None,
    validate: Callable[[Any], Any] | None = None,
) -> tuple[Any, LLMReply]:
    """Ask for JSON; on a malformed reply ask once more, then raise LLMBadOutput.

    `validate` checks the shape and returns the cleaned value; its ValueError counts as
    malformed too. `mock_response` may be a list: one mocked reply per attempt.
    """
    settings = _as_settings(settings)
    mocks = mock_response if isinstance(mock_response, list) else [mock_response, mock_response]
    reply = complete_text(settings, messages, mock_response=mocks[0])
    try:
        return _checked(reply.text, validate), reply
    except ValueError as exc:
        problem = str(exc)
    retry = messages + [
        {"role": "assistant", "content": reply.text},
        {
            "role": "user",
            "content": f"That reply was not usable: {problem}. "
            "Reply again with only the JSON, nothing else.",
        },
    ]
    second = complete_text(settings, retry, mock_response=mocks[1] if len(mocks) > 1 else None)
    total = reply.add(second)
    try:
        return _checked(second.text, validate), total
    except ValueError as exc:
        error = LLMBadOutput(
            f"The LLM '{settings.model}' returned malformed JSON twice ({exc}); nothing was written."
        )
        error.reply = total  # what the failed attempts cost
        raise error from None


def _checked(text: str, validate: Callable[[Any], Any] | None) -> Any:
    data = parse_json_reply(text)
    return validate(data) if validate is not None else data
