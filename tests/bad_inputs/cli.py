"""Bad-input rows of the command line's own arguments (issue 20 item 5): ``spectheory sweep``
(kind, grid parameters, output, scheduler, a failing job), ``spectheory validate`` (checked before
any model loads) and ``validate cache``, ``spectheory verify --instances`` (the instances file),
and ``spectheory show``. Each must end in a one-line usage error, never a traceback; nothing
here runs a job, loads a model or runs a claim check."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from spectheory.sims.instances_file import InstancesFileError, pairs_from

from . import CLIError, bad, run_cli

_TMP = Path(tempfile.mkdtemp(prefix="spectheory-bad-cli-"))
(_TMP / "a-file").write_text("")
OUT = str(_TMP / "sweep.jsonl")
SD = ("-g", "instance=iid-V4-random", "-g", "gamma=1", "-g", "n_iterations=100", "--out", OUT, "--workers", "1")


def failing_job(params, seed):
    """A ``module:function`` job kind that always fails (what a bug in a user's job looks like)."""
    raise RuntimeError("the job broke")


def _file(name: str, text: str) -> str:
    path = _TMP / name
    path.write_text(text)
    return str(path)


GOOD_TABLES = {"name": "t", "order": 0, "target": [[0.5, 0.5]], "draft": [[0.4, 0.6]]}

ROWS = [
    # --- spectheory sweep: every argument is checked before any job runs or file is written ---
    bad("sweep.cli unknown instance", run_cli, "sweep", "sd.mc", "-g", "instance=markov1-V50-wek", *SD[2:],
        exc=CLIError, match="'instance' must be one of .* got 'markov1-V50-wek' \\(did you mean 'markov1-V50-weak'\\?\\)"),
    bad("sweep.cli gamma=-1", run_cli, "sweep", "sd.mc", "-g", "instance=iid-V4-random", "-g", "gamma=-1",
        "-g", "n_iterations=100", "--out", OUT, exc=CLIError, match="'gamma' must be ≥ 1, got -1"),
    bad("sweep.cli typo'd parameter", run_cli, "sweep", "sd.mc", "-g", "instance=iid-V4-random", "-g", "gama=1",
        "-g", "n_iterations=100", "--out", OUT, exc=CLIError, match="unknown parameter\\(s\\) 'gama'.*did you mean 'gamma'"),
    bad("sweep.cli missing parameter", run_cli, "sweep", "sd.mc", "-g", "instance=iid-V4-random", "-g", "gamma=1",
        "--out", OUT, exc=CLIError, match="missing parameter 'n_iterations'"),
    bad("sweep.cli instance and alpha", run_cli, "sweep", "sd.exact", "-g", "instance=iid-V4-random", "-g", "alpha=0.5",
        "-g", "gamma=1", "--out", OUT, exc=CLIError, match="exactly one of 'instance' .* and 'alpha'"),
    bad("sweep.cli typo'd kind", run_cli, "sweep", "sd.mcc", exc=CLIError, match="did you mean 'sd.mc'"),
    bad("sweep.cli module without the function", run_cli, "sweep", "json:nope", exc=CLIError,
        match="module 'json' has no function 'nope'"),
    bad("sweep.cli family kind parameter", run_cli, "sweep", "se.mc", "-g", "instance=iid-V4-random", "-g", "ensemble=we",
        "-g", "lam=0.5", "-g", "gamma_q=1", "-g", "gamma_p=1", "-g", "c=0", "-g", "n_streams=2",
        "-g", "tokens_per_stream=10", "--out", OUT, exc=CLIError, match="'c' must lie in"),
    bad("sweep.cli axis twice", run_cli, "sweep", "sd.mc", "-g", "gamma=1", "-g", "gamma=2", exc=CLIError,
        match="axis 'gamma' given twice"),
    bad("sweep.cli unwritable out", run_cli, "sweep", "sd.mc", *SD[:6], "--out", _TMP / "a-file" / "x.jsonl",
        exc=CLIError, match="--out: cannot write .* not a folder"),
    bad("sweep.cli out is a folder", run_cli, "sweep", "sd.mc", *SD[:6], "--out", _TMP, exc=CLIError,
        match="--out: .* is a directory"),
    bad("sweep.cli csv same as out", run_cli, "sweep", "sd.mc", *SD[:6], "--out", OUT, "--csv", OUT, exc=CLIError,
        match="--csv and --out name the same file"),
    bad("sweep.cli scheduler bad scheme", run_cli, "sweep", "sd.mc", *SD[:8], "--scheduler", "http://x:1",
        exc=CLIError, match="unknown scheme 'http'"),
    bad("sweep.cli scheduler without port", run_cli, "sweep", "sd.mc", *SD[:8], "--scheduler", "tcp://localhost",
        exc=CLIError, match="expected tcp://host:port"),
    bad("sweep.cli scheduler unreachable", run_cli, "sweep", "sd.mc", *SD[:8], "--scheduler", "tcp://127.0.0.1:1",
        exc=CLIError, match="no Dask scheduler reachable at tcp://127.0.0.1:1 within 5 s"),
    bad("sweep.cli failing job", run_cli, "sweep", "bad_inputs.cli:failing_job", "-g", "x=1,2", "--workers", "1",
        "--out", OUT, exc=CLIError, match="exit 1: .*a job failed: RuntimeError: the job broke"),
    # --- spectheory validate: checked before any model is installed or loaded ---
    bad("validate.cli out is a file", run_cli, "validate", "--out", _TMP / "a-file", exc=CLIError,
        match="--out: .* is a file, not a run directory"),
    bad("validate.cli out under a file", run_cli, "validate", "--out", _TMP / "a-file" / "run", exc=CLIError,
        match="--out: cannot create .* is a file, not a folder"),
    bad("validate.cli out unwritable", run_cli, "validate", "--out", "/proc/spectheory-run", exc=CLIError,
        match="--out: cannot write /proc/spectheory-run"),
    bad("validate.cli device", run_cli, "validate", "--device", "gpu", exc=CLIError,
        match="--device: device must be cpu, cuda, cuda:N or mps"),
    bad("validate.cli missing gguf", run_cli, "validate", "--target", _TMP / "t.gguf", "--draft", _TMP / "d.gguf",
        exc=CLIError, match="--target: .*t.gguf does not exist"),
    # --- spectheory verify --instances: the whole file is checked before any claim runs ---
    bad("verify.cli instances missing file", run_cli, "verify", "--instances", _TMP / "nope.toml", exc=CLIError,
        match="--instances: .*nope.toml: no such file"),
    bad("verify.cli instances bad TOML", run_cli, "verify", "--instances", _file("bad.toml", "[[pairs]\nname="),
        exc=CLIError, match="not valid TOML"),
    bad("verify.cli instances no claim takes pairs", run_cli, "verify", "--claims", "se.*", "--instances",
        _file("ok.json", json.dumps({"pairs": [GOOD_TABLES]})), exc=CLIError, match="no claim matching 'se.\\*' takes pairs"),
    bad("instances no pairs", pairs_from, {"pairs": []}, exc=InstancesFileError, match="non-empty list"),
    bad("instances top-level typo", pairs_from, {"pair": []}, exc=InstancesFileError,
        match="unknown top-level key 'pair' \\(did you mean 'pairs'\\?\\)"),
    bad("instances unknown key", pairs_from, {"pairs": [{**GOOD_TABLES, "targt": 1}]}, exc=InstancesFileError,
        match="unknown key 'targt' \\(did you mean 'target'\\?\\)"),
    bad("instances no name", pairs_from, {"pairs": [{"instance": "iid-V1"}]}, exc=InstancesFileError,
        match="give each pair a 'name'"),
    bad("instances two ways", pairs_from, {"pairs": [{**GOOD_TABLES, "instance": "iid-V1"}]}, exc=InstancesFileError,
        match="exactly one of"),
    bad("instances duplicate name", pairs_from, {"pairs": [GOOD_TABLES, GOOD_TABLES]}, exc=InstancesFileError,
        match="two pairs share this name"),
    bad("instances rows for the order", pairs_from, {"pairs": [{**GOOD_TABLES, "order": 1}]}, exc=InstancesFileError,
        match="needs V\\*\\*order = 2"),
    bad("instances not a distribution", pairs_from, {"pairs": [{**GOOD_TABLES, "target": [[0.5, 0.6]]}]},
        exc=InstancesFileError, match="pair 't': .*sum"),
    bad("instances draft missing", pairs_from, {"pairs": [{"name": "t", "target": [[1.0]]}]}, exc=InstancesFileError,
        match="'target' given without 'draft'"),
    bad("instances unknown generator", pairs_from, {"pairs": [{"name": "g", "generator": "perturbed_par"}]},
        exc=InstancesFileError, match="unknown generator 'perturbed_par' \\(did you mean 'perturbed_pair'\\?\\)"),
    bad("instances generator argument", pairs_from,
        {"pairs": [{"name": "g", "generator": "perturbed_pair", "args": {"V": 3, "strenght": 0.2}}]},
        exc=InstancesFileError, match="no argument 'strenght' \\(did you mean 'strength'\\?\\)"),
    bad("instances generator bad value", pairs_from,
        {"pairs": [{"name": "g", "generator": "aligned_pair", "args": {"V": 3, "alignment": "medium"}}]},
        exc=InstancesFileError, match="pair 'g': alignment must be 'strong' or 'weak'"),
    bad("instances unknown built-in", pairs_from, {"pairs": [{"name": "b", "instance": "iid-V4-randm"}]},
        exc=InstancesFileError, match="did you mean 'iid-V4-random'"),
    # --- spectheory show ---
    bad("show.cli unknown claim", run_cli, "show", "sd.lossles", exc=CLIError, match="did you mean 'sd.lossless'"),
    bad("show.cli unreadable report", run_cli, "show", "sd.lossless", "--report", _TMP / "a-file", exc=CLIError,
        match="--report: cannot read"),
]

ROWS += [
    bad("validate.cli typo'd prompt set", run_cli, "validate", "--prompts", "human-eval,mt-bnch", "--out", _TMP / "a-file",
        exc=CLIError, match="unknown prompt set 'mt-bnch'.*did you mean 'mt-bench'"),
    bad("validate.cli typo'd option", run_cli, "validate", "--gama", "3", exc=CLIError, match="No such option: --gama"),
    bad("sweep.cli typo'd option", run_cli, "sweep", "sd.mc", "--gird", "x=1", exc=CLIError,
        match="No such option: --gird"),
]
