"""Plausible bugs in the report, the command line around it and the user-pairs mechanism (issue 20);
each must be caught by the fast tests named in ``tests=``."""

CLAIMS = "sd.acceptance"  # the report machinery changes no verdict: verify --quick on one claim is enough

MUTANTS = [
    dict(path="sims/report.py",
         old="    if \"≥ bound\" in test:\n        return m - c",
         new="    if \"≥ bound\" in test:\n        return c - m",
         why="a lower bound's slack read with the wrong sign",
         tests="tests/test_report_cli.py"),
    dict(path="spectheory_cli/cmd_verify.py",
         old="        full = claims.strip() in (\"\", \"*\") and instances is None",
         new="        full = True",
         why="a subset run overwrites the full report again",
         tests="tests/test_report_cli.py"),
    dict(path="sims/registry.py",
         old="            why = fits(pair) if fits is not None else None",
         new="            why = None",
         why="a user pair that does not fit a comparison is run anyway (no note, wrong engine)",
         tests="tests/test_report_cli.py"),
    dict(path="sims/sweep.py",
         old="        if check is not None:  # every point is checked before any job runs",
         new="        if False:  # every point is checked before any job runs",
         why="grid points no longer checked before the sweep starts",
         tests="tests/test_bad_inputs.py"),
    dict(path="sims/sweep.py",
         old="                    if not existed and out.exists() and out.stat().st_size == 0:",
         new="                    if False:",
         why="a failed sweep leaves an empty table behind",
         tests="tests/test_report_cli.py"),
    dict(path="sims/runner.py",
         old="            need = {p: tuple(m for m in ms if m in _graded_modes(evidence, p)) for p, ms in need.items()}",
         new="            pass",
         why="on user pairs, controls required where the subject was never graded (parts wrongly inconclusive)",
         tests="tests/test_report_cli.py"),
]
