"""LLM systems and the LLM generator at compile time: prompt templates, model families, estimates.

The compiler never imports :mod:`runtime`; both read the prompt templates through this module.
litellm is imported lazily (only to count tokens and read prices when the spec uses an LLM).

Sources: seed 003 §3.4-3.5 and Appendix B (reference-anchored comparison, prompt framings),
seed 001 §5.1 and Appendix D (absolute 0-100 score), seed 000 §3.1 (generation agents) and
§2.4 / §3.3 (same-family generator and evaluator: self-preference risk).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from compiler.hashing import digest

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"

#: JSON schema of every screener answer (the integer range is the system's score_range).
def score_schema(lo: float, hi: float) -> dict[str, Any]:
    """JSON schema of a screener's answer: ``{"score": integer in [lo, hi]}``."""
    return {"type": "object", "properties": {"score": {"type": "integer", "minimum": int(lo),
                                                       "maximum": int(hi)}},
            "required": ["score"], "additionalProperties": False}


#: Generator stages and their template names (seed 000 §3.1).
GENERATOR_TEMPLATES = {
    "descriptor": "gen_descriptor.j2", "phase_a": "gen_phase_a.j2", "phase_b": "gen_phase_b.j2",
    "followup": "gen_followup.j2", "translate": "gen_translate.j2", "flagging": "gen_flagging.j2",
    "classifier": "gen_classifier.j2",
}

MSG_SAME_FAMILY = (
    "the generator ({gen}) and system {system!r} ({model}) are both from the {family} model family: "
    "measured bias may reflect the model's preference for its own writing (seed 000 §2.4, §3.3); "
    "use a screener from another family, or report this confound"
)

#: Substrings that name a model family in a litellm model string (first match wins).
FAMILY_MARKERS = (
    ("smollm", "SmolLM"), ("gpt-", "OpenAI GPT"), ("o1", "OpenAI GPT"), ("o3", "OpenAI GPT"),
    ("claude", "Anthropic Claude"), ("gemini", "Google Gemini"), ("gemma", "Google Gemma"),
    ("llama", "Meta Llama"), ("mistral", "Mistral"), ("mixtral", "Mistral"), ("qwen", "Qwen"),
    ("deepseek", "DeepSeek"), ("phi", "Microsoft Phi"), ("command", "Cohere Command"),
)


def model_family(model: str) -> str:
    """The model family named by a litellm model string (provider prefix ignored), or the bare
    model name when no known family marker appears.

    >>> model_family("openai/gpt-4o-mini"), model_family("ollama/llama3.1:8b")
    ('OpenAI GPT', 'Meta Llama')
    """
    name = model.split("/", 1)[-1].lower()
    for marker, family in FAMILY_MARKERS:
        if re.search(rf"(^|[^a-z]){re.escape(marker)}", name):
            return family
    return name


def template_text(name: str, *, folder: Path | None = None) -> str:
    """Text of a built-in template (``name`` under :data:`PROMPTS_DIR`) or of a custom file."""
    from compiler.files import read_regular_text

    path = (folder / name) if folder is not None else PROMPTS_DIR / name
    return read_regular_text(path, shown=name)  # a custom file: regular, capped (issue 41)


def condition_templates(system: Any, folder: Path) -> list[dict[str, Any]]:
    """Resolved prompt conditions of an LLM system: ``{id, source, template, sha256}``.

    The template text goes into the resolved spec (it is short), so that the run reads exactly
    the prompt that was locked, and editing a prompt changes the spec digest.
    """
    out = []
    for cond in system.conditions:
        if isinstance(cond, str):
            text = template_text(f"{cond}.j2")
            out.append({"id": cond, "source": "built-in", "template": text,
                        "sha256": digest(text)["digest"]})
        else:
            text = template_text(cond.prompt_file, folder=folder)
            out.append({"id": cond.id, "source": cond.prompt_file, "template": text,
                        "sha256": digest(text)["digest"]})
    return out


def endpoint(spec_obj: Any) -> dict[str, Any]:
    """The semantic fields of an LLM endpoint (the key itself is never read here)."""
    return {"model": spec_obj.model, "api_base": spec_obj.api_base, "api_key_env": spec_obj.api_key_env,
            "temperature": spec_obj.temperature, "max_tokens": spec_obj.max_tokens,
            "response_format": spec_obj.response_format}


# ------------------------------------------------------------------ estimates (compile time)

#: Output-token cap of one flagging-agent answer (seed 000 §3.1.4: a short free-text analysis).
FLAGGING_MAX_TOKENS = 160
#: Characters per token used when litellm is not installed (rough, English text).
CHARS_PER_TOKEN = 4


def count_tokens(model: str, text: str) -> tuple[int, str]:
    """(tokens, method) of ``text`` for ``model``: litellm's ``token_counter`` (the model's own
    tokenizer where litellm knows it, else tiktoken's cl100k), or len/4 without litellm."""
    try:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm
    except ImportError:
        return max(1, len(text) // CHARS_PER_TOKEN), "characters / 4 (litellm not installed)"
    return int(litellm.token_counter(model=model, text=text)), "litellm.token_counter"


def model_price(model: str) -> tuple[float, float] | None:
    """(USD per input token, USD per output token) from litellm's local cost map, or None."""
    try:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm
    except ImportError:
        return None
    name = model
    info = litellm.model_cost.get(name) or litellm.model_cost.get(name.split("/", 1)[-1])
    if not info or info.get("input_cost_per_token") is None:
        return None
    return float(info["input_cost_per_token"]), float(info.get("output_cost_per_token") or 0.0)


#: Characters of the typical resume a screener's prompt is counted with (no LLM generator).
TYPICAL_RESUME_CHARS = 2200


class Estimate:
    """Calls, tokens and cost per LLM stage, accumulated at compile time.

    Each contributor (the LLM generator's design, each LLM system's compile hook) renders its
    prompts with placeholder text of typical length and calls :meth:`add`; tokens are counted with
    :func:`count_tokens`, output tokens at ``max_tokens`` (an upper bound). Cost is given only where
    litellm's cost map knows the model's price.

    Attributes
    ----------
    resume : str
        Placeholder resume text the screeners' prompts are rendered with (a design may shorten it
        to what its generator writes).
    job_text : str
        Placeholder job description.
    stages : list of dict
        ``{stage, model, calls, input_tokens, output_tokens, cost_usd, price, method}``.
    """

    def __init__(self, *, typical_resume_chars: int = TYPICAL_RESUME_CHARS):
        from jinja2 import Environment, StrictUndefined

        self.env = Environment(undefined=StrictUndefined, keep_trailing_newline=True)
        self.resume = "x " * (typical_resume_chars // 2)
        self.job_text = "y " * 600
        self.stages: list[dict[str, Any]] = []

    def render(self, template: str, **values: Any) -> str:
        """Render a prompt template (jinja2, strict) with placeholder values."""
        return self.env.from_string(template).render(**values)

    def add(self, stage: str, ep: dict[str, Any], calls: int, prompt: str, out_tokens: int) -> None:
        """Count one stage: ``calls`` calls of ``prompt`` to endpoint ``ep``, ``out_tokens`` out each."""
        tin, method = count_tokens(ep["model"], prompt)
        price = model_price(ep["model"])
        cost = None if price is None else calls * (tin * price[0] + out_tokens * price[1])
        self.stages.append({"stage": stage, "model": ep["model"], "calls": calls, "input_tokens": calls * tin,
                            "output_tokens": calls * out_tokens, "cost_usd": cost,
                            "price": "litellm cost map" if price else "unknown to litellm (no cost estimate)",
                            "method": method})

    def result(self) -> dict[str, Any]:
        """``{"stages", "calls", "tokens", "cost_usd", "cost_known"}`` (the plan's ``llm_estimate``)."""
        stages = self.stages
        known = all(st["cost_usd"] is not None for st in stages)
        return {"stages": stages, "calls": sum(st["calls"] for st in stages),
                "tokens": sum(st["input_tokens"] + st["output_tokens"] for st in stages),
                "cost_usd": sum(st["cost_usd"] or 0.0 for st in stages), "cost_known": known}
