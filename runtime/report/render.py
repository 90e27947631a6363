"""Render a run's report (shared core + the families' sections) to self-contained HTML, and to an A4 PDF.

>>> core = build_core(meta, provenance=provenance)                               # doctest: +SKIP
>>> html = render_report(core, [*metric_suite_sections(...), *effects_sections(e)])  # doctest: +SKIP
>>> render_pdf(core, Path("report.pdf"), html=html)                               # doctest: +SKIP

The HTML carries its CSS inline and its charts as inline SVG; it references no URL, font, script or
image file, so it can be archived and read offline exactly as generated. The PDF is WeasyPrint's
rendering of the same HTML under print media: A4, "Page X of Y" and the spec digest in the footer,
the audit and run ids in the header (CSS margin boxes fed by ``string-set``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from runtime.report.sections import ORDER, Section, ordered

TEMPLATE = "report.html.j2"

#: ``SOURCE_DATE_EPOCH`` used when a context carries no parseable run time (1980-01-01T00:00:00Z,
#: the earliest time a TrueType ``head`` table and a ZIP entry can hold).
FALLBACK_EPOCH = 315532800


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    class PackageTemplates(jinja2.BaseLoader):
        """``"some.package:name.html.j2"``: a template in ``templates/`` of another package, so that a
        family kept outside :mod:`runtime.report` ships its section templates beside its code."""

        def get_source(self, environment, template):
            package, sep, name = template.partition(":")
            if not sep or not package:
                raise jinja2.TemplateNotFound(template)
            try:
                return jinja2.PackageLoader(package, "templates").get_source(environment, name)
            except (ModuleNotFoundError, ValueError) as exc:
                raise jinja2.TemplateNotFound(template) from exc

    return jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.PackageLoader("runtime.report", "templates"), PackageTemplates()]),
        autoescape=True,  # every template here is HTML, including the included CSS
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_document(template: str, **context: Any) -> bytes:
    """A stand-alone HTML document (a family's document, e.g. ``ll144-summary.html``) rendered from
    ``template`` in the report's jinja environment (autoescaped, strict), as UTF-8 bytes."""
    return _environment().get_template(template).render(**context).encode("utf-8")


def core_sections(core: Mapping[str, Any]) -> list[Section]:
    """The shared parts every report carries, as sections placed among the families' ones.

    Amendments (with their reasons), timings and software versions, and, when ``core`` has a
    provenance, the reproduction command and the signature box (``#signature-box``, the rectangle
    :mod:`runtime.provenance.sign` places the PDF signature over).
    """
    out = [
        Section(id="amendments", title="Amendments", template="_amendments.html.j2",
                context={"amendments": core["amendments"], "lock_signature": core.get("lock_signature"),
                         "lock_recreated": core.get("lock_recreated") or [],
                         "engagement": core.get("engagement")}, order=ORDER["amendments"]),
        Section(id="run-record", title="Timings and software versions", template="_run_record.html.j2",
                context={"timings": core["timings"], "total_time": core["total_time"],
                         "versions": core["versions"], "resumed": core.get("resumed") or [],
                         "reused_tasks": core.get("reused_tasks") or []}, order=ORDER["run_record"]),
    ]
    if core.get("annex_iv") is not None:  # issue 34 §5: written when disclosure.provider is
        out.append(Section(id="annex-iv", title="EU AI Act Annex IV §2(g): test record", template="_annex_iv.html.j2",
                           context=core["annex_iv"], order=ORDER["annex_iv"]))
    if core.get("provenance") is not None:
        out.append(Section(id="provenance", title="Reproduction and signature", template="_provenance.html.j2",
                           context=core["provenance"], order=ORDER["provenance"]))
    return out


def render_report(core: Mapping[str, Any], sections: Iterable[Section]) -> str:
    """The report as one self-contained HTML document (deterministic in its inputs).

    Parameters
    ----------
    core : Mapping
        :func:`runtime.report.core.build_core`.
    sections : iterable of Section
        Every family's sections; the shared parts (:func:`core_sections`) are added here. Sections
        with a negative ``order`` are front matter (between the header and the contents).

    Returns
    -------
    str
        The HTML; a "Terms used in this report" section (:mod:`runtime.report.glossary`) defines the terms
        its text uses.

    Raises
    ------
    ValueError
        When two sections share an anchor.
    """
    from runtime.report.glossary import used

    given = [*sections, *core_sections(core)]
    page = _render(core, ordered(given))
    terms = used(page)  # the terms the report uses, defined once at its end (before the run record)
    if not terms:
        return page
    return _render(core, ordered([*given, Section(id="glossary", title="Terms used in this report",
                                                  template="_glossary.html.j2", context={"terms": terms},
                                                  order=ORDER["glossary"])]))


def _render(core: Mapping[str, Any], every: list[Section]) -> str:
    front = [s for s in every if s.order < 0]
    body = [s for s in every if s.order >= 0]
    toc = [{"anchor": s.id, "title": s.title} for s in body if s.toc]
    return _environment().get_template(TEMPLATE).render(core=core, front=front, body=body, toc=toc)


def source_date_epoch(context: Mapping[str, Any]) -> int:
    """The PDF's clock: the run's recorded start (``context["header"]["generated_at"]``, UTC).

    Returns
    -------
    int
        Seconds since 1970-01-01T00:00:00Z; :data:`FALLBACK_EPOCH` when the context has no parseable
        ISO 8601 time (a report rendered outside a run).
    """
    text = str((context.get("header") or {}).get("generated_at") or "")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return FALLBACK_EPOCH
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(FALLBACK_EPOCH, int(when.timestamp()))


@contextlib.contextmanager
def _source_date(epoch: int) -> Iterator[None]:
    """Set ``SOURCE_DATE_EPOCH`` for the duration of one render, then restore the environment.

    fontTools, which WeasyPrint uses to subset fonts where HarfBuzz's subsetter is missing, stamps
    each subset's ``head.modified`` with the current time unless ``SOURCE_DATE_EPOCH`` is set: without
    this the same run rendered a second later gives other PDF bytes.
    """
    before = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(int(epoch))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = before


def no_fetch():
    """WeasyPrint's URL fetcher for the report: it fetches nothing but the report's own inline
    ``data:`` URLs, so a URL that ever reached the HTML (a file, a host on the network) is never
    read (issue 14). A refused URL is skipped with WeasyPrint's warning; the PDF still renders."""
    from weasyprint.urls import URLFetcher, URLFetchingError

    class _NoFetch(URLFetcher):
        def fetch(self, url, headers=None):
            if str(url).startswith("data:"):
                return super().fetch(url, headers)
            raise URLFetchingError(f"the report fetches no URL: {url}")

    return _NoFetch(allowed_protocols={"data"})


def render_pdf(context: Mapping[str, Any], path: Path, *, html: str) -> None:
    """Write ``html`` (:func:`render_report`) as an A4 PDF to ``path`` (WeasyPrint).

    ``context`` is the report's ``core`` (:func:`runtime.report.core.build_core`): its
    ``header.generated_at`` is the PDF's clock.

    The bytes depend on the context only, never on the wall clock: every time the renderer or its
    font subsetter would stamp is the run's recorded start (:func:`source_date_epoch`), set as
    ``SOURCE_DATE_EPOCH`` for this render only.

    Raises
    ------
    ImportError
        With an install hint when WeasyPrint is missing.
    """
    try:
        import weasyprint
    except ImportError as exc:  # pragma: no cover - weasyprint is a hard dependency
        raise ImportError("rendering the PDF report needs WeasyPrint: pip install 'weasyprint>=61'") from exc
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _source_date(source_date_epoch(context)):
        weasyprint.HTML(string=html, base_url=None, url_fetcher=no_fetch()).write_pdf(str(path))
