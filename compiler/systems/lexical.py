"""The ``lexical`` system kind: a keyword ranker, BM25 (Lucene) or TF-IDF cosine, whose term statistics
come from a fixed corpus (issue 36 §4). Its spec model: :mod:`compiler.blocks.lexical`.

Why a fixed corpus: the usual lexical baseline takes idf (and BM25's mean length) from the candidate pool,
so a résumé's score moves when other résumés join it (measured in issue 36: every résumé of two pools
moved, by up to 14 %). Here idf, N and the mean length are the corpus's, and tf and the length are the
résumé's own: a résumé scores the same alone and in any pool.

This module holds the one tokeniser and counter of the kind (:func:`analyzer`, :func:`term_counts`): the
compiler reads the corpus's N and mean length with them, the runtime's adapter
(:mod:`runtime.systems.lexical`) scores with them.

Checks (``audit validate``, exit 2, each located): the corpus file (missing, not UTF-8 with the line named,
fewer than :data:`MIN_DOCUMENTS` documents, not a ``.txt``), ``bm25:`` with ``method: tfidf``.
Fingerprint: the digest of the method, its parameters, the tokens, the corpus's sha256, N and mean length,
the scikit-learn and PyStemmer versions and the stop-word list's sha256; each is in the resolved system, so
an upgrade of either library is a changed spec (exit 3), never a silent change of scores.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import importlib.metadata
from pathlib import Path
from typing import Any, Callable

from compiler.blocks import lexical as block
from compiler.errors import Issue
from compiler.hashing import digest, file_digest
from compiler.load import LoadedSpec
from compiler.paths import resolve_inside
from compiler.systems.base import CORE, FileRef, Requires, SystemKind, system_kind

#: The bundled corpus (``scripts/build_lexical_corpus.py``): CSV ``doc_id, kind, family, text``, gzip.
BUNDLED_CORPUS = Path(__file__).resolve().parents[2] / "runtime" / "systems" / "data" / "lexical_corpus.csv.gz"
#: The fewest documents a corpus may hold (fewer give idf values that say little about a term).
MIN_DOCUMENTS = 100
#: The most bytes of a corpus file read.
MAX_CORPUS_BYTES = 256 * 1024 * 1024
#: scikit-learn's default token pattern, the one the analyzer uses (recorded in the resolved system).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
#: BM25's parameters when ``bm25:`` is left out (Lucene's).
DEFAULT_BM25 = {"k1": 1.5, "b": 0.75}

MSG_CORPUS_SUFFIX = "corpus {ref!r} is not a .txt file; allowed: bundled, or a .txt file in the spec's folder (one document per line)"
MSG_CORPUS_UTF8 = "corpus {ref!r} is not UTF-8 text: line {line} ({err})"
MSG_CORPUS_SMALL = "corpus {ref!r} holds {n} documents (non-blank lines); a corpus needs at least {min}"
MSG_BM25_TFIDF = "bm25 is given but method is tfidf; remove bm25, or set method: bm25"


def library_versions(tokens: dict[str, Any]) -> dict[str, str]:
    """The versions of the libraries that tokenise (scikit-learn; PyStemmer when stemming)."""
    out = {"scikit-learn": importlib.metadata.version("scikit-learn")}
    if tokens["stemmer"] != "none":
        out["PyStemmer"] = importlib.metadata.version("PyStemmer")
    return out


def stop_words(tokens: dict[str, Any]) -> frozenset[str] | None:
    """The stop-word list removed (scikit-learn's ``ENGLISH_STOP_WORDS``), or None."""
    if tokens["stopwords"] == "none":
        return None
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def stop_words_sha256(tokens: dict[str, Any]) -> str | None:
    """sha256 of the stop-word list, sorted and joined by newlines (UTF-8), or None without one."""
    words = stop_words(tokens)
    return None if words is None else hashlib.sha256("\n".join(sorted(words)).encode()).hexdigest()


def analyzer(tokens: dict[str, Any]) -> Callable[[str], list[str]]:
    """The kind's tokeniser: scikit-learn's word analyzer (:data:`TOKEN_PATTERN`, lower-cased when
    ``lowercase``, stop words removed), then each token stemmed by PyStemmer's Snowball stemmer.

    Parameters
    ----------
    tokens : dict
        ``{lowercase: bool, stopwords: "english" | "none", stemmer: "english" | "none"}``.

    Returns
    -------
    callable
        text -> list of terms, in text order (repeats kept).
    """
    from sklearn.feature_extraction.text import CountVectorizer

    words = stop_words(tokens)
    base = CountVectorizer(lowercase=bool(tokens["lowercase"]), token_pattern=TOKEN_PATTERN,
                           stop_words=None if words is None else list(words)).build_analyzer()
    if tokens["stemmer"] == "none":
        return base
    import Stemmer

    stem = Stemmer.Stemmer(tokens["stemmer"]).stemWords
    return lambda text: stem(base(text))


def term_counts(texts: list[str], analyze: Callable[[str], list[str]], vocabulary: list[str] | None = None):
    """Term counts and lengths of texts, each text counted on its own.

    A term never spans a line (a token is a run of word characters), so each distinct line of all the
    texts is tokenised once and a text's counts are the sum of its lines' (résumés share most of their
    lines: a correspondence matrix repeats a base résumé under every variant). The result equals
    ``CountVectorizer(analyzer=analyze).fit_transform(texts)`` column for column (a test checks it).

    Parameters
    ----------
    texts : list of str
        The documents.
    analyze : callable
        :func:`analyzer`'s tokeniser.
    vocabulary : list of str, optional
        The columns wanted, in order (terms no text holds get zero columns); default: every term, sorted.

    Returns
    -------
    counts : scipy.sparse.csr_matrix
        Shape (len(texts), len(vocabulary)), int64: how often each term occurs in each text.
    lengths : numpy.ndarray
        Shape (len(texts),), int64: each text's number of terms (all of them, in or out of ``vocabulary``).
    vocabulary : list of str
        The columns' terms.
    """
    import numpy as np
    import pandas as pd
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer

    split = [t.split("\n") for t in texts]
    flat = np.empty(sum(map(len, split)), dtype=object)
    flat[:] = list(itertools.chain.from_iterable(split))
    codes, uniques = pd.factorize(flat, sort=False)  # a hash table over the lines (no pandas string dtype)
    doc = np.repeat(np.arange(len(texts), dtype=np.int64), np.fromiter(map(len, split), np.int64, len(split)))
    incidence = sp.csr_matrix((np.ones(len(codes), dtype=np.int64), (doc, codes)),
                              shape=(len(texts), len(uniques)))
    if len(uniques) == 0:  # no text
        vocab = list(vocabulary or [])
        return sp.csr_matrix((len(texts), len(vocab)), dtype=np.int64), np.zeros(len(texts), np.int64), vocab
    vec = CountVectorizer(analyzer=analyze, dtype=np.int64)
    try:
        per_line = vec.fit_transform(list(uniques))
        terms = vec.get_feature_names_out().tolist()
    except ValueError:  # no line holds a term ("empty vocabulary")
        per_line, terms = sp.csr_matrix((len(uniques), 0), dtype=np.int64), []
    lengths = np.asarray(incidence @ np.asarray(per_line.sum(axis=1)).ravel(), dtype=np.int64).ravel()
    if vocabulary is None:
        vocab, selected = terms, per_line
    else:
        vocab = list(vocabulary)
        where = {t: j for j, t in enumerate(terms)}
        cols = [where.get(t, -1) for t in vocab]
        present = [i for i, c in enumerate(cols) if c >= 0]
        pick = sp.csr_matrix((np.ones(len(present), dtype=np.int64), ([cols[i] for i in present], present)),
                             shape=(len(terms), len(vocab)))
        selected = per_line @ pick
    counts = sp.csr_matrix(incidence @ selected, dtype=np.int64)
    counts.sort_indices()
    return counts, lengths, vocab


def read_txt_corpus(path: Path) -> tuple[list[str], int | None, str | None]:
    """The documents of a ``.txt`` corpus (one per non-blank line, ``\\r`` stripped), or where it is not UTF-8.

    Returns
    -------
    documents : list of str
        Empty when the file is not UTF-8.
    bad_line : int or None
        The 1-based line of the first byte that is not UTF-8, else None.
    reason : str or None
        The decoder's reason, else None.
    """
    from compiler.files import read_regular

    data = read_regular(path, cap=MAX_CORPUS_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return [], data[:err.start].count(b"\n") + 1, err.reason
    return [ln.rstrip("\r") for ln in text.split("\n") if ln.strip()], None, None


def read_bundled_corpus() -> list[str]:
    """The documents of the bundled corpus (2,000 template résumés, then the five job descriptions)."""
    import pandas as pd

    return pd.read_csv(BUNDLED_CORPUS, compression="gzip", dtype=str, keep_default_na=False)["text"].tolist()


def corpus_file(corpus: str, folder: Path) -> Path:
    """The file a ``corpus`` value names (``bundled``: :data:`BUNDLED_CORPUS`)."""
    if corpus == "bundled":
        return BUNDLED_CORPUS
    path, err = resolve_inside(folder, corpus)
    if err:  # validate() ran first; this only guards direct callers
        raise FileNotFoundError(err)
    return path


def read_corpus(corpus: str, folder: Path) -> list[str]:
    """The documents of ``corpus`` (``bundled`` or a ``.txt`` in the spec's folder; validate() ran first)."""
    if corpus == "bundled":
        return read_bundled_corpus()
    docs, line, reason = read_txt_corpus(corpus_file(corpus, folder))
    if line is not None:
        raise ValueError(MSG_CORPUS_UTF8.format(ref=corpus, line=line, err=reason))
    return docs


@functools.lru_cache(maxsize=8)
def _stats(path: str, sha256: str, tokens: tuple[tuple[str, Any], ...]) -> tuple[int, float]:
    docs = read_bundled_corpus() if Path(path) == BUNDLED_CORPUS else read_txt_corpus(Path(path))[0]
    _, lengths, _ = term_counts(docs, analyzer(dict(tokens)), vocabulary=[])
    return len(docs), float(lengths.mean())


def corpus_stats(corpus: str, folder: Path, tokens: dict[str, Any]) -> dict[str, Any]:
    """``{sha256, documents, avgdl}`` of a corpus under the given tokens (cached per file digest).

    ``avgdl`` is the mean number of terms of a document (after stop words; BM25's mean length).
    """
    path = corpus_file(corpus, folder)
    sha = file_digest(path)["digest"]
    n, avgdl = _stats(str(path), sha, tuple(sorted(tokens.items())))
    return {"sha256": sha, "documents": n, "avgdl": avgdl}


@system_kind
class Lexical(SystemKind):
    """A keyword ranker: BM25 (Lucene) or TF-IDF cosine with a fixed corpus's statistics (issue 36 §4);
    fingerprint: the digest of the method, parameters, tokens, corpus digest and statistics, library versions
    and stop-word list."""

    id = "lexical"
    model = block.System

    def requires(self, system: Any) -> Requires:
        """scikit-learn and PyStemmer are part of the core install (lexical runs on the light install)."""
        return CORE

    def files(self, i: int, system: Any) -> list[FileRef]:
        return [] if system.corpus == "bundled" else [(("systems", i, "corpus"), system.corpus, "file")]

    def issues(self, ls: LoadedSpec, i: int, system: Any) -> list[Issue]:
        out: list[Issue] = []
        at = ("systems", i)
        if system.method == "tfidf" and system.bm25 is not None:
            out.append(ls.issue(at + ("bm25",), MSG_BM25_TFIDF, key=True))
        if system.corpus != "bundled":
            if not system.corpus.lower().endswith(".txt"):
                out.append(ls.issue(at + ("corpus",), MSG_CORPUS_SUFFIX.format(ref=system.corpus)))
                return out
            path, err = resolve_inside(ls.folder, system.corpus)
            if err is not None:  # the file check names it
                return out
            try:
                docs, line, reason = read_txt_corpus(path)
            except OSError:  # the file check names it
                return out
            if line is not None:
                out.append(ls.issue(at + ("corpus",), MSG_CORPUS_UTF8.format(ref=system.corpus, line=line, err=reason)))
            elif len(docs) < MIN_DOCUMENTS:
                out.append(ls.issue(at + ("corpus",), MSG_CORPUS_SMALL.format(ref=system.corpus, n=len(docs),
                                                                              min=MIN_DOCUMENTS)))
        return out

    def resolve(self, system: Any, ls: LoadedSpec) -> dict[str, Any]:
        tokens = system.tokens.model_dump()
        stats = corpus_stats(system.corpus, ls.folder, tokens)
        corpus = {"source": "bundled"} if system.corpus == "bundled" else {"source": "path", "path": system.corpus}
        resolved: dict[str, Any] = {
            "id": system.id, "kind": system.kind, "method": system.method,
            "corpus": {**corpus, **stats},
            "tokens": {**tokens, "token_pattern": TOKEN_PATTERN},
            "stopwords_sha256": stop_words_sha256(tokens),
            "libraries": library_versions(tokens),
            "score_range": list(system.score_range),
        }
        if system.method == "bm25":
            resolved["bm25"] = system.bm25.model_dump() if system.bm25 is not None else dict(DEFAULT_BM25)
        resolved["fingerprint"] = lexical_fingerprint(resolved)
        return resolved

    def source(self, resolved: dict[str, Any]) -> str:
        """The method, its parameters and the corpus, in words (TF-IDF: terms outside the corpus are ignored)."""
        c = resolved["corpus"]
        where = "the bundled corpus" if c["source"] == "bundled" else f"corpus {c['path']}"
        stats = f"{where}: {c['documents']:,} documents, mean length {c['avgdl']:.1f} terms"
        if resolved["method"] == "bm25":
            p = resolved["bm25"]
            return f"BM25 (Lucene, k1 = {p['k1']:g}, b = {p['b']:g}) with the idf of {stats}"
        return f"TF-IDF cosine fitted on {stats}; terms outside its vocabulary are ignored"


def lexical_fingerprint(resolved: dict[str, Any]) -> dict[str, str]:
    """``{algorithm, digest}`` of everything a lexical system's scores depend on (method, bm25, tokens,
    corpus digest and statistics, library versions, stop-word list)."""
    keys = ("method", "bm25", "tokens", "corpus", "libraries", "stopwords_sha256")
    return digest({k: resolved.get(k) for k in keys})
