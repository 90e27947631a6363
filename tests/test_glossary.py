"""The report's glossary (runtime.report.glossary): the terms a report's visible text uses are defined once,
at its end, and terms it does not use are left out."""

from __future__ import annotations

import html
import re

from runtime.report.glossary import TERMS, used, visible_text
from tests.test_report import make_inputs, render_html_of, report_parts


def _terms(page: str) -> list[str]:
    return [t["term"] for t in used(page)]


def test_visible_text_skips_head_styles_scripts_and_attributes():
    page = ('<html><head><title>MARC</title><style>.MARC{}</style></head><body>'
            '<p class="ICC" title="TOST">Flip&nbsp;rate &amp; more</p><script>var SESOI=1;</script></body></html>')
    assert visible_text(page).strip() == "Flip rate & more"  # entities decoded, the no-break space folded
    # only the flip rate is visible: MARC (title, style), ICC (class), TOST (attribute), SESOI (script) are not
    assert _terms(page) == ["Flip rate"]
    assert _terms("<p>the flip rate and MARC</p>") == ["MARC", "Flip rate"]  # TERMS' order, not the page's


def test_word_boundaries_keep_look_alike_words_out():
    assert _terms("<p>MARCH 2026, DICC, SESOIS</p>") == []
    assert "ICC" in _terms("<p>The ICC is 0.12</p>")
    assert "SESOI" in _terms("<p>SESOI: 0.02</p>")


def test_every_term_matches_its_own_name_and_has_a_source():
    for t in TERMS:
        assert t.definition.endswith("."), t.term
        assert t.source, t.term
        assert re.search(t.pattern, t.term) or t.term.startswith(("Equation 6", "PASS, FAIL", "95% CI",
                                                                   "p-value", "Pre-registration", "LL144")), t.term


def test_the_report_defines_the_terms_it_uses_and_only_those():
    metrics, risk, drift, meta = make_inputs()
    page = render_html_of(report_parts(metrics=metrics, risk=risk, drift=drift, meta=meta))
    glossary = page.split('<section id="glossary">', 1)[1].split("</section>", 1)[0]
    listed = [html.unescape(t) for t in re.findall(r"<dt>(.*?)</dt>", glossary)]
    before = visible_text(page.split('<section id="glossary">', 1)[0])
    # MARC and the flip rate are in this report's tables; ICC and path-specific effects are not
    assert "MARC" in before and "MARC" in listed
    assert "Flip rate" in listed
    assert "ICC" not in listed and not re.search(r"\bICC\b", before)
    assert not any(t.startswith("Path-specific") for t in listed)
    marc = next(t for t in TERMS if t.term == "MARC")
    assert marc.definition in visible_text(glossary)
    # one entry per term, in TERMS' order, and the section is listed in the contents before the run record
    order = [t.term for t in TERMS]
    assert listed == sorted(listed, key=order.index) and len(set(listed)) == len(listed)
    toc = page.split('<nav class="toc">', 1)[1].split("</nav>", 1)[0]
    assert toc.index('href="#glossary"') < toc.index('href="#run-record"')


def test_the_source_papers_the_level_1_test_and_pades_are_defined():
    """A regulator's read of the example (stop 58): "seed 000", "level-1 score test" and "PAdES B-B" were used on
    page 1 undefined; each is a glossary term, and look-alikes are not."""
    assert _terms("<p>seed 000 §3.4; the level-1 score test; signed PAdES B-B</p>") == [
        "Seed 000, seed 001, seed 003 (the source papers)", "Level-1 score test",
        "PAdES B-B, PAdES B-LTA (PDF signature levels)"]
    assert _terms("<p>seed 0001, level-10 test</p>") == []
