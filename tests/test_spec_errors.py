"""Invalid specs exit 2 with ``file:line:col: key.path: message`` and no traceback (golden files).

Set UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate message change, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import TINY_SCORES, TINY_SPEC, run_cli

GOLDEN = Path(__file__).parent / "golden" / "errors"

#: A valid ``kind: http`` system (issue 35 §2) in the tiny spec, with a generator and a job text; the cases
#: below replace one part of it.
HTTP_SYSTEM = ("{id: vendor, kind: http, url: 'https://scoring.vendor.example/v1/score', version: kw 2.3, "
               "score_range: [0, 100], request: {body: {id: $id, job: $job, resume: $resume}}, response: {score: score}}")


def _http(*pairs: tuple[str, str], job: str = "- {id: data-analyst, description: Analyse data}") -> str:
    """The tiny spec scoring through :data:`HTTP_SYSTEM`, with each (old, new) of ``pairs`` replaced in it."""
    system = HTTP_SYSTEM
    for old, new in pairs:
        assert old in system, old
        system = system.replace(old, new)
    return (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 4, matching_per_job: 2}\njobs:")
            .replace("- {id: j1}", job).replace("{id: vendor, kind: precomputed, path: scores.csv}", system))

#: A valid ``kind: command`` and ``kind: python`` system (issue 36 §2-§3), as :data:`HTTP_SYSTEM`.
COMMAND_SYSTEM = "{id: vendor, kind: command, argv: [python3, tools/kw.py], version: kw 1.4, score_range: [0, 100]}"
PYTHON_SYSTEM = "{id: vendor, kind: python, function: 'tools/kw.py:score_batch', version: sdk 3.1, score_range: [0, 1]}"
#: The vendor's file both name (validate reads its AST and sha256; it never runs it).
VENDOR_PY = "import sys\n\n\ndef score_batch(items):\n    return {}\n\n\nasync def score_async(items):\n    return {}\n"


def _exec(system: str, *pairs: tuple[str, str]) -> str:
    """The tiny spec with a generator, a job text and ``system`` (:data:`COMMAND_SYSTEM` or :data:`PYTHON_SYSTEM`),
    each (old, new) of ``pairs`` replaced in it."""
    for old, new in pairs:
        assert old in system, old
        system = system.replace(old, new)
    return _http().replace(HTTP_SYSTEM, system)


_CONTROLS = "    V01: {{sex_gender: F}}\n  negative_controls:\n{}"
_POSITIVE = "  positive_controls:\n{}"
#: TINY_SPEC with the template generator and an embedding system (the tool writes the résumés).
_GEN_SPEC = TINY_SPEC.replace("jobs:\n  - {id: j1}", "candidates: {base_per_job: 4, matching_per_job: 2}\njobs:\n  - "
                              "{id: data-analyst, description: Analyse data}").replace(
    "{id: vendor, kind: precomputed, path: scores.csv}", "{id: minilm, kind: embedding}")

#: A score-file spec whose variants are race x sex (issue 37 §3: the hints of an unknown label).
_HINT_SPEC = TINY_SPEC.replace("""  sex_gender:
    slot: name
    levels: [M, F]
    cues: {M: [John Smith], F: [Jane Smith]}
""", """  race:
    levels: [WHITE, BLACK]
  sex:
    levels: [M, F]
""").replace("""  reference: BASE
  table:
    BASE: {sex_gender: M}
    V01: {sex_gender: F}
""", """  reference: WHITE_M
  table:
    WHITE_M: {race: WHITE, sex: M}
    WHITE_F: {race: WHITE, sex: F}
    BLACK_M: {race: BLACK, sex: M}
    BLACK_F: {race: BLACK, sex: F}
""")


def _hint_scores(label: str, score: str = "0.4", scale: float = 1.0) -> str:
    """Scores of 2 candidates x 4 variants of job j1 (on 0-``scale``), the first BLACK_F row's label
    replaced by ``label`` and its score by ``score``."""
    rows = ["job_id,cv_id,variant,score,is_true_match"]
    for c in range(1, 3):
        for v, variant in enumerate(["WHITE_M", "WHITE_F", "BLACK_M", "BLACK_F"]):
            rows.append(f"j1,c{c},{variant},{(0.5 + 0.1 * v) * scale:g},{int(c == 1)}")
    rows[4] = f"j1,c1,{label},{score},1"
    return "\n".join(rows) + "\n"


#: A population design (issue 23) scored by a kind that needs paired résumés (``paired_only``).
POP_HTTP = """\
audit: pop-http
title: Population scored by an API
seed: 11
jobs:
  - {id: accountant, title: Accountant, description: Prepare and examine financial records.}
candidates:
  generator: population
  profiles_per_job: 120
  roles:
    x: {attribute: gender, x0: female, x1: male}
    z: [age, race]
    b: [education, experience]
    r: [first_name, surname, region]
systems:
  - {id: minilm, kind: embedding}
  - {id: kw, kind: command, argv: [python3, kw.py], version: kw 1.4, score_range: [0, 100]}
"""

#: A valid population design (the embedding system only) whose causal equivalence margin is 0 (issue 39 §7).
POP_MARGIN_ZERO = POP_HTTP.replace(
    "  - {id: kw, kind: command, argv: [python3, kw.py], version: kw 1.4, score_range: [0, 100]}\n", "").replace(
    "    r: [first_name, surname, region]\n", "    r: [first_name, surname, region]\n  estimation: {folds: 5, margin: 0}\n")

CASES = {
    "paired_only_kind_on_population": (POP_HTTP, {"kw.py": "print()\n"}),
    "causal_margin_zero": (POP_MARGIN_ZERO, {}),
    "syntax_error": (TINY_SPEC.replace("levels: [M, F]", "levels: [M, F"), {}),
    "unknown_key": (TINY_SPEC.replace("seed: 7", "seed: 7\ncolour: blue"), {}),
    "wrong_type": (TINY_SPEC.replace("seed: 7", "seed: seven"), {}),
    "undefined_level": (TINY_SPEC.replace("V01: {sex_gender: F}", "V01: {sex_gender: X}"), {}),
    "inverted_thresholds": (TINY_SPEC.replace("{pass: 0.03, investigate: 0.05}", "{pass: 0.05, investigate: 0.03}"), {}),
    # issue 29 §2: the selection ratio's PASS band is [pass, 1/pass]: pass in (0, 1], investigate below it
    "selection_ratio_pass_above_one": (TINY_SPEC.replace("    score_delta: {pass: 0.03, investigate: 0.05}",
                                                         "    selection_ratio: {pass: 1.2, investigate: 0.7}"), {}),
    "selection_ratio_investigate_above_pass": (TINY_SPEC.replace(
        "    score_delta: {pass: 0.03, investigate: 0.05}", "    selection_ratio: {pass: 0.7, investigate: 0.8}"), {}),
    "missing_file": (TINY_SPEC.replace("path: scores.csv", "path: vendor/scores.csv"), {}),
    "path_escapes": (TINY_SPEC.replace("path: scores.csv", "path: ../outside.csv"), {}),
    "duplicate_key": (TINY_SPEC.replace("seed: 7", "seed: 7\nseed: 8"), {}),
    "unknown_metric": (TINY_SPEC.replace("score_delta: {pass", "score_gap: {pass"), {}),
    "missing_axis_in_variant": (TINY_SPEC.replace("sex_gender:\n    slot", "age_signal:\n    slot: age\n    levels: [Young, Older]\n    cues: {Young: '', Older: 'Born 1960'}\n  sex_gender:\n    slot"), {}),
    "m_greater_than_k": (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 20, matching_per_job: 30}\njobs:").replace("- {id: j1}", "- {id: data-analyst, description: Analyse data}"), {}),
    "k_smaller_than_shortlist": (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 1, matching_per_job: 1}\njobs:").replace("- {id: j1}", "- {id: data-analyst, description: Analyse data}"), {}),
    "unknown_system_kind": (TINY_SPEC.replace("kind: precomputed", "kind: oracle"), {}),
    "missing_reference": (TINY_SPEC.replace("BASE: {sex_gender: M}", "REF: {sex_gender: M}"), {}),
    "nested_duplicate_key": (TINY_SPEC.replace("    slot: name\n", "    slot: name\n    slot: age\n"), {}),
    "missing_system_kind": (TINY_SPEC.replace("kind: precomputed, ", ""), {}),
    "path_is_a_folder": (TINY_SPEC.replace("path: scores.csv", "path: ."), {}),
    "empty_cue_list": (TINY_SPEC.replace("F: [Jane Smith]", "F: []"), {}),
    "two_axes_one_slot": (TINY_SPEC.replace("    BASE: {sex_gender: M}", "    BASE: {sex_gender: M, other: a}").replace(
        "    V01: {sex_gender: F}", "    V01: {sex_gender: F, other: b}").replace(
        "axes:\n", "axes:\n  other:\n    slot: name\n    levels: [a, b]\n    cues: {a: A, b: B}\n").replace(
        # the tool writes the résumés (a score-file audit may signal two axes with one cue, issue 15)
        "jobs:\n  - {id: j1}", "candidates: {base_per_job: 4, matching_per_job: 2}\njobs:\n  - {id: data-analyst, "
        "description: Analyse data}").replace("{id: vendor, kind: precomputed, path: scores.csv}",
                                              "{id: minilm, kind: embedding}"), {}),
    "generated_id_clash": (TINY_SPEC.replace("  reference: BASE\n  table:\n    BASE: {sex_gender: M}\n    V01: {sex_gender: F}",
                                             "  reference: V01\n  design: one_at_a_time"), {}),
    "seed_too_large": (TINY_SPEC.replace("seed: 7", "seed: 9007199254740993"), {}),
    "infinite_threshold": (TINY_SPEC.replace("investigate: 0.05}", "investigate: .inf}"), {}),
    "boolean_seed": (TINY_SPEC.replace("seed: 7", "seed: true"), {}),
    "not_utf8_description": (TINY_SPEC.replace("- {id: j1}", "- {id: j1, description_file: jd.md}"), {"jd.md": "caf\udce9"}),
    # the loader guard (issue 14): located errors, never a traceback or a hang
    "control_character": (TINY_SPEC.replace("title: Tiny", "title: Ti\x07ny"), {}),
    "non_character": (TINY_SPEC.replace("title: Tiny", "title: Ti\ufffeny"), {}),
    "deep_nesting": (TINY_SPEC.replace("title: Tiny precomputed audit", "title: " + "[" * 250 + "]" * 250), {}),
    "alias_bomb": ("lol0: &a0 [lol]\n" + "".join(f"lol{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n"
                                                 for i in range(1, 10)) + TINY_SPEC.replace("title: Tiny precomputed audit", "title: *a9"), {}),
    "custom_tag": (TINY_SPEC.replace("seed: 7", "seed: !python/object:os.system 7"), {}),
    "tagged_value_does_not_parse": (TINY_SPEC.replace("seed: 7", 'seed: !!int "seven"'), {}),
    "merged_key_unknown": (TINY_SPEC.replace("analysis:\n  k:", "defaults: &d {kk: 3}\nanalysis:\n  <<: *d\n  k:"), {}),
    "key_with_line_break": (TINY_SPEC.replace("seed: 7", '"se\\ned": 7'), {}),
    "empty_description_file": (TINY_SPEC.replace("- {id: j1}", '- {id: j1, description_file: ""}'), {}),
    "path_with_nul": (TINY_SPEC.replace("path: scores.csv", 'path: "scores\\0.csv"'), {}),
    "out_leaves_the_spec_folder": (TINY_SPEC + "execution: {out: ../../elsewhere}\n", {}),
    "out_is_absolute": (TINY_SPEC + "execution: {out: /var/audits}\n", {}),
    "torch_threads_zero": (TINY_SPEC + "execution: {torch_threads: 0}\n", {}),
    # one root error, not its echoes (no "unknown axis ...; axes: " with an empty list)
    "missing_axes_block": (TINY_SPEC[:TINY_SPEC.index("axes:")] + TINY_SPEC[TINY_SPEC.index("variants:"):], {}),
    # issue 34: jobs is optional for historical applicants only; every other design still requires it
    "missing_jobs_block": (TINY_SPEC.replace("jobs:\n  - {id: j1}\n", ""), {}),
    "empty_description": (TINY_SPEC.replace("- {id: j1}", '- {id: j1, description: "  "}'), {}),
    "huge_integer_in_k": (TINY_SPEC.replace("counterfactual: 2", "counterfactual: 9007199254740993"), {}),
    # issue 30 §1: the SESOI's forms, one message with the allowed forms
    **{f"sesoi_{name}": (TINY_SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}",
                                           "  k: {counterfactual: 2, group: 2, merit: 2}\n  " + extra
                                           + f"effect_size: {{sesoi: {value}}}"), {})
       for name, value, extra in (("ratio_above_one", "{selection_ratio: 1.2}", ""),
                                  ("ratio_zero", "{selection_ratio: 0}", ""),
                                  ("negative_score", "{score: -1}", ""),
                                  ("two_keys", "{score: 0.01, d: 0.2}", ""),
                                  ("unknown_standardiser", "{d: 0.2, standardiser: within_team}", ""),
                                  ("ratio_per_variant", "{selection_ratio: 0.8}", "ranking: per_variant\n  "))},
    # issue 31 §3: a level's label names a level of its axis (the closest named), 1 to 120 characters
    "label_unknown_level": (TINY_SPEC.replace("    cues: {M: [John Smith], F: [Jane Smith]}",
                                              "    cues: {M: [John Smith], F: [Jane Smith]}\n    labels: {M: man, Fem: woman}"), {}),
    "label_empty": (TINY_SPEC.replace("    cues: {M: [John Smith], F: [Jane Smith]}",
                                      "    cues: {M: [John Smith], F: [Jane Smith]}\n    labels: {M: man, F: ''}"), {}),
    "label_too_long": (TINY_SPEC.replace("    cues: {M: [John Smith], F: [Jane Smith]}",
                                         "    cues: {M: [John Smith], F: [Jane Smith]}\n    labels: {M: " + "m" * 121 + "}"), {}),
    # issue 32: O*NET occupations and labour markets
    "onet_unknown_code": (TINY_SPEC.replace("- {id: j1}", "- {id: j1, onet: 53-7099.00, title: Warehouse associate}"), {}),
    "onet_all_other_code": (TINY_SPEC.replace("- {id: j1}", "- {id: j1, onet: 13-2099.00}"), {}),
    "onet_not_a_code": (TINY_SPEC.replace("- {id: j1}", "- {id: j1, onet: warehouse}"), {}),
    "onet_and_family": (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 4, matching_per_job: 2}\njobs:").replace(
        "- {id: j1}", "- {id: j1, onet: 53-7062.00, family: accountant}"), {}),
    "market_unknown": (TINY_SPEC.replace("jobs:", "candidates: {base_per_job: 4, matching_per_job: 2, market: uk}\njobs:")
                       .replace("- {id: j1}", "- {id: j1, onet: 53-7062.00}"), {}),
    # issue 32 §3: names drawn from the name tables
    "names_with_cues_and_unknown_level": (TINY_SPEC.replace(
        "    cues: {M: [John Smith], F: [Jane Smith]}",
        "    cues: {M: [John Smith], F: [Jane Smith]}\n    names: {table: us, levels: {M: {race: white, sex: male}, "
        "Fem: {race: white, sex: female}}}"), {}),
    "names_on_the_age_slot": (TINY_SPEC.replace(
        "    slot: name\n    levels: [M, F]\n    cues: {M: [John Smith], F: [Jane Smith]}",
        "    slot: age\n    levels: [M, F]\n    names: {table: us, levels: {M: {race: white, sex: male}, "
        "F: {race: white, sex: female}}}"), {}),
    "names_unknown_table": (TINY_SPEC.replace(
        "    cues: {M: [John Smith], F: [Jane Smith]}",
        "    names: {table: uk, levels: {M: {race: white, sex: male}, F: {race: white, sex: female}}}"), {}),
    # issue 35 §2: kind http, each bad part located (validate never contacts the URL)
    "http_url_not_http": (_http(("https://scoring", "ftp://scoring")), {}),
    "http_unknown_placeholder": (_http(("resume: $resume", "resume: $cv_text")), {}),
    "http_items_without_item": (_http(("{id: $id, job: $job, resume: $resume}", "{items: $items}"),
                                      ("response: {score: score}", "response: {items: scores, id: id, score: score}")), {}),
    "http_item_without_items": (_http(("request: {body: {id: $id, job: $job, resume: $resume}}",
                                       "request: {body: {resume: $resume}, item: {id: $id}}")), {}),
    "http_batch_without_id": (_http(("{id: $id, job: $job, resume: $resume}}", "{items: $items}, item: {id: $id, resume: $resume}}"),
                                    ("response: {score: score}", "batch_size: 4, response: {items: scores, score: score}")), {}),
    "http_bad_jmespath": (_http(("response: {score: score}", "response: {score: 'scores[?'}")), {}),
    "http_bad_variable_name": (_http(("response: {score: score}", "response: {score: score}, "
                                      "headers_from_env: {Authorization: VENDOR-AUTH}")), {}),
    "http_job_without_text": (_http(job="- {id: data-analyst, title: Data Analyst}"), {}),
    "http_secret_header": (_http(("response: {score: score}", "response: {score: score}, "
                                  "headers: {Accept: application/json, X-Api-Key: abc123}")), {}),
    "http_execution_of_another_system": (_http() + "execution:\n  systems:\n    minilm: {concurrency: 2}\n", {}),
    "http_batch_too_large": (_http(("response: {score: score}", "response: {score: score}, batch_size: 65")), {}),
    # issue 36 §2-§3: kind command and kind python (validate never runs or imports vendor code)
    # requests_per_s and retries pace and retry HTTP requests: a program has neither (they were accepted, ignored)
    "program_with_http_settings": (_exec(COMMAND_SYSTEM) + "execution:\n  systems:\n    vendor: {concurrency: 2, "
                                   "requests_per_s: 5, retries: 3}\n", {"tools__kw.py": VENDOR_PY}),
    "command_empty_argv": (_exec(COMMAND_SYSTEM, ("[python3, tools/kw.py]", "[]")), {"tools__kw.py": VENDOR_PY}),
    "command_argv_leaves": (_exec(COMMAND_SYSTEM, ("tools/kw.py", "../tools/kw.py")), {"tools__kw.py": VENDOR_PY}),
    "python_function_form": (_exec(PYTHON_SYSTEM, ("'tools/kw.py:score_batch'", "score_batch")), {"tools__kw.py": VENDOR_PY}),
    "python_no_def": (_exec(PYTHON_SYSTEM, ("score_batch'", "score'")), {"tools__kw.py": VENDOR_PY}),
    "python_async_def": (_exec(PYTHON_SYSTEM, ("score_batch'", "score_async'")), {"tools__kw.py": VENDOR_PY}),
    "python_file_missing": (_exec(PYTHON_SYSTEM, ("tools/kw.py", "tools/sdk.py")), {"tools__kw.py": VENDOR_PY}),
    "python_package_with_file": (_exec(PYTHON_SYSTEM, ("version:", "package: vendor-sdk, version:")),
                                 {"tools__kw.py": VENDOR_PY}),
    "python_module_without_package": (_exec(PYTHON_SYSTEM, ("'tools/kw.py:score_batch'", "vendor_sdk.scoring:score_batch")), {}),
    "python_package_not_installed": (_exec(PYTHON_SYSTEM, ("'tools/kw.py:score_batch'", "vendor_sdk.scoring:score_batch, "
                                                           "package: no-such-vendor-sdk")), {}),
    # issue 38 §1: negative controls (placebo variants of the reference résumé)
    "control_id_is_variant_repeated_no_description": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: V01, description: dates as MM/YYYY}\n    - {id: P1}\n    - {id: P1, description: glyphs}\n")), {}),
    "control_id_pattern": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: 'P 1', description: dates as MM/YYYY}\n")), {}),
    "control_unknown_perturbation": (_GEN_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: P1, perturbation: reword}\n")), {}),
    "control_template_cannot_make": (_GEN_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: P1, perturbation: regenerate}\n    - {id: P2}\n")), {}),
    "control_llm_cannot_make": (_GEN_SPEC.replace("candidates: {", "candidates: {generator: llm, model: ollama/qwen2.5, ")
                                .replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
                                    "    - {id: P1, perturbation: section_order}\n")), {}),
    "control_score_file_perturbation": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: P1, perturbation: typos}\n")), {}),
    "control_score_file_rows": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: P1, description: dates as MM/YYYY}\n")),
        {"scores.csv": TINY_SCORES + "j1,c1,P1,0.9,1\nj1,c2,P1,0.7,1\nj1,c9,P1,0.5,0\n"}),
    # issue 39 §6: positive controls (weakened copies of the reference résumé) and the sensitivity check
    "positive_control_id_clash": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", _CONTROLS.format(
        "    - {id: P1, description: dates as MM/YYYY}\n") + _POSITIVE.format(
        "    - {id: V01, description: no SQL}\n    - {id: P1, description: no SQL}\n"
        "    - {id: C1, description: no SQL}\n    - {id: C1, description: titles one stage down}\n    - {id: C2}\n")),
        {}),
    "positive_control_unknown_perturbation": (_GEN_SPEC.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n"
                                              + _POSITIVE.format("    - {id: C1, perturbation: drop_degree}\n    - {id: C2}\n")), {}),
    "positive_control_llm_cannot_make": (_GEN_SPEC.replace("candidates: {", "candidates: {generator: llm, model: ollama/qwen2.5, ")
                                          .replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n" + _POSITIVE.format(
                                              "    - {id: C1, perturbation: seniority_down}\n")), {}),
    "positive_control_score_file_rows": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n"
                                         + _POSITIVE.format("    - {id: C1, description: no SQL}\n")),
                                         {"scores.csv": TINY_SCORES + "j1,c1,C1,0.8,1\nj1,c3,C1,0.4,0\nj1,c9,C1,0.5,0\n"}),
    "validity_control_not_declared": (TINY_SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}",
                                                        "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity:\n"
                                                        "    positive_control: {contrast: control, control: C01, "
                                                        "direction: lower}"), {}),
    "validity_control_unknown_or_missing": (TINY_SPEC.replace("    V01: {sex_gender: F}\n", "    V01: {sex_gender: F}\n"
                                            + _POSITIVE.format("    - {id: C1, description: no SQL}\n")).replace(
        "  k: {counterfactual: 2, group: 2, merit: 2}", "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity:\n"
        "    positive_control: {contrast: control, control: C01, axis: sex_gender}"),
        {"scores.csv": TINY_SCORES + "".join(f"j1,c{i},C1,0.2,{int(i < 3)}\n" for i in range(1, 5))}),
    "validity_control_key_without_control_contrast": (TINY_SPEC.replace(
        "  k: {counterfactual: 2, group: 2, merit: 2}", "  k: {counterfactual: 2, group: 2, merit: 2}\n  validity:\n"
        "    positive_control: {contrast: match, control: C1}"), {}),
    # issue 36 §4: the lexical kind's corpus and parameters
    "lexical_corpus_missing": (_GEN_SPEC.replace("{id: minilm, kind: embedding}",
                                                 "{id: bm25, kind: lexical, method: bm25, corpus: corpus.txt}"), {}),
    "lexical_corpus_not_utf8": (_GEN_SPEC.replace("{id: minilm, kind: embedding}",
                                                  "{id: bm25, kind: lexical, method: bm25, corpus: corpus.txt}"),
                                {"corpus.txt": "first document\nsecond document\nthird \udce9t\u00e9\n"}),
    "lexical_corpus_too_small": (_GEN_SPEC.replace("{id: minilm, kind: embedding}",
                                                   "{id: bm25, kind: lexical, method: bm25, corpus: corpus.txt}"),
                                 {"corpus.txt": "".join(f"document {i}\n\n" for i in range(99))}),
    "lexical_corpus_not_txt": (_GEN_SPEC.replace("{id: minilm, kind: embedding}",
                                                 "{id: bm25, kind: lexical, method: bm25, corpus: scores.csv}"), {}),
    "lexical_bm25_with_tfidf": (_GEN_SPEC.replace("{id: minilm, kind: embedding}",
                                                  "{id: tf, kind: lexical, method: tfidf, bm25: {k1: 1.2}}"), {}),
    "lexical_job_without_text": (_GEN_SPEC.replace("{id: minilm, kind: embedding}", "{id: bm25, kind: lexical, method: bm25}")
                                 .replace("{id: data-analyst, description: Analyse data}", "{id: data-analyst}"), {}),
    # issue 37 §3: a spelled-out label and an empty score; a case-only miss; two labels as close, on a 0-10
    # file without score_range (the tightest round scale holding every score is suggested)
    "hint_spelled_out_and_empty_score": (_HINT_SPEC, {"scores.csv": _hint_scores("BLACK_FEMALE", score="")}),
    "hint_case_only": (_HINT_SPEC, {"scores.csv": _hint_scores("white_m")}),
    "hint_equally_close_and_scale": (_HINT_SPEC, {"scores.csv": _hint_scores("WHITE_FM", score="0.4", scale=10)}),
    "multiplicity_unknown": (TINY_SPEC.replace("  k: {counterfactual: 2, group: 2, merit: 2}",
                                               "  k: {counterfactual: 2, group: 2, merit: 2}\n  multiplicity: bonferroni"), {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_spec_golden(case, write_spec, tmp_path):
    text, files = CASES[case]
    spec = write_spec(text, **{"scores.csv": TINY_SCORES, **files})
    (tmp_path.parent / "outside.csv").write_text(TINY_SCORES)
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = GOLDEN / f"{case}.txt"
    got = proc.stderr.replace(str(tmp_path.resolve()), "<SPEC_DIR>").replace(str(tmp_path.parent.resolve()), "<TMP>")
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got)
    assert got == golden.read_text()


@pytest.mark.parametrize("ref", ["x" * 300 + ".csv", "loop/scores.csv"])
def test_unusable_paths_are_located_errors(ref, write_spec, tmp_path):
    # a name too long for the file system, a symlink loop: exit 2 at the key, no traceback
    spec = write_spec(TINY_SPEC.replace("path: scores.csv", f"path: {ref}"), **{"scores.csv": TINY_SCORES})
    (tmp_path / "loop").symlink_to("loop")
    proc = run_cli("validate", spec.name, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: spec.yaml:17:43: systems[0].path: path ")


def test_alias_bomb_is_refused_in_under_a_second(tmp_path):
    import time

    from compiler.errors import SpecError
    from compiler.load import load_spec

    # ten levels, each repeating the previous nine times: 9^10 nodes once expanded
    bomb = "a0: &a0 [lol]\n" + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 11))
    (tmp_path / "bomb.yaml").write_text(bomb)
    start = time.perf_counter()
    with pytest.raises(SpecError) as err:
        load_spec(tmp_path / "bomb.yaml")
    assert time.perf_counter() - start < 1.0
    assert "aliases expand to more than 100,000 nodes" in str(err.value)


def test_spec_bytes_that_are_not_utf8_or_too_many_are_located(tmp_path):
    from compiler.load import MAX_BYTES

    (tmp_path / "latin1.yaml").write_bytes(TINY_SPEC.replace("Tiny", "Tiny caf\u00e9").encode("latin-1"))
    proc = run_cli("validate", "latin1.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: latin1.yaml:2:16: the spec is not UTF-8 text: byte 0xe9")
    (tmp_path / "big.yaml").write_text(TINY_SPEC + "# padding\n" * (MAX_BYTES // 10))
    proc = run_cli("validate", "big.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "a spec may be at most 262,144 bytes" in proc.stderr
    # a BOM and CRLF line ends are fine
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + TINY_SPEC.replace("\n", "\r\n").encode())
    (tmp_path / "scores.csv").write_text(TINY_SCORES)
    assert run_cli("validate", "bom.yaml", cwd=tmp_path).returncode == 0


def test_every_compile_error_names_file_line_col(write_spec, tmp_path):
    spec = write_spec(CASES["wrong_type"][0], **{"scores.csv": TINY_SCORES})
    proc = run_cli("compile", spec.name, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: spec.yaml:3:7: seed: ")
    assert not (tmp_path / "spec.lock.json").exists()


def test_a_small_pool_warns_at_validate(tmp_path):
    """Seed 000 §5's minimum-n warning (issue 39 §8): a 2-job design of 24 base candidates each validates
    (exit 0) with one located warning naming the key and the minimum; 40 gives none."""
    from conftest import run_cli

    spec = """\
audit: few
title: Two jobs of 24
seed: 3
axes:
  sex_gender:
    slot: name
    levels: [Male-FR, Female-FR]
    cues: {Male-FR: [Paul Martin], Female-FR: [Anne Martin]}
variants:
  reference: BASE
  table:
    BASE: {sex_gender: Male-FR}
    V01: {sex_gender: Female-FR}
jobs:
  - {id: data-analyst, title: Data Analyst, description: Analyse data and build dashboards with SQL.}
  - {id: accountant, title: Accountant, description: Prepare and examine financial records.}
candidates: {generator: template, base_per_job: 24, matching_per_job: 8}
systems:
  - {id: minilm, kind: embedding}
"""
    (tmp_path / "spec.yaml").write_text(spec)
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    # the second line is the coverage warning at 2 jobs (issue 39 §8; tests/test_design_warnings.py)
    coverage = "warning: spec.yaml:15:3: jobs: the 95% intervals of "
    assert warnings[:1] == ["warning: spec.yaml:17:49: candidates.base_per_job: 24 base candidates per job is under "
                            "40: the rank and shortlist metrics degenerate at small pools (every candidate near the "
                            "top-K, few rank crossings possible) and their intervals and tests say little (seed 000 "
                            "§5); give base_per_job >= 40"], proc.stderr
    assert len(warnings) == 2 and warnings[1].startswith(coverage), proc.stderr
    (tmp_path / "spec.yaml").write_text(spec.replace("base_per_job: 24", "base_per_job: 40"))
    proc = run_cli("validate", "spec.yaml", cwd=tmp_path)
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    assert proc.returncode == 0 and len(warnings) == 1 and warnings[0].startswith(coverage), proc.stderr
