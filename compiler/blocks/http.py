"""Spec model of the ``http`` system kind: a vendor's scoring API, called with a JSON POST per request
(issue 35 §2). The body is a JSON template whose whole string values may be placeholders; the answer is
read with JMESPath expressions (the jmespath library)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "http"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 4


class HttpRequestTemplate(Strict):
    """The JSON body of each POST. Placeholders are whole JSON string values: ``$items`` (the list of
    items, in ``body`` only), ``$id`` (an opaque id per résumé), ``$job`` (the job's description),
    ``$job_title``, ``$job_id``, ``$resume`` (the résumé's text). No cv_id, variant or axis level can be sent."""

    body: Any = Field(description="JSON template of the POST body, e.g. {items: $items} or {id: $id, resume: $resume}.")
    item: Any = Field(default=None, description="JSON template of one item of $items, e.g. {id: $id, resume: $resume}; "
                      "required with $items, and only with it.")


class HttpResponsePaths(Strict):
    """Where the answer's parts are, as JMESPath expressions."""

    items: str | None = Field(default=None, description="The list of answers in the body (with $items), e.g. scores.")
    id: str | None = Field(default=None, description="The id of an answer, relative to it (required with batch_size > 1).")
    score: str = Field(description="The score of an answer, relative to it: a number, or a string such as '80' or '80/100'.")
    version: str | None = Field(default=None, description="The model version the body names, relative to the body.")


class HttpSystem(Strict):
    """A vendor's scoring API (issue 35 §2): every résumé is POSTed under an opaque id and scored by the vendor."""

    id: Id
    kind: Literal["http"]
    url: str = Field(description="The endpoint every request is POSTed to (http or https). validate and compile "
                     "never contact it.")
    version: str = Field(min_length=1, max_length=200, description="The version of the scoring system the vendor "
                         "declares (e.g. 'kw-matcher 2.3'); a remote system cannot be fingerprinted beyond it.")
    score_range: tuple[float, float] = Field(description="[low, high] of the vendor's score scale.")
    score_resolution: float | None = Field(
        default=None, gt=0, description="Grid of the scores, in their units (1 for integer scores).")
    batch_size: int = Field(default=1, ge=1, le=64, description="Items per request (1-64).")
    request: HttpRequestTemplate = Field(description="The JSON template of the POST body.")
    response: HttpResponsePaths = Field(description="JMESPath expressions reading the answer.")
    version_headers: list[str] = Field(default_factory=list, description="Response headers naming the model version "
                                       "(observed and counted in run.json).")
    headers: dict[str, str] = Field(default_factory=dict, description="Request headers with literal values "
                                    "(no Authorization, Cookie or *-Key: those go in headers_from_env).")
    headers_from_env: dict[str, str] = Field(
        default_factory=dict, description="Header -> name of the environment variable holding its whole value "
        "(e.g. {Authorization: VENDOR_AUTH}); the value is written nowhere.")
    max_invalid_retries: int = Field(default=2, ge=0, le=10, description="Times an item without a valid score is "
                                     "sent again.")


System = HttpSystem
