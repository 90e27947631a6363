"""Spec model of the ``lexical`` system kind: a keyword ranker (BM25 or TF-IDF cosine) whose term
statistics come from a fixed corpus, never from the candidates (issue 36 §4)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from compiler.spectypes import Id, Strict

#: The ``systems[].kind`` this model declares.
KIND = "lexical"
#: Position among the built-in kinds (the ``systems`` union and every list of kinds follow it).
ORDER = 9


class LexicalTokens(Strict):
    """How a text becomes terms: scikit-learn's word analyzer (tokens of two or more word characters),
    then stop words removed, then each token stemmed (PyStemmer's Snowball stemmer)."""

    lowercase: bool = Field(default=True, description="Lower-case the text before tokenising.")
    stopwords: Literal["english", "none"] = Field(
        default="english", description="Stop words removed: scikit-learn's English list, or none.")
    stemmer: Literal["english", "none"] = Field(
        default="english", description="Snowball stemmer applied to each token (PyStemmer): english, or none.")


class Bm25Params(Strict):
    """BM25's two parameters (Lucene's defaults)."""

    k1: float = Field(default=1.5, ge=0, le=10, description="Term-frequency saturation (>= 0).")
    b: float = Field(default=0.75, ge=0, le=1, description="Length normalisation, 0 (none) to 1 (full).")


class LexicalSystem(Strict):
    """A keyword ranker: the job's description is the query; BM25 (Lucene) or TF-IDF cosine, with the term
    statistics (idf, N, mean length) of a fixed corpus, so that no résumé's score depends on another's.
    Scores lie in [0, 1]."""

    id: Id
    kind: Literal["lexical"]
    method: Literal["bm25", "tfidf"] = Field(description="bm25: Lucene BM25 over the corpus's statistics, divided "
                                             "by its bound (k1 + 1) x sum of the job terms' idf; tfidf: cosine of "
                                             "TF-IDF vectors fitted on the corpus.")
    corpus: str = Field(default="bundled", min_length=1, description="bundled (2,000 template résumés and the five "
                        "template job descriptions, shipped with the tool), or a .txt file in the spec's folder, one "
                        "document per line (UTF-8, at least 100 non-blank lines).")
    tokens: LexicalTokens = Field(default_factory=LexicalTokens, description="Tokenising: lowercase, stop words, stemmer.")
    bm25: Bm25Params | None = Field(default=None, description="BM25's k1 and b (method bm25 only); default "
                                    "{k1: 1.5, b: 0.75}.")

    @property
    def score_range(self) -> tuple[float, float]:
        """Both methods score in [0, 1] (BM25 divided by its bound; a cosine of non-negative vectors): fixed."""
        return (0.0, 1.0)


System = LexicalSystem
