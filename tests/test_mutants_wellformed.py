"""The mutant lists replayed by tests/mutation/run_mutants.py stay applicable: every mutant's
``old`` text occurs exactly once in its file (a stale mutant tests nothing), its ``tests``
exist, and the sd spine has at least 12 mutants. (Replaying them is not part of the fast tier.)"""
import importlib.util
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("run_mutants", ROOT / "tests" / "mutation" / "run_mutants.py")
run_mutants = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("run_mutants", run_mutants)  # dataclasses look their module up there
_spec.loader.exec_module(run_mutants)


def test_every_mutant_applies_exactly_once():
    mutants = run_mutants.load_mutants(None)  # also checks keys and that `tests` entries exist
    stale = [f"{m.id} ({m.why}): `old` occurs {(ROOT / m.path).read_text().count(m.old)}× in {m.path}"
             for m in mutants if not (ROOT / m.path).exists() or (ROOT / m.path).read_text().count(m.old) != 1]
    assert not stale, "stale mutants (update old/new to the current code):\n" + "\n".join(stale)
    ids = Counter(m.id for m in mutants)
    assert max(ids.values()) == 1
    files = Counter(m.id.split("#")[0] for m in mutants)
    assert files["sd"] + files["sd_kernel"] >= 12, files
