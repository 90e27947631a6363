"""Package data of the template generator: one YAML file per job family plus ``common.yaml``.

The files hold facts from O*NET (technology names, job titles, education levels; CC BY 4.0, see
``README.md``) and text written for this project. :func:`load` reads one file with the safe YAML
loader and caches it; callers must not mutate what it returns.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from ruamel.yaml import YAML

#: Job family id -> YAML file name in this package.
FAMILY_FILES: dict[str, str] = {
    "data-analyst": "data_analyst.yaml",
    "software-developer": "software_developer.yaml",
    "registered-nurse": "registered_nurse.yaml",
    "accountant": "accountant.yaml",
    "marketing-specialist": "marketing_specialist.yaml",
}


@lru_cache(maxsize=None)
def load(name: str) -> Any:
    """Return the parsed content of ``name`` (a file of this package), cached."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    return YAML(typ="safe", pure=True).load(text)
