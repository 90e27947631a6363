"""The ``lexical`` system kind (issue 36 §4): BM25 by hand, against bm25s, TF-IDF against scikit-learn, a
résumé's score independent of its pool, the resolved system's fingerprint, and the kind on the real CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.systems.lexical import (BUNDLED_CORPUS, analyzer, read_bundled_corpus, stop_words_sha256,
                                      term_counts)
from conftest import run_cli
from runtime.systems.lexical import LexicalScorer

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TOKENS = {"lowercase": True, "stopwords": "english", "stemmer": "english"}
PLAIN_TOKENS = {"lowercase": True, "stopwords": "none", "stemmer": "none"}


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return read_bundled_corpus()


@pytest.fixture(scope="module")
def engines(corpus) -> dict[str, LexicalScorer]:
    return {"bm25": LexicalScorer({"method": "bm25", "tokens": DEFAULT_TOKENS, "bm25": {"k1": 1.5, "b": 0.75}}, corpus),
            "tfidf": LexicalScorer({"method": "tfidf", "tokens": DEFAULT_TOKENS}, corpus)}


def test_bm25_by_hand_on_three_documents():
    # N = 3, avgdl = (2 + 3 + 3) / 3; the job's terms: apple (n = 2), cherry (n = 1), fig (n = 0, not in the corpus)
    docs = ["apple banana", "apple cherry cherry", "banana durian elder"]
    engine = LexicalScorer({"method": "bm25", "tokens": PLAIN_TOKENS, "bm25": {"k1": 1.5, "b": 0.75}}, docs)
    assert engine.n_documents == 3 and engine.avgdl == pytest.approx(8 / 3, rel=1e-15)
    idf = {"apple": math.log(1 + 1.5 / 2.5), "cherry": math.log(1 + 2.5 / 1.5), "fig": math.log(1 + 3.5 / 0.5)}
    assert engine.idf(["apple", "cherry", "fig"]).tolist() == pytest.approx(list(idf.values()), rel=1e-15)
    # the résumé: |d| = 4 (grape counts in its length), tf(apple) = 1, tf(cherry) = 2; "apple" twice in the job
    # counts once
    norm = 1.5 * (1 - 0.75 + 0.75 * 4 / (8 / 3))  # 2.0625
    assert norm == 2.0625
    raw = idf["apple"] * 1 * 2.5 / (1 + norm) + idf["cherry"] * 2 * 2.5 / (2 + norm)
    constant = 2.5 * sum(idf.values())  # (k1 + 1) x the sum of the job terms' idf: the bound
    got = engine.scores("Apple, cherry; fig. APPLE!", ["cherry apple cherry grape", "banana", ""])
    assert got.tolist() == pytest.approx([raw / constant, 0.0, 0.0], rel=1e-14)
    assert got[0] == pytest.approx(0.18025238, abs=1e-8)  # the same, as a number


def test_bm25_equals_bm25s_lucene_when_the_corpus_is_scored(corpus, engines):
    bm25s = pytest.importorskip("bm25s")
    analyze = analyzer(DEFAULT_TOKENS)
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75, dtype="float64")
    retriever.index([analyze(d) for d in corpus], show_progress=False)
    engine = engines["bm25"]
    for job in corpus[-5:]:  # the five job descriptions
        terms = engine.query_terms(job)
        assert all(t in engine.column for t in terms)
        ours = engine.scores(job, corpus) * engine.idf(terms).sum()  # bm25s: no (k1 + 1), no division
        np.testing.assert_allclose(ours, retriever.get_scores(terms), rtol=1e-12, atol=1e-12)


def test_tfidf_is_the_cosine_of_scikit_learns_vectors(corpus, engines):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vec = TfidfVectorizer(analyzer=analyzer(DEFAULT_TOKENS)).fit(corpus)
    texts = corpus[:40] + ["Kubernetes and Rust only: no word here is in the corpus, zyxx", "",
                           "Nurse with SQL, Excel and patient care\nsecond line of the nurse"]
    for job in corpus[-5:]:
        want = cosine_similarity(vec.transform(texts), vec.transform([job])).ravel()
        np.testing.assert_allclose(engines["tfidf"].scores(job, texts), want, rtol=1e-12, atol=1e-15)
    # a text whose terms are all outside the corpus's vocabulary is ignored: 0, as scikit-learn's cosine
    assert engines["tfidf"].scores(corpus[-1], ["zyxx qwv"]).tolist() == [0.0]


_words = st.sampled_from(["data", "analyst", "SQL", "nurse", "patients", "the", "and", "Reporting", "reported",
                          "budget", "café", "x", "zyxx", "2024", "Python,", "-", "é"])
_text = st.lists(st.one_of(_words, st.sampled_from([" ", "\n", "\n\n", ". "])), max_size=40).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_text, min_size=1, max_size=8))
def test_counting_line_by_line_equals_counting_whole_texts(texts):
    from sklearn.feature_extraction.text import CountVectorizer

    analyze = analyzer(DEFAULT_TOKENS)
    counts, lengths, vocab = term_counts(texts, analyze)
    assert lengths.tolist() == [len(analyze(t)) for t in texts]
    if any(lengths):
        ref = CountVectorizer(analyzer=analyze).fit(texts)
        assert vocab == ref.get_feature_names_out().tolist()
        assert (counts != ref.transform(texts)).nnz == 0
    wanted = ["data", "zzz-absent", "nurs"]
    sub, sub_lengths, _ = term_counts(texts, analyze, vocabulary=wanted)
    assert sub_lengths.tolist() == lengths.tolist()
    assert sub.toarray().tolist() == [[analyze(t).count(w) for w in wanted] for t in texts]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["bm25", "tfidf"]), job=st.integers(0, 4), pool=st.lists(
    st.one_of(st.integers(0, 1999), _text), min_size=1, max_size=12), pick=st.integers(0, 11))
def test_a_resume_scores_the_same_alone_and_in_any_pool(engines, corpus, method, job, pool, pick):
    texts = [corpus[x] if isinstance(x, int) else x for x in pool]
    i = pick % len(texts)
    engine = engines[method]
    in_pool = engine.scores(corpus[2000 + job], texts)
    alone = engine.scores(corpus[2000 + job], [texts[i]])
    assert alone[0] == in_pool[i]  # bit for bit: no statistic comes from the pool
    assert ((in_pool >= 0) & (in_pool <= 1)).all()
    if method == "bm25":
        assert (in_pool < 1).all()


def test_the_bundled_corpus_is_what_the_script_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_lexical_corpus", REPO / "scripts" / "build_lexical_corpus.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    PER_FAMILY, build = script.PER_FAMILY, script.corpus
    frame = pd.read_csv(BUNDLED_CORPUS, dtype=str, keep_default_na=False)
    assert len(frame) == 2005 and (frame["kind"] == "resume").sum() == 5 * PER_FAMILY
    # identity-neutral: no cue slot is filled (every résumé starts with its summary heading)
    assert frame.loc[frame["kind"] == "resume", "text"].str.startswith("PROFESSIONAL SUMMARY\n").all()
    # the first family's résumés, rebuilt: the seed in the script gives the same text
    fresh = build()
    pd.testing.assert_frame_equal(fresh.head(50), frame.head(50))


def test_the_resolved_system_records_the_corpus_and_the_libraries(tmp_path):
    import importlib.metadata

    from compiler import compile_spec

    spec = _reduced(tmp_path, systems=("bm25",))
    (system,) = compile_spec(spec).resolved["systems"]
    assert system["corpus"] == {"source": "bundled", "sha256": _sha256(BUNDLED_CORPUS), "documents": 2005,
                                "avgdl": pytest.approx(188.3007481296758, rel=1e-12)}
    assert system["libraries"] == {"scikit-learn": importlib.metadata.version("scikit-learn"),
                                   "PyStemmer": importlib.metadata.version("PyStemmer")}
    assert system["stopwords_sha256"] == stop_words_sha256(DEFAULT_TOKENS) and len(system["stopwords_sha256"]) == 64
    assert system["bm25"] == {"k1": 1.5, "b": 0.75} and system["score_range"] == [0.0, 1.0]


def test_a_library_upgrade_is_a_changed_lock(tmp_path, monkeypatch):
    # the versions are in the resolved system: an upgrade changes the spec's digest, and execute refuses (exit 3)
    import compiler.systems.lexical as lexical
    from compiler import compile_spec
    from compiler.errors import LockError
    from compiler.lock import check_lock

    spec = _reduced(tmp_path, systems=("bm25",))
    assert run_cli("compile", spec.name, cwd=tmp_path).returncode == 0
    lock = json.loads((tmp_path / "spec.lock.json").read_text())
    check_lock(lock, compile_spec(spec).resolved)  # unchanged
    real = lexical.library_versions
    monkeypatch.setattr(lexical, "library_versions", lambda tokens: {**real(tokens), "PyStemmer": "99.0"})
    with pytest.raises(LockError) as err:
        check_lock(lock, compile_spec(spec).resolved)
    assert err.value.exit_code == 3 and "systems[0].libraries.PyStemmer" in str(err.value)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reduced(folder: Path, systems: tuple[str, ...] = ("bm25", "minilm")) -> Path:
    """``specs/lexical.yaml`` reduced: 2 jobs, K = 8 (M = 4), the systems named, 200 bootstrap draws."""
    import shutil

    text = (REPO / "specs" / "lexical.yaml").read_text()
    keep = []
    for line in text.splitlines():
        if any(line.startswith(f"  - {{id: {j}") for j in ("registered-nurse", "accountant", "marketing-specialist")):
            continue
        if line.startswith("  - {id: minilm") and "minilm" not in systems:
            continue
        if line.startswith("  - {id: bm25") and "bm25" not in systems:
            continue
        keep.append(line)
    text = "\n".join(keep) + "\n"
    for old, new in (("base_per_job: 40, matching_per_job: 20", "base_per_job: 8, matching_per_job: 4"),
                     ("k: {counterfactual: 10, group: 10, merit: 20}", "k: {counterfactual: 4, group: 4, merit: 4}"),
                     ("bootstrap: 1000", "bootstrap: 200")):
        assert old in text, old
        text = text.replace(old, new)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "specs" / "jobs", folder / "jobs", dirs_exist_ok=True)
    (folder / "spec.yaml").write_text(text)
    return folder / "spec.yaml"


@pytest.mark.slow
def test_reduced_lexical_spec_compares_bm25_and_minilm(tmp_path):
    """The reduced ``specs/lexical.yaml`` (2 jobs, K = 8) on the real CLI: the bm25 scores are the scorer's on
    the run's own résumés, and the report compares the two systems variant by variant."""
    pytest.importorskip("sentence_transformers")
    spec = _reduced(tmp_path)
    proc = run_cli("compile", spec.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("execute", spec.name, "--quiet", "--unsigned", "--no-pdf", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = sorted(p for p in (tmp_path / "reports").glob("*/*") if p.is_dir())
    resumes = pd.read_csv(run / "resumes.csv", keep_default_na=False)
    paired = pd.read_csv(run / "paired.csv", keep_default_na=False)
    bm25 = paired[paired["system"] == "bm25"].merge(resumes[["job_id", "cv_id", "variant", "text"]],
                                                   on=["job_id", "cv_id", "variant"], validate="one_to_one")
    assert len(bm25) == 2 * 8 * 10
    engine = LexicalScorer({"method": "bm25", "tokens": DEFAULT_TOKENS, "bm25": {"k1": 1.5, "b": 0.75}},
                           read_bundled_corpus())
    for job_id, g in bm25.groupby("job_id"):
        job = (tmp_path / "jobs" / f"{job_id}.md").read_text()
        np.testing.assert_allclose(g["score"].to_numpy(), engine.scores(job, g["text"].tolist()), rtol=1e-9)
    info = json.loads((run / "run.json").read_text())["systems_info"]["bm25"]
    assert info["corpus_documents"] == 2005 and info["method"] == "bm25"
    metrics = pd.read_csv(run / "metrics.csv", keep_default_na=False)
    delta = metrics[metrics["metric"] == "score_delta"]
    assert set(delta["system"]) == {"bm25", "minilm"}
    html = (run / "report.html").read_text()
    assert 'id="systems-compared"' in html and "Systems compared" in html
    section = html.split('id="systems-compared"', 1)[1].split("</section>", 1)[0]
    for variant in [f"V0{i}" for i in range(1, 10)]:
        assert f"<td>{variant}</td>" in section
    # each system's score_delta and status, as metrics.csv has them, and whether they agree
    v01 = delta[delta["variant"] == "V01"].set_index("system")
    for sid in ("bm25", "minilm"):
        assert v01.loc[sid, "status"] in section
    agree = "yes" if v01.loc["bm25", "status"] == v01.loc["minilm", "status"] else "no"
    row = section.split("<td>V01</td>", 1)[1].split("</tr>", 1)[0]
    assert f"<td>{agree}</td>" in row


def test_systems_compared_needs_two_systems_and_says_whether_statuses_agree():
    from runtime.report.sections.systems_compared import systems_compared_section

    rows = [("bm25", "default", "BASE", 0.0, 0.0, 0.0, "PASS"),
            ("bm25", "default", "V01", -0.0003, -0.0005, -0.0002, "PASS"),
            ("bm25", "default", "V02", 0.031, 0.012, 0.05, "INCONCLUSIVE"),
            ("minilm", "default", "BASE", 0.0, 0.0, 0.0, "PASS"),
            ("minilm", "default", "V01", -0.0123, -0.019, -0.006, "PASS"),
            ("minilm", "default", "V02", -0.061, -0.07, -0.052, "FAIL")]
    metrics = pd.DataFrame(rows, columns=["system", "condition", "variant", "value", "ci_low", "ci_high", "status"])
    metrics.insert(0, "metric", "score_delta")
    flips = metrics.assign(metric="flip_rate", status="FAIL")  # another metric is not compared
    assert systems_compared_section(metrics[metrics["system"] == "bm25"], reference="BASE") is None
    two_conditions = pd.concat([metrics[metrics["system"] == "bm25"],
                                metrics[metrics["system"] == "bm25"].assign(condition="fairness")])
    assert systems_compared_section(two_conditions, reference="BASE") is None  # one system
    section = systems_compared_section(pd.concat([metrics, flips]), reference="BASE")
    ctx = section.context
    assert (section.id, section.title, ctx["columns"]) == ("systems-compared", "Systems compared", ["bm25", "minilm"])
    assert [(r["variant"], [c["status"] for c in r["cells"]], r["agree"]) for r in ctx["rows"]] == [
        ("V01", ["PASS", "PASS"], "yes"), ("V02", ["INCONCLUSIVE", "FAIL"], "no")]
    assert ctx["rows"][0]["cells"][1] == {"delta": "−0.01230", "ci": "[−0.01900, −0.006000]", "status": "PASS"}
    assert ctx["summary"] == "The statuses agree on 1 of 2 variants."
