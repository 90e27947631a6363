"""Field types and bases shared by the spec models of :mod:`compiler.spec` and :mod:`compiler.blocks`.

A leaf module: it imports pydantic only, so that the spec models of plug-ins (system kinds,
generators, analysis blocks: :mod:`compiler.blocks`) can build on the same bases as the spec itself
without importing :mod:`compiler.spec`, which imports them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

#: An id of the spec (audit, job, system): lower-case letters, digits and hyphens.
Id = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]
#: A name of the spec (axis level, condition): any text of 1 to 64 characters.
Name = Annotated[str, Field(min_length=1, max_length=64)]


class Strict(BaseModel):
    """Base of every spec model: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class LlmEndpoint(Strict):
    """Where and how an LLM is called (any litellm model string).

    Only the *name* of the environment variable holding the API key is stored (``api_key_env``);
    the key itself is read at call time and never written anywhere.
    """

    model: str = Field(min_length=1, description="litellm model string, e.g. openai/gpt-4o-mini.")
    api_base: str | None = Field(default=None, description="Base URL of an OpenAI-compatible server.")
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = Field(
        default=None, description="Name of the environment variable that holds the API key.")
    temperature: float = Field(default=0.7, ge=0, le=2)
    max_tokens: int = Field(default=128, ge=1, le=32_768)
    response_format: Literal["json_schema", "json_object_schema", "json_object", "none"] = Field(
        default="json_schema", description="Structured-output request: json_schema (OpenAI style; litellm "
        "translates it for providers that support it), json_object_schema ({type: json_object, schema: "
        "...}, what llama-cpp-python's server turns into a grammar), json_object (JSON mode, no schema), "
        "none (tolerant extraction alone).")

