"""The claim catalog (docs/claims.md) is generated from the registry and checked in; everything a
user reads cites papers by authors, title, venue and year, never by a file name, and says "seed"
only for the random seed (issue 20 item 1)."""
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from spectheory.sims import catalog, papers
from spectheory.sims.registry import load_all

ROOT = Path(__file__).resolve().parents[1]

#: what must not appear anywhere a user reads: paths to a paper's text or to a catalog outside
#: the repository, "seed 00x" (a paper called by the file it came in), a paper file's name, and
#: "seed" meaning a paper (its equations, sections, algorithms)
FORBIDDEN = {
    "a path outside the repository": r"\.\./shared|\bshared/(CLAIMS|seeds)",
    "the external catalog file": r"CLAIMS\.md|(?<![A-Z_])CLAIMS\s*(§|section|notation|\")",
    "a paper called 'seed 00x'": r"\b[Ss]eeds?[ -]0\d\d\b",
    "a paper text file name": r"\b\d{3}_[0-9a-f]{16}\.txt\b",
    "'seed' meaning a paper": r"\b[Tt]he seed's\b|\b[Tt]he seeds talk\b|\bseed (App|§|Sec|Fig|Table|Eq|Alg|Lemma|Thm"
                              r"|Remark)\b|\bthe seed (does|swaps|warns|says)\b|lost in extraction",
}

#: the tree a user reads: the README, docs, notebooks, figure scripts, and every shipped module
#: (docstrings are what `help()`, `spectheory list` and `show` print)
USER_FACING = ("README.md", "docs/**/*.md", "notebooks/**/*.py", "notebooks/**/*.ipynb", "paper_figs/**/*.py",
               "spectheory/**/*.py", "sims/**/*.py", "cli/**/*.py", "validate/**/*.py",
               "data/**/*.md", "benchmarks/**/*.py", "benchmarks/**/*.md", "Makefile", "pyproject.toml")


def _scan(text: str, where: str) -> list[str]:
    bad = []
    for what, pattern in FORBIDDEN.items():
        for m in re.finditer(pattern, text):
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{where}:{line}: {what}: {m.group(0)!r}")
    return bad


def test_checked_in_catalog_is_the_registry():
    """docs/claims.md is what `python -m spectheory.sims.catalog` writes from the registry."""
    current = catalog.CATALOG.read_text() if catalog.CATALOG.exists() else ""
    assert current == catalog.render(), (
        f"{catalog.CATALOG.relative_to(ROOT)} is stale: regenerate it with `{catalog.COMMAND}` and commit it")


def test_catalog_has_every_claim_with_its_citation_parts_and_reading():
    text = catalog.render()
    for c in load_all().values():
        assert f"### `{c.id}` ({c.relation_label})" in text, c.id
        assert papers.cite(c.paper) in text and c.statement in text, c.id
        if c.interpretation:
            assert c.interpretation in text, c.id
        if len(c.parts) > 1:
            for p in c.parts:
                assert f"| `{p.id}` | {p.relation} |" in text, (c.id, p.id)
    for c in (c for c in load_all().values() if c.user_pairs is not None):
        assert c.user_pairs.what in text


def test_catalog_check_command(tmp_path):
    out = tmp_path / "claims.md"
    run = lambda *a: subprocess.run([sys.executable, "-m", "spectheory.sims.catalog", "--out", str(out), *a],  # noqa: E731
                                    capture_output=True, text=True, cwd=ROOT)
    assert run("--check").returncode == 1  # missing
    assert run().returncode == 0 and out.read_text() == catalog.render()
    assert run("--check").returncode == 0
    out.write_text(out.read_text() + "edited by hand\n")
    res = run("--check")
    assert res.returncode == 1 and "python -m spectheory.sims.catalog" in res.stderr


def test_no_paper_file_names_or_outside_paths_in_what_users_read():
    bad = []
    for pattern in USER_FACING:
        for path in sorted(ROOT.glob(pattern)):
            if ".venv" in path.parts or not path.is_file():
                continue
            bad += _scan(path.read_text(errors="replace"), str(path.relative_to(ROOT)))
    assert not bad, "\n".join(bad)


def test_no_paper_file_names_in_cli_help_list_and_reports():
    from spectheory.cli.main import app
    texts = {}
    runner = CliRunner()
    for args in (["--help"], ["verify", "--help"], ["list", "--help"], ["show", "--help"], ["sweep", "--help"],
                 ["conformance", "--help"], ["validate", "--help"], ["list"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, (args, res.output)
        texts[" ".join(args)] = res.output
    texts["catalog"] = catalog.render()
    bad = [b for where, t in texts.items() for b in _scan(t, where)]
    assert not bad, "\n".join(bad)


def test_the_scan_catches_what_it_must():
    """The patterns find each thing they are there for (and leave the random seed alone)."""
    for text in ("see ../shared/CLAIMS.md", "Speculative Ensemble (seed 002)", "Seed 004, Fig. 3",
                 "shared/seeds/002_441515f74760b354.txt", "the seed's Eq. 4", "(seed Alg. 4)",
                 "CLAIMS §3", "the formulas were lost in extraction"):
        assert _scan(text, "x"), text
    for text in ("--seed 7", "seed 0", "each job's seed derives from the base seed", "pair_seed=3",
                 "TRACE_CLAIMS", "a seeded search", "seed=0, restart=True"):
        assert not _scan(text, "x"), text


def test_readings_page_is_current():
    """docs/readings.md is what `python -m spectheory.sims.readings` writes from the registry and the stored run
    (issue 24 item 6): every claim with its principal reading, scope, choices and other readings."""
    from spectheory.sims import readings
    text = readings.render()
    assert (ROOT / "docs" / "readings.md").read_text() == text, (
        f"docs/readings.md is stale: regenerate it with `{readings.COMMAND}`")
    for cid in load_all():
        assert f"### `{cid}`" in text, cid


def test_readings_page_lists_every_reading_with_its_stored_verdict(tmp_path, monkeypatch):
    """A claim with two readings: the page gives the principal's quote, the scope, the choices (the
    invented one marked) and the other reading with the stored run's verdict; a stored run without
    that reading says so instead of inventing a verdict."""
    import json
    from spectheory.sims import readings, registry
    from spectheory.sims.registry import Choice, Control, Part, Reading, Scope
    monkeypatch.setattr(registry, "REGISTRY", {})
    registry.register(id="toy.read", paper="leviathan2023", reference="§1", statement="S.", modes=("exact",),
                      check=lambda ctx, s: [], controls=(Control("bad", "bad", "broken"),),
                      parts=(Part("a", "A", "≤"), Part("b", "B", "≤")),
                      readings=(Reading("printed", "As printed.", ("a",), role="principal", quote="§2: 'A'",
                                        why="the paper says A"),
                                Reading("integer", "Over integers.", ("b",), kind="integer", why="rounding")),
                      scope=Scope("V ≥ 3"), choices=(Choice("band", 0.5, (0.5, 1.5), "ours", invented=True),))
    stored = tmp_path / "rows.json"
    stored.write_text(json.dumps({"run": {"seed": 0, "quick": False}, "claims": [
        {"id": "toy.read", "summary": "holds", "differ": 1, "readings": [
            {"id": "printed", "role": "principal", "verdict": "holds", "summary": "holds"},
            {"id": "integer", "role": "alternative", "verdict": "fails", "summary": "fails"}]}]}))
    text = readings.render(stored)
    assert "§2: 'A'" in text and "**Scope**: V ≥ 3" in text and "*(invented by this project)*" in text
    assert "`integer` (integer): **fails**" in text and "| 1 of 1 |" in text
    stored.write_text(json.dumps({"run": {}, "claims": [{"id": "toy.read", "summary": "holds"}]}))
    assert "not in the stored run" in readings.render(stored)
