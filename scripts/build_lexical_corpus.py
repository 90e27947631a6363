"""Build the lexical kind's bundled corpus, ``runtime/systems/data/lexical_corpus.csv.gz`` (issue 36 §4).

The corpus gives a ``kind: lexical`` system its term statistics (idf, N, BM25's mean length), so that no
résumé's score depends on the other candidates'. It holds:

- 2,000 identity-neutral template résumés, 400 per template family (``data-analyst``, ``software-developer``,
  ``registered-nurse``, ``accountant``, ``marketing-specialist``), written by the template generator
  (:func:`runtime.generate.base.generate_base_candidates`, 200 matching the family and 200 from its donor
  families, as a pool holds) with every cue slot empty (:func:`runtime.generate.render.base_text`): no name,
  age, residence, language or disability line;
- the five families' job descriptions (:attr:`runtime.generate.families.JobFamily.description`).

Columns ``doc_id, kind, family, text`` (kind ``resume`` or ``job``); gzip with a fixed mtime, so a rebuild
with the same seed and generator writes the same bytes.

Usage: ``python scripts/build_lexical_corpus.py [--out runtime/systems/data/lexical_corpus.csv.gz]``
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
from pathlib import Path

import pandas as pd

from runtime.generate.base import generate_base_candidates
from runtime.generate.families import FAMILY_IDS, job_family
from runtime.generate.render import base_text

ROOT = Path(__file__).resolve().parents[1]
#: The corpus's seed (every draw of the template generator derives from it).
SEED = 20261203
#: Résumés per family, and how many of them match it.
PER_FAMILY, MATCHING = 400, 200


def corpus() -> pd.DataFrame:
    """The corpus's rows: the résumés (family by family), then the job descriptions."""
    rows = []
    for fam in FAMILY_IDS:
        for base in generate_base_candidates(job_id=f"corpus-{fam}", family=fam, k=PER_FAMILY, m=MATCHING, seed=SEED):
            rows.append({"doc_id": base.cv_id, "kind": "resume", "family": base.profile_family, "text": base_text(base)})
    for fam in FAMILY_IDS:
        rows.append({"doc_id": f"job-{fam}", "kind": "job", "family": fam, "text": job_family(fam).description})
    return pd.DataFrame(rows)


def write(frame: pd.DataFrame, path: Path) -> str:
    """Write ``frame`` as gzip CSV with mtime 0; return the file's sha256."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(frame.to_csv(index=False, lineterminator="\n").encode("utf-8"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runtime" / "systems" / "data" / "lexical_corpus.csv.gz")
    args = ap.parse_args()
    frame = corpus()
    sha = write(frame, args.out)
    print(f"{args.out}: {len(frame)} documents ({(frame['kind'] == 'resume').sum()} résumés), sha256 {sha}")


if __name__ == "__main__":
    main()
