"""The report's glossary: plain-language definitions of the terms a report uses, listed only when its text
uses them (a regulator read "MARC", "TOST", "swap-in" and "SESOI" undefined in the findings).

Pure: text in, terms out (no I/O). :func:`used` reads the rendered report's visible text; the section that
lists the terms is added by :func:`runtime.report.render.render_report`.

Sources: seed 000 §3.4 (the metric suite), §3.6-§3.7 (tiers, Eq. 6); seed 001 §5 (path-specific effects);
seed 003 §3.7 (effect sizes, TOST, ICC, the validity protocol); 6 RCNY §5-300 (LL144's rates and impact ratio).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser


@dataclass(frozen=True)
class Term:
    """One glossary entry.

    Attributes
    ----------
    term : str
        The term as the report prints it.
    pattern : str
        A regular expression over the report's visible text; the term is listed when it matches.
    definition : str
        What it means, in plain words, with the direction of "better" where there is one.
    source : str
        Where it is defined (a seed section or a rule).
    """

    term: str
    pattern: str
    definition: str
    source: str


TERMS: tuple[Term, ...] = (
    Term("Correspondence audit", r"[Cc]orrespondence audit",
         "A test that gives the system matched résumés that differ only in a cue of a protected characteristic "
         "(a name, an age signal) and compares how it treats them; any difference is caused by the cues that "
         "differ. A variant that changes several cues at once (a name, an age and a place of residence) shows the "
         "effect of that bundle, not of any one of its cues; the axis contrasts, where reported, estimate each cue's "
         "own effect under a model that adds the cues' effects.",
         "seed 000 §3.1"),
    Term("Base candidate", r"[Bb]ase candidate",
         "One fictitious applicant: the résumé content from which every variant is made.", "seed 000 §3.1"),
    Term("Variant", r"\b[Vv]ariants?\b",
         "A base candidate's résumé carrying one combination of protected-characteristic cues (for example a name "
         "typical of Black women). A variant stands for a protected category or a combination of them.",
         "seed 000 §3.2"),
    Term("Reference variant", r"\b[Rr]eference\b",
         "The variant every other variant is compared with (the same résumés with the reference cues).",
         "seed 000 §3.4"),
    Term("Swap-in ranking", r"[Ss]wap-in",
         "Each variant résumé is ranked against the other candidates' reference résumés, as if it alone had been "
         "sent in its reference's place.", "this tool (DESIGN.md)"),
    Term("Top-K / shortlist", r"\btop-?K\b|[Ss]hortlist",
         "The K highest-scored résumés of a job: the candidates the system would put forward.", "seed 000 §3.4"),
    Term("Score delta", r"[Ss]core delta",
         "The mean difference between a variant's score and its reference's, on the system's score range scaled "
         "to 0-1. 0 is no difference; it is judged on its size either way.", "seed 000 §3.4.1"),
    Term("MARC", r"\bMARC\b",
         "Mean absolute rank change: how many places, on average, a résumé moves in its job's ranking when its cue "
         "changes, divided by K. Lower is better.", "seed 000 §3.4.1"),
    Term("Flip rate", r"[Ff]lip rate",
         "The share of base candidates whose shortlist decision (in or out of the top K) changes when the "
         "reference cue is replaced by the variant's. Lower is better.", "seed 000 §3.4.1, Eq. 2"),
    Term("Retention rate", r"[Rr]etention rate|[Rr]etention\b",
         "The share of the reference's shortlisted candidates still shortlisted under the variant, averaged over "
         "jobs. Higher is better.", "seed 000 §3.4.2"),
    Term("Shortlist retention ratio (seed 000's impact ratio)", r"[Ss]hortlist retention ratio|seed 000.s impact ratio",
         "A variant's retention rate divided by the reference's, a ratio of shortlist retentions; seed 000 calls it "
         "the impact ratio. It is not LL144's impact ratio, which divides selection rates. Higher is better (1 is "
         "no difference).",
         "seed 000 §3.4.2, Eq. 3"),
    Term("Selection ratio", r"[Ss]election ratio",
         "Variant résumés selected divided by reference résumés selected at the decision rule in force (the top "
         "K, or a score threshold), over all jobs. 1 is no difference; the PASS band is symmetric around 1.",
         "this tool (issue 29)"),
    Term("Recall@K, nDCG@K", r"Recall@K|nDCG@K",
         "Shortlist quality: the share of truly matching candidates found in the top K (Recall@K), and a version "
         "that rewards finding them higher (nDCG@K). They rate the ranking, not a category. Higher is better.",
         "seed 000 §3.4.3"),
    Term("Equal opportunity gap, equalized odds gap", r"[Ee]qual opportunity|[Ee]qualized odds",
         "The difference between a variant and its reference in the share of qualified candidates shortlisted "
         "(true-positive rate); equalized odds takes the larger of that and the gap in unqualified candidates "
         "shortlisted (false-positive rate). Lower is better.", "seed 000 §3.4.3"),
    Term("LL144 impact ratio", r"LL144|Local Law 144",
         "Under NYC Local Law 144, a category's selection rate (or scoring rate: the share scored above the "
         "median) divided by the rate of the most selected category.", "6 RCNY §5-300"),
    Term("95% CI (confidence interval)", r"95% (CI|interval)|confidence interval",
         "A range of values compatible with the data; intervals built this way contain the true value in about "
         "95% of audits.", "seed 000 §3.4"),
    Term("Prediction interval", r"[Pp]rediction interval",
         "Where the value for another job like the audited ones is expected to fall, counting the spread between "
         "the audited jobs; wider than the confidence interval of their pooled value.",
         "Higgins, Thompson & Spiegelhalter 2009"),
    Term("PASS, FAIL, INCONCLUSIVE", r"\bINCONCLUSIVE\b",
         "A result's status from its 95% interval and the pre-registered PASS band: PASS when the whole interval "
         "lies inside the band, FAIL when it lies wholly outside, INCONCLUSIVE when it straddles a bound (the "
         "data cannot tell).", "this tool (methods 7)"),
    Term("Research tier, operational tier", r"[Rr]esearch tier|[Oo]perational tier",
         "Two pre-registered sets of thresholds: the research tier is seed 000's Table 3; the operational tier is "
         "a relaxed policy set. Both are fixed before the audit runs.", "seed 000 §3.6-§3.7"),
    Term("Pre-registration, lock", r"[Pp]re-regist|\block\b",
         "The spec (design, thresholds, seed) is fixed and hashed before any résumé is scored; the report traces "
         "to that hash, and a later change is recorded as an amendment.", "seed 000 §3.7"),
    Term("p-value, adjusted (p_adj)", r"\bp_adj\b|[Aa]djust",
         "The chance of a difference at least this large if the system treated the groups alike; adjusted for the "
         "number of tests run, so that the share of false findings stays controlled.",
         "seed 000 §3.5; Benjamini & Hochberg 1995; Benjamini & Bogomolov 2014"),
    Term("McNemar test", r"McNemar",
         "A test on paired in/out decisions: does a candidate's résumé get in under one cue and out under the "
         "other more often one way than the other.", "seed 000 §3.4.1 (McNemar 1947)"),
    Term("Wilcoxon signed-rank test", r"Wilcoxon",
         "A test on paired differences (scores or ranks); it tests whether their pseudo-median is 0.",
         "seed 000 §3.4.1 (Wilcoxon 1945)"),
    Term("Bootstrap", r"[Bb]ootstrap",
         "Intervals computed by redrawing the base candidates many times (within each job) and recomputing the "
         "statistic.", "seed 000 §3.4"),
    Term("SESOI", r"\bSESOI\b",
         "Smallest effect size of interest: the smallest difference the auditor declared would matter; smaller "
         "ones are treated as equivalent to none.", "seed 003 §3.7"),
    Term("TOST (equivalence test)", r"\bTOST\b|[Ee]quivalen",
         "Two one-sided tests: a difference is called equivalent to none only when its interval lies inside "
         "±SESOI; not finding a difference is not the same as showing there is none.", "seed 003 §3.7"),
    Term("Cohen's d", r"Cohen|\bd_z\b",
         "A difference in scores divided by their standard deviation: a unit-free size of an effect.",
         "seed 003 §3.7"),
    Term("ICC", r"\bICC\b",
         "Intraclass correlation: the share of the score variance that lies between base candidates (or "
         "templates) rather than within them.", "seed 003 §3.7"),
    Term("Path-specific effects (TE, NDE, NIE)", r"\bNDE\b|[Pp]ath-specific",
         "From a causal model of the applicant population: the total effect (TE) of a protected attribute on the "
         "score, split into a direct effect (NDE) and effects through other résumé features (NIE, and its parts).",
         "seed 001 §5"),
    Term("Negative control (placebo), noise floor", r"[Pp]lacebo|[Nn]oise floor",
         "A variant that changes the reference résumé in a way that should not matter (synonyms, line breaks); how "
         "far it moves the metrics is the system's noise floor, against which the demographic variants are read.",
         "this tool (issue 38)"),
    Term("Positive control (sensitivity)", r"[Pp]ositive control",
         "A copy of the reference résumé weakened on purpose (for example a required skill removed); the audit "
         "must detect that it scores lower at its own number of candidates, which shows it could see a change of "
         "that kind.", "seed 003 §3.7 (validity protocol)"),
    Term("Self-test (planted bias)", r"[Ss]elf-test|[Pp]lanted",
         "A check that the audit's statistics detect a bias of the declared size when one is added to the data "
         "on purpose.", "seed 003 §3.7 (validity protocol)"),
    Term("Seed 000, seed 001, seed 003 (the source papers)", r"\b[Ss]eed 00[0-3]\b",
         "The published methods this tool implements, cited by section: seed 000, \u201cCounterfactual Bias "
         "Testing for Application Tracking Systems\u201d (the nine ranking metrics, their thresholds and Eq. 6); "
         "seed 001, \u201cPopResume\u201d (population profiles and path-specific effects); seed 003, \u201cMinimal "
         "but Conditional\u201d (effect sizes, TOST, ICC and the validity protocol).", "this tool's method sources"),
    Term("Level-1 score test", r"[Ll]evel-1 (score )?test",
         "Each protected category's own test that its scores differ from the reference's (Wilcoxon's signed-rank "
         "test on the paired score differences; for an axis contrast, the within-résumé model's t). It is the "
         "first level of the test hierarchy: only a category whose score test rejects has its other tests "
         "(ranks, shortlist) tested. Its power is the chance it detects a shift of the SESOI's size at the "
         "audit's number of candidates.", "Benjamini & Bogomolov (2014) §2; seed 003 §3.7 (power)"),
    Term("PAdES B-B, PAdES B-LTA (PDF signature levels)", r"PAdES",
         "Levels of a PDF's electronic signature (ETSI EN 319 142-1): B-B is signed and dated by the signing "
         "machine's clock and can be checked while the certificate is valid; B-LTA adds a trusted timestamp and "
         "the validation data, so it can still be checked after the certificate expires.", "ETSI EN 319 142-1"),
    Term("Equation 6 risk score", r"Eq(uation|\.) 6",
         "Seed 000's summary (3·FAIL + INVESTIGATE) / (3·all results) over its nine metrics, on "
         "seed 000's point-estimate statuses; high at 0.30 or more. It averages over rows, so it can dilute a "
         "category that fails everything: it is shown for comparison with the seed, not as a verdict.", "seed 000 §3.6"),
)


class _Text(HTMLParser):
    """Collects the character data a browser shows: not inside ``head``, ``style`` or ``script``."""

    HIDDEN = frozenset({"head", "style", "script", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hidden += tag in self.HIDDEN

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in self.HIDDEN and self._hidden > 0

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def visible_text(page: str) -> str:
    """The text a reader sees in an HTML page (the standard library's HTML parser): no tags, head, styles or
    scripts; entities decoded; runs of white space folded to one space."""
    parser = _Text()
    parser.feed(page)
    parser.close()
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def used(page: str) -> list[dict[str, str]]:
    """The terms of :data:`TERMS` that the HTML ``page`` uses, in :data:`TERMS`' order.

    Parameters
    ----------
    page : str
        The rendered report (HTML).

    Returns
    -------
    list of dict
        ``{"term", "definition", "source"}`` per term whose pattern matches the page's visible text.
    """
    text = visible_text(page)
    return [{"term": t.term, "definition": t.definition, "source": t.source}
            for t in TERMS if re.search(t.pattern, text)]
