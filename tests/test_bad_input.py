"""Bad input never crashes (issue 14): user text is printed as it is, never parsed as Rich markup.

Every CLI message that carries a user-supplied string (spec path, title, --reason, --out, the key
folder and the signer's name) is exercised with ``[/x]`` in it: Rich reads ``[/x]`` as a closing tag
and raises when it is parsed as markup.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import TINY_SCORES, TINY_SPEC, run_cli

BRACKETS = "[/x]"


def test_user_text_with_markup_brackets_is_printed_verbatim(tmp_path):
    folder = tmp_path / f"a{BRACKETS}"  # a folder "a[" holding a folder "x]"
    folder.mkdir(parents=True)
    (folder / "scores.csv").write_text(TINY_SCORES)
    spec = folder / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("title: Tiny precomputed audit", f"title: 'Tiny {BRACKETS} audit [bold]'"))
    rel = f"a{BRACKETS}/spec.yaml"
    keys = f"k{BRACKETS}"

    def ok(proc, code=0):
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr and "MarkupError" not in proc.stderr
        return proc

    out = ok(run_cli("validate", rel, cwd=tmp_path)).stdout
    assert f"valid: {rel} (1 job" in out
    ok(run_cli("compile", rel, cwd=tmp_path))
    spec.write_text(spec.read_text().replace("seed: 7", "seed: 8"))
    out = ok(run_cli("compile", rel, "--amend", "--reason", f"fix {BRACKETS} typo [red]", cwd=tmp_path)).stdout
    assert f"(reason: fix {BRACKETS} typo [red]); changed keys:" in out
    out = ok(run_cli("keygen", "--key-dir", keys, "--signer", f"Ann {BRACKETS} Lee", cwd=tmp_path)).stdout
    assert f"Ann {BRACKETS} Lee" in out
    proc = ok(run_cli("execute", rel, "-q", "--out", f"out{BRACKETS}", "--key-dir", keys, cwd=tmp_path))
    run_dir = next((tmp_path / f"out{BRACKETS}" / "tiny-audit").iterdir())
    assert f"run folder: out{BRACKETS}/tiny-audit/{run_dir.name}" in proc.stdout
    assert json.loads((run_dir / "run.json").read_text())["status"] == "done"
    rel_run = f"out{BRACKETS}/tiny-audit/{run_dir.name}"
    out = ok(run_cli("verify", rel_run, "--key-dir", keys, cwd=tmp_path)).stdout
    assert f"verified: {rel_run}" in out
    ok(run_cli("status", rel_run, cwd=tmp_path))
    (run_dir / "metrics.csv").write_text("tampered\n")
    err = ok(run_cli("verify", rel_run, "--key-dir", keys, cwd=tmp_path), code=6).stderr
    assert f"verification FAILED for {rel_run}" in err


def test_no_absolute_path_of_the_machine_enters_a_run_folder(tmp_path):
    """A spec given by absolute path, run from another folder: no file of the run folder, nor the
    PDF's text, decompressed streams or metadata (the document information dictionary and any XMP
    stream), names the machine's folders."""
    import re
    import subprocess
    import zlib

    secret = tmp_path / "home" / "alice-private" / "audits"
    secret.mkdir(parents=True)
    (secret / "spec.yaml").write_text(TINY_SPEC)
    (secret / "scores.csv").write_text(TINY_SCORES)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    keys = tmp_path / "keys"
    assert run_cli("keygen", "--key-dir", str(keys), "--signer", "Test", cwd=elsewhere).returncode == 0
    assert run_cli("compile", str(secret / "spec.yaml"), cwd=elsewhere).returncode == 0
    proc = run_cli("execute", str(secret / "spec.yaml"), "-q", "--key-dir", str(keys), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    run_dir = next((elsewhere / "reports" / "tiny-audit").iterdir())
    needles = [str(tmp_path.resolve()).encode(), b"alice-private"]
    for path in run_dir.iterdir():
        data = path.read_bytes()
        assert not any(n in data for n in needles), path.name
    pdf = (run_dir / "report.pdf").read_bytes()
    streams = []
    for m in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S):
        try:
            streams.append(zlib.decompress(m.group(1)))
        except zlib.error:
            streams.append(m.group(1))  # uncompressed (the XMP metadata stream is usually left plain)
    assert len(streams) > 5
    for s in streams:
        assert not any(n in s for n in needles)
    text = subprocess.run(["pdftotext", str(run_dir / "report.pdf"), "-"], capture_output=True, check=True).stdout
    assert not any(n in text for n in needles)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["spec_file"] == "spec.yaml" and run["store"] == ".audit-store"


def test_help_shows_boolean_flags_as_flags(tmp_path):
    for command in ("execute", "compile", "keygen"):
        out = run_cli(command, "--help", cwd=tmp_path).stdout
        assert "<bool>" not in out, command
    # a flag with its short form and no value placeholder (the column width follows the longest option)
    assert re.search(r"--quiet\s+-q\s+No progress bars", run_cli("execute", "--help", cwd=tmp_path).stdout)


def test_the_pdf_renderer_fetches_no_url(tmp_path):
    import subprocess

    from runtime.report.render import no_fetch
    from weasyprint.urls import URLFetchingError

    png = tmp_path / "secret.png"
    # a valid 1x1 PNG: were it fetched, the PDF would hold an image
    png.write_bytes(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                                  "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"))
    import weasyprint

    html = (f'<html><body><p>report</p><img src="file://{png}">'
            '<link rel="stylesheet" href="http://127.0.0.1:9/x.css"></body></html>')
    out = tmp_path / "r.pdf"
    weasyprint.HTML(string=html, base_url=None, url_fetcher=no_fetch()).write_pdf(str(out))
    images = subprocess.run(["pdfimages", "-list", str(out)], capture_output=True, text=True, check=True).stdout
    assert len(images.strip().splitlines()) == 2  # the header lines only: no image was read
    with pytest.raises(URLFetchingError):
        no_fetch().fetch(f"file://{png}")
    # the control: the default fetcher does read the file
    weasyprint.HTML(string=html, base_url=None).write_pdf(str(out))
    images = subprocess.run(["pdfimages", "-list", str(out)], capture_output=True, text=True, check=True).stdout
    assert len(images.strip().splitlines()) > 2  # the image (and its soft mask)


def test_fuzzed_specs_exit_0_or_2_located_and_fast(tmp_path):
    """About 60 s of mutated specs (issue 14): keys from the current schema, wrong types, control
    characters, tags, anchors and merge keys, alias bombs, deep nesting, huge numbers, BOM, CRLF; and
    (issue 41) aliases of long strings, YAML escapes, special files (FIFO, /dev/zero, symlink loop,
    folder) as the spec or its score file, lenient numbers and control characters in score cells.
    Every case exits 0 or 2, within 10 s, and every 2 is located. The 10,000-case run of the same
    fuzzer is ``bench/fuzz_specs.py``."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from spec_fuzz import check, mutate, run_case

    seen = {"cases": 0}

    @settings(max_examples=600, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False))
    def one(r):
        case = mutate(r)
        seen["cases"] += 1
        code, err, seconds = run_case(case, tmp_path / "case")
        problem = check(case, code, err, seconds)
        assert not problem, f"{case.what}: {problem}\n--- spec ---\n{case.text[:3000]}"

    one()
    assert seen["cases"] >= 100
