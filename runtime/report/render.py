"""Render the report context to self-contained HTML, and the HTML to an A4 PDF.

The HTML carries its CSS inline and its charts as inline SVG; it references no URL, font, script or
image file, so it can be archived and read offline exactly as generated. The PDF is WeasyPrint's
rendering of the same HTML under print media: A4, "Page X of Y" and the spec digest in the footer,
the audit and run ids in the header (CSS margin boxes fed by ``string-set``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

TEMPLATE = "report.html.j2"


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("runtime.report", "templates"),
        autoescape=True,  # every template here is HTML, including the included CSS
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(context: dict[str, Any]) -> str:
    """Return the report as one self-contained HTML document (deterministic in ``context``)."""
    return _environment().get_template(TEMPLATE).render(**context)


def render_pdf(context: dict[str, Any], path: Path, *, html: str | None = None) -> None:
    """Write the report as an A4 PDF to ``path`` (WeasyPrint; same content as :func:`render_html`).

    Raises
    ------
    ImportError
        With an install hint when WeasyPrint is missing.
    """
    try:
        import weasyprint
    except ImportError as exc:  # pragma: no cover - weasyprint is a hard dependency
        raise ImportError("rendering the PDF report needs WeasyPrint: pip install 'weasyprint>=61'") from exc
    html = render_html(context) if html is None else html  # html: another template's rendering
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    weasyprint.HTML(string=html, base_url=None).write_pdf(str(path))
