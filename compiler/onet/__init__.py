"""The bundled O*NET 29.3 tables: any O*NET occupation as a job of the template generator (issue 32 §1).

The package data (``compiler/onet/*.csv.gz``) is built by ``scripts/build_onet_bundle.py`` from the O*NET 29.3
Database (May 2025 release) by the U.S. Department of Labor, Employment and Training Administration
(USDOL/ETA), used under the CC BY 4.0 licence; this project has modified the information (columns and rows
kept, see the script). It lives in the compiler because validation reads it (an unknown code, or one without
task statements, is a located error) and the lock records each table's sha256; the generator
(:mod:`runtime.generate.onet`) reads the same tables.

Tables (:func:`table`), one row per fact, strings as in O*NET:

========================  ===================================================================
``occupations``           ``code, title, job_zone`` (1-5, ``""`` where O*NET gives none)
``tasks``                 ``code, task_id, task, task_type`` (Core / Supplemental)
``technology``            ``code, example, hot`` (Hot Technology, Y/N)
``skills``, ``knowledge``  ``code, element, importance`` (IM scale 1-5; the 12 most important)
``education``             ``code, category, share`` (Required Level of Education, categories 1-12, %)
``titles``                ``code, title, source`` (``reported`` job titles, short ``alternate`` titles)
========================  ===================================================================
"""

from __future__ import annotations

import difflib
import hashlib
import re
from functools import lru_cache
from importlib import resources

import pandas as pd

#: The O*NET release the bundle was built from.
RELEASE = "29.3"
#: Bundled tables, in the order the lock lists them.
TABLES: tuple[str, ...] = ("occupations", "tasks", "technology", "skills", "knowledge", "education", "titles")
#: The attribution O*NET's licence asks for (text generated from the data: the "modified" form).
ATTRIBUTION = (
    "This product includes information from the O*NET 29.3 Database by the U.S. Department of Labor, "
    "Employment and Training Administration (USDOL/ETA). Used under the CC BY 4.0 license. O*NET® is a "
    "trademark of USDOL/ETA. audit-compiler has modified all or some of this information. USDOL/ETA has not "
    "approved, endorsed, or tested these modifications."
)
#: Least task statements an occupation needs: one résumé writes up to this many duties (seed 000 §3.1.2).
MIN_TASKS = 5
#: Least rated skills and knowledge areas (together) an occupation needs for a résumé's skills line.
MIN_RATED = 4  # of its own, or of a neighbour that stands for it (ratings_from)
#: An O*NET-SOC code: ``NN-NNNN.NN``.
CODE_PATTERN = r"^\d{2}-\d{4}\.\d{2}$"

MSG_UNKNOWN = "unknown O*NET-SOC code {code!r} (O*NET {release}); closest titles: {closest}"
MSG_LACKS = ("O*NET-SOC code {code} ({title}) lacks what a résumé needs: {lacks}; closest titles: {closest}")


@lru_cache(maxsize=None)
def table(name: str) -> pd.DataFrame:
    """One bundled table as strings (``task_id``, ``category`` as int; ``importance``, ``share`` as float).

    Raises
    ------
    KeyError
        ``name`` is not one of :data:`TABLES`.
    """
    if name not in TABLES:
        raise KeyError(f"unknown O*NET table {name!r}; allowed: {', '.join(TABLES)}")
    with resources.files(__name__).joinpath(f"{name}.csv.gz").open("rb") as fh:
        frame = pd.read_csv(fh, compression="gzip", dtype=str, keep_default_na=False)
    for col, kind in (("task_id", int), ("category", int), ("importance", float), ("share", float)):
        if col in frame:
            frame[col] = frame[col].astype(kind)
    return frame


@lru_cache(maxsize=None)
def table_digests() -> dict[str, str]:
    """``{table file name: sha256 hex}`` of every bundled table (what the lock records)."""
    root = resources.files(__name__)
    return {f"{name}.csv.gz": hashlib.sha256(root.joinpath(f"{name}.csv.gz").read_bytes()).hexdigest()
            for name in TABLES}


def provenance(code: str) -> dict:
    """What a job's resolved ``onet`` entry records: the code, its title, the code whose skill and knowledge
    ratings are used (:func:`ratings_from`), the release and the bundled tables' digests."""
    return {"code": code, "title": title(code), "ratings_from": ratings_from(code), "release": RELEASE,
            "tables": table_digests()}


@lru_cache(maxsize=None)
def _occupations() -> dict[str, dict]:
    return {r.code: {"title": r.title, "job_zone": int(r.job_zone) if r.job_zone else None}
            for r in table("occupations").itertuples(index=False)}


@lru_cache(maxsize=None)
def _counts() -> dict[str, tuple[int, int]]:
    tasks = table("tasks").groupby("code").size()
    rated = pd.concat([table("skills"), table("knowledge")]).groupby("code").size()
    return {code: (int(tasks.get(code, 0)), int(rated.get(code, 0))) for code in _occupations()}


def title(code: str) -> str:
    """The O*NET title of ``code`` (KeyError when unknown)."""
    return _occupations()[code]["title"]


def job_zone(code: str) -> int | None:
    """Job Zone 1-5 of ``code`` (None where O*NET gives none)."""
    return _occupations()[code]["job_zone"]


def major_group(code: str) -> str:
    """The SOC major group: the first two digits (``53`` for 53-7062.00)."""
    return code[:2]


def ratings_from(code: str) -> str | None:
    """The code whose skill and knowledge ratings stand for ``code``'s: ``code`` itself when O*NET rates at
    least :data:`MIN_RATED` of them, else the nearest rated code of its broad group (``15-125``), then of its
    minor group (``15-1``), nearest by code number (O*NET 29.3 rates no skills for 15-1252.00 Software
    Developers: 15-1251.00 Computer Programmers stands for it, as in ``../shared/data/onet/``); None when
    none is rated."""
    counts = _counts()
    if code in counts and counts[code][1] >= MIN_RATED:
        return code
    number = float(code[3:].replace(".", "")) if re.match(CODE_PATTERN, code) else 0.0
    for prefix in (code[:6], code[:4]):
        near = [c for c in counts if c.startswith(prefix) and c != code and counts[c][1] >= MIN_RATED]
        if near:
            return min(near, key=lambda c: (abs(float(c[3:].replace(".", "")) - number), c))
    return None


def usable(code: str) -> bool:
    """Whether a résumé can be written for ``code``: known, a job zone, at least :data:`MIN_TASKS` task
    statements, and :data:`MIN_RATED` rated skills or knowledge areas of its own or of a neighbour
    (:func:`ratings_from`)."""
    occ = _occupations().get(code)
    if occ is None or occ["job_zone"] is None:
        return False
    return _counts()[code][0] >= MIN_TASKS and ratings_from(code) is not None


@lru_cache(maxsize=None)
def _title_index() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every title of a usable occupation (its O*NET title, reported and alternate titles), lower-cased,
    with its code, for :func:`closest_titles`."""
    rows = [(t, c) for c, o in _occupations().items() for t in (o["title"],)]
    rows += list(table("titles")[["title", "code"]].itertuples(index=False, name=None))
    rows = [(t.lower(), c) for t, c in rows if usable(c)]
    return tuple(t for t, _ in rows), tuple(c for _, c in rows)


@lru_cache(maxsize=None)
def _word_index() -> dict[str, tuple[int, ...]]:
    """Word (3+ letters) -> the positions in :func:`_title_index` of the titles holding it."""
    out: dict[str, list[int]] = {}
    for i, text in enumerate(_title_index()[0]):
        for w in set(re.findall(r"[a-z]{3,}", text)):
            out.setdefault(w, []).append(i)
    return {w: tuple(v) for w, v in out.items()}


def closest_titles(query: str, *, n: int = 3, within: str = "") -> list[str]:
    """The ``n`` usable occupations whose titles read closest to ``query`` (difflib's ratio over O*NET
    titles, reported and alternate titles), each as ``"Title (code)"``, closest first (ties: the code with more
    titles that read close, then by code);
    ``within``: only codes that start with it (e.g. ``"13-2"``, a minor group)."""
    titles, codes = _title_index()
    query = re.sub(r"\s+", " ", query.lower()).strip()
    # only titles that share a word of 3+ letters with the query (all titles when none does)
    index = _word_index()
    rows = sorted({i for w in re.findall(r"[a-z]{3,}", query) for i in index.get(w, ())}) or range(len(titles))
    rows = [i for i in rows if codes[i].startswith(within)] if within else list(rows)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(query)
    best: dict[str, float] = {}
    near: dict[str, int] = {}  # titles of the code that read close (ratio >= 0.6): breaks ties of the best
    for i in rows:
        text, code = titles[i], codes[i]
        matcher.set_seq1(text)
        if matcher.real_quick_ratio() < 0.6 and matcher.real_quick_ratio() <= best.get(code, 0.0):
            continue
        ratio = matcher.ratio()
        best[code] = max(best.get(code, 0.0), ratio)
        near[code] = near.get(code, 0) + (ratio >= 0.6)
    best_codes = sorted(best, key=lambda c: (-round(best[c], 6), -near[c], c))[:n]
    return [f"{title(c)} ({c})" for c in best_codes]


def check_code(code: str, job_title: str | None = None) -> str | None:
    """The problem with ``code`` as a job's occupation, or None when a résumé can be written for it.

    Parameters
    ----------
    code : str
        An O*NET-SOC code (``53-7062.00``).
    job_title : str, optional
        The job's title in the spec: the closest titles are those closest to it (else to the code's own
        O*NET title, else to the code's digits' neighbours).

    Returns
    -------
    str or None
        :data:`MSG_UNKNOWN` for a code O*NET 29.3 does not have; :data:`MSG_LACKS` for one without a job zone,
        :data:`MIN_TASKS` task statements (the "All Other" codes have none) or :data:`MIN_RATED` rated skills
        and knowledge areas. Both name the three closest usable titles (:func:`closest_titles`).
    """
    if usable(code):
        return None
    occ = _occupations().get(code)
    query = job_title or (occ["title"].replace(", All Other", "") if occ else None)
    if query:
        # a known code without tasks (an "All Other" code): its minor group's occupations, when it has any
        within = code[:4] if occ is not None and closest_titles(query, n=1, within=code[:4]) else ""
        closest = "; ".join(closest_titles(query, within=within))
    else:
        prefix = code[:6]
        near = [c for c in _occupations() if c.startswith(prefix) and usable(c)][:3]
        near = near or [c for c in _occupations() if c[:2] == code[:2] and usable(c)][:3]
        closest = "; ".join(f"{title(c)} ({c})" for c in near) or (
            f"none in major group {code[:2]} (give the job a title to see the titles closest to it)")
    if occ is None:
        return MSG_UNKNOWN.format(code=code, release=RELEASE, closest=closest)
    tasks, rated = _counts()[code]
    lacks = []
    if occ["job_zone"] is None:
        lacks.append("no job zone")
    if tasks < MIN_TASKS:
        lacks.append(f"{tasks} task statements (at least {MIN_TASKS})")
    if ratings_from(code) is None:
        lacks.append(f"{rated} rated skills or knowledge areas (at least {MIN_RATED})")
    return MSG_LACKS.format(code=code, title=occ["title"], lacks=", ".join(lacks), closest=closest)
