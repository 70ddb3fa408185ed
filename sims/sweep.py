"""Sweeps: a grid of Monte Carlo or exact jobs (instances × algorithm parameters × seeds) run
through any :class:`concurrent.futures.Executor`.

* **Executors**: a local process pool by default (:func:`local_executor`), a Dask cluster
  through ``dask.distributed.Client(address).get_executor()`` (:func:`dask_executor`), or
  :class:`SerialExecutor` (in this process, one job after the other). Nothing here depends
  on which: a job is a pure function of its parameters and its seed.
* **Seeds**: each job's seed is derived from (base seed, job kind, parameters, replicate)
  with :func:`spectheory.rng.derive_seed` (CRC32 of the canonical JSON of the parameters),
  never from its position in the grid or the order jobs finish, so the table does not
  depend on the executor, the number of workers or the order.
* **Table**: one JSON object per job (``job_id``, ``kind``, the parameters, ``rep``, the
  job's results), appended to a JSONL file as jobs finish; a rerun reads it and runs only
  the missing jobs; when the sweep completes the file is rewritten in grid order, so two
  complete runs give byte-identical files. :func:`write_csv` exports the same rows.

A job kind is a function ``fn(params: dict, seed: numpy.random.SeedSequence) -> dict`` of
JSON scalars, registered with :func:`job` under a name (``"sd.mc"``) or given as an importable
``"module:function"`` string (what a remote Dask worker can import). ``params`` is one grid
point (axis name → value, JSON scalars); ``seed`` is the job's own seed sequence (derive
generators from it: ``numpy.random.default_rng(seed)``); the returned names must not repeat a
parameter. A kind may come with a parameter check (``job(name, check=fn)``, or an attribute
``fn.check_params``): ``check(params)`` raises ``ValueError``/``TypeError`` naming the bad
parameter, and :func:`grid` runs it on every grid point before any job starts. ``sd.*`` kinds are built in
(below); the other families' kinds live in ``sims/jobs/<family>.py`` (``se.mc``, ``ersd.tree``,
``ersd.bound``, ``multidraft.mc``, ``multidraft.exact``), imported by :func:`resolve` the first
time one of their names is asked for (in whichever process runs the job).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import csv
import hashlib
import importlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from spectheory.checks import check_int
from spectheory.rng import derive_seed

JOBS: dict[str, Callable[[dict, np.random.SeedSequence], dict]] = {}


def job(name: str, check: Callable[[dict], None] | None = None):
    """Register a job kind under ``name`` (decorator). ``check(params)``: raises ``ValueError``
    or ``TypeError`` naming a bad parameter; :func:`grid` runs it on every point before any
    job starts (stored as the function's ``check_params``)."""
    def deco(fn):
        if name in JOBS and JOBS[name] is not fn:
            raise ValueError(f"job kind {name!r} registered twice")
        if check is not None:
            fn.check_params = check
        JOBS[name] = fn
        return fn
    return deco


class SweepError(ValueError):
    """A sweep that cannot run as asked (bad kind, parameter, output or scheduler); the message
    names what is wrong and, where it can, what would be right."""


class UnknownJobKind(SweepError, KeyError):
    """A job kind that is neither registered nor an importable ``module:function``."""

    def __str__(self):
        return str(self.args[0])


def resolve(kind) -> Callable:
    """A registered name, a ``"module:function"`` path, or a callable."""
    if callable(kind):
        return kind
    if not isinstance(kind, str):
        raise TypeError(f"job kind must be a name, 'module:function' or a callable, got {kind!r}")
    if kind in JOBS:
        return JOBS[kind]
    if ":" in kind:
        mod, _, fn = kind.partition(":")
        try:
            module = importlib.import_module(mod)
        except ImportError as err:
            raise UnknownJobKind(f"job kind {kind!r}: cannot import module {mod!r} ({err})") from None
        if not callable(getattr(module, fn, None)):
            raise UnknownJobKind(f"job kind {kind!r}: module {mod!r} has no function {fn!r}")
        return getattr(module, fn)
    from . import jobs
    family = kind.partition(".")[0]
    if family in jobs.families():
        importlib.import_module(f"{jobs.__name__}.{family}")  # registers the family's kinds
        if kind in JOBS:
            return JOBS[kind]
    for fam in jobs.families():  # every kind, for the suggestion
        importlib.import_module(f"{jobs.__name__}.{fam}")
    raise UnknownJobKind(f"unknown job kind {kind!r}{jobs.suggest(kind, JOBS)}; known: {', '.join(sorted(JOBS))}; "
                         f"families with more kinds: {', '.join(jobs.families())} (or an importable "
                         "'module:function')")


def kind_name(kind) -> str:
    if isinstance(kind, str):
        return kind
    return f"{kind.__module__}:{kind.__qualname__}"


def _canonical(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Job:
    """One cell of the grid: a job kind, its parameters (JSON scalars) and a replicate index."""

    kind: str
    params_json: str
    rep: int

    @property
    def params(self) -> dict:
        return json.loads(self.params_json)

    @property
    def job_id(self) -> str:
        key = f"{self.kind}|{self.params_json}|{self.rep}"
        return hashlib.sha1(key.encode()).hexdigest()[:16]

    def seed(self, base_seed: int) -> np.random.SeedSequence:
        """Derived from the job's content only (never from its position or the executor)."""
        return derive_seed(base_seed, "sweep", self.kind, self.params_json, f"rep={self.rep}")


def grid(kind, *, reps: int = 1, **axes) -> list[Job]:
    """The Cartesian product of ``axes`` (name → list of values), ``reps`` replicates each
    (different seeds), in a fixed order: axes as given, last axis fastest, replicates
    innermost."""
    reps = check_int(reps, "reps", min=1)
    name = kind_name(kind)
    fn = resolve(kind if callable(kind) else name)  # fail early on an unknown kind
    check = getattr(fn, "check_params", None)
    values = []
    for ax, vals in axes.items():
        vals = list(vals) if isinstance(vals, (list, tuple, range, np.ndarray)) else [vals]
        if not vals:
            raise ValueError(f"axis {ax!r} has no values")
        values.append([v.item() if isinstance(v, np.generic) else v for v in vals])
    jobs = []
    for combo in itertools.product(*values):
        params = dict(zip(axes, combo))
        try:
            pj = _canonical(params)
        except TypeError as err:
            raise TypeError(f"job parameters must be JSON scalars: {params!r}") from err
        if check is not None:  # every point is checked before any job runs
            try:
                check(params)
            except (ValueError, TypeError) as err:  # the same kind of error, naming the grid point
                msg = str(err.args[0]) if err.args else str(err)
                where = ", ".join(f"{k}={v!r}" for k, v in params.items())
                raise type(err)(f"{msg} (grid point {where})") from None
        jobs.extend(Job(name, pj, r) for r in range(reps))
    return jobs


def run_job(kind: str, params_json: str, rep: int, base_seed: int) -> dict:
    """Run one job (top level, so executors can pickle it by reference); returns its row."""
    j = Job(kind, params_json, rep)
    result = resolve(kind)(j.params, j.seed(base_seed))
    if not isinstance(result, dict):
        raise TypeError(f"job {kind} returned {type(result).__name__}, expected a dict of results")
    clash = set(result) & (set(j.params) | {"job_id", "kind", "rep"})
    if clash:
        raise ValueError(f"job {kind} returned result names that clash with parameters: {sorted(clash)}")
    row = {"job_id": j.job_id, "kind": kind, **j.params, "rep": rep}
    row.update({k: (v.item() if isinstance(v, np.generic) else v) for k, v in result.items()})
    json.dumps(row)  # results must be JSON scalars
    return row


class SerialExecutor(cf.Executor):
    """Runs each job at submission, in this process (the serial reference)."""

    def submit(self, fn, /, *args, **kwargs):
        fut = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as err:  # noqa: BLE001 - handed to the caller through the future
            fut.set_exception(err)
        return fut


def _worker_init(numba_threads: int):
    """Process-pool workers run one job each at a time: give each its share of the cores."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        import numba
        numba.set_num_threads(max(1, min(numba_threads, numba.config.NUMBA_NUM_THREADS)))
    except Exception:  # noqa: BLE001 - threads are a performance hint only
        pass


def local_executor(workers: int | None = None) -> cf.Executor:
    """A process pool of ``workers`` processes (default: one per CPU), started with ``spawn``
    (no forked Numba/OpenMP state), each with numba threads = CPUs // workers."""
    import multiprocessing as mp
    n_cpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = n_cpu if workers is None else check_int(workers, "workers", min=1)
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                  initializer=_worker_init, initargs=(max(1, n_cpu // workers),))


#: seconds to wait for a Dask scheduler before giving up
CONNECT_TIMEOUT = 5.0


def check_scheduler(address: str, timeout: float = CONNECT_TIMEOUT) -> str:
    """Refuse a malformed or unreachable scheduler address in at most ``timeout`` seconds
    (:class:`SweepError` naming it), before any output is written or job started."""
    if not isinstance(address, str) or not address.strip():
        raise SweepError(f"scheduler address must be 'tcp://host:port', got {address!r}")
    address = address.strip()
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    known = ("tcp", "tls", "inproc", "ucx", "ws", "wss")
    if scheme not in known:
        from .jobs import suggest
        raise SweepError(f"scheduler address {address!r}: unknown scheme {scheme!r}{suggest(scheme, known)}; "
                         "use tcp://host:port (e.g. tcp://127.0.0.1:8786)")
    if scheme in ("tcp", "tls", "ws", "wss"):
        host, colon, port = rest.rpartition(":")
        host = host.strip("[]")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SweepError(f"scheduler address {address!r}: expected {scheme}://host:port (e.g. "
                             f"{scheme}://127.0.0.1:8786)")
        import socket
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
        except OSError as err:
            raise SweepError(f"no Dask scheduler reachable at {address} within {timeout:g} s "
                             f"({err.strerror or err}); start one with `dask scheduler` or check the address") from None
    return address


@contextlib.contextmanager
def dask_executor(scheduler, timeout: float = CONNECT_TIMEOUT):
    """``dask.distributed.Client(scheduler).get_executor()``; ``scheduler`` is an address
    (``tcp://host:8786``, checked and reached within ``timeout`` seconds) or a cluster object
    (e.g. ``LocalCluster``). Needs the ``dask`` extra: ``pip install 'spectheory[dask]'``."""
    try:
        from dask.distributed import Client
    except ImportError as err:
        raise ImportError("a Dask scheduler needs dask.distributed: pip install 'spectheory[dask]'") from err
    if isinstance(scheduler, str):
        scheduler = check_scheduler(scheduler, timeout)
    try:
        client = Client(scheduler, timeout=timeout)
    except OSError as err:
        raise SweepError(f"cannot connect to the Dask scheduler at {scheduler}: {err}") from None
    try:
        yield client.get_executor()
    finally:
        client.close()


@contextlib.contextmanager
def executor_for(*, scheduler=None, workers: int | None = None):
    """The executor the CLI uses: Dask when ``scheduler`` is given, else serial for
    ``workers == 1``, else a local process pool."""
    if scheduler is not None:
        with dask_executor(scheduler) as ex:
            yield ex
    elif workers == 1:
        yield SerialExecutor()
    else:
        ex = local_executor(workers)
        try:
            yield ex
        finally:
            ex.shutdown(wait=True, cancel_futures=True)


def read_table(path) -> list[dict]:
    """Rows of a JSONL table (a truncated last line from an interrupted run is skipped)."""
    path = Path(path)
    rows = []
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _write_jsonl(path: Path, rows: Iterable[dict]):
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, path)


def write_csv(rows: list[dict], path) -> Path:
    """The same table as CSV (columns in first-seen order; floats written with repr)."""
    path = Path(path)
    cols = list(dict.fromkeys(k for r in rows for k in r))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: repr(v) if isinstance(v, float) else v for k, v in r.items()})
    return path


def run_sweep(jobs: list[Job], out=None, *, executor: cf.Executor | None = None,
              base_seed: int = 0, progress: bool = True, workers: int | None = None) -> list[dict]:
    """Run every job not already in the table ``out`` (JSONL) and return all rows in grid
    order. ``executor``: any :class:`concurrent.futures.Executor` (default: a local process
    pool of ``workers`` processes, shut down afterwards). Rows are appended to ``out`` as jobs
    finish (so an interrupted sweep resumes), then the file is rewritten in grid order."""
    base_seed = check_int(base_seed, "base_seed", min=0)
    if not all(isinstance(j, Job) for j in jobs):
        raise TypeError("jobs must be a list of spectheory.sims.sweep.Job (build it with grid())")
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError("the grid lists the same job twice")
    out = None if out is None else Path(out)
    done = {}
    existed = out is not None and out.exists()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        wanted = set(ids)
        done = {r["job_id"]: r for r in read_table(out) if r.get("job_id") in wanted}
    pending = [j for j in jobs if j.job_id not in done]
    own = executor is None and pending
    ex = local_executor(workers) if own else executor
    bar = None
    try:
        if pending:
            if progress:
                from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                                           TimeRemainingColumn)
                bar = Progress(TextColumn("sweep"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), transient=True)
                bar.start()
                task = bar.add_task("sweep", total=len(jobs), completed=len(done))
            log = open(out, "a") if out is not None else None
            try:
                futs = [ex.submit(run_job, j.kind, j.params_json, j.rep, base_seed) for j in pending]
                for fut in cf.as_completed(futs):
                    row = fut.result()
                    done[row["job_id"]] = row
                    if log:
                        log.write(json.dumps(row) + "\n")
                        log.flush()
                    if bar:
                        bar.advance(task)
            finally:
                if log:
                    log.close()
                    if not existed and out.exists() and out.stat().st_size == 0:
                        out.unlink()  # a run that failed before its first row leaves no empty table
    finally:
        if bar:
            bar.stop()
        if own:
            ex.shutdown(wait=True, cancel_futures=True)
    rows = [done[i] for i in ids]
    if out is not None:
        _write_jsonl(out, rows)
    return rows


# --- built-in job kinds ------------------------------------------------------------------------

def _sd_spec(**extra) -> dict:
    from spectheory import instances

    from .jobs import REQUIRED, choice, integer, real
    return {"instance": (choice(*instances.names()), None), "alpha": (real(lo=0.0, hi=1.0), None),
            "gamma": (integer(min=1), REQUIRED), **extra}


def _check_sd(kind: str, **extra):
    """The parameter check of an ``sd.*`` kind (:func:`grid` runs it on every point first)."""
    def check(params: dict) -> None:
        from .jobs import parse
        p = parse(kind, params, _sd_spec(**extra))
        if (p["instance"] is None) == (p["alpha"] is None):
            raise ValueError(f"{kind}: give exactly one of 'instance' (a built-in instance) and 'alpha' "
                             "(the two-point pair with acceptance α)")
    return check


def _sd_mc_params() -> dict:
    from spectheory.rules import sd as rules

    from .jobs import REQUIRED, boolean, choice, integer
    names = [r.name for r in (rules.STANDARD, rules.BROKEN_RESIDUAL_P, rules.BROKEN_SWAPPED_RATIO,
                              rules.BROKEN_NO_BONUS)]
    return {"n_iterations": (integer(min=2), REQUIRED), "rule": (choice(*names), "standard"),
            "restart": (boolean(), True)}


def _check_sd_mc(params: dict) -> None:
    _check_sd("sd.mc", **_sd_mc_params())(params)


def _sd_rule(name: str):
    from spectheory.rules import sd as rules
    table = {r.name: r for r in (rules.STANDARD, rules.BROKEN_RESIDUAL_P, rules.BROKEN_SWAPPED_RATIO,
                                 rules.BROKEN_NO_BONUS)}
    if name not in table:
        raise ValueError(f"unknown SD rule {name!r}; known: {', '.join(table)}")
    return table[name]


def _sd_pair(params: dict):
    """``instance`` (a built-in instance name, :mod:`spectheory.instances`) or ``alpha`` (the
    order-0 two-point pair p = (1 − α/2, α/2), q = reversed, with Σ min(p, q) = α exactly)."""
    if "alpha" in params:
        from spectheory.pairs import pair_from_tables
        from spectheory.checks import check_probability
        a = check_probability(params["alpha"], "alpha")
        p = np.array([1.0 - a / 2, a / 2])
        return pair_from_tables(p, p[::-1].copy(), order=0, name=f"two-point-alpha{a:g}")
    from spectheory import instances
    return instances.get(params["instance"])


@job("sd.mc", check=_check_sd_mc)
def sd_mc(params: dict, seed) -> dict:
    """Monte Carlo of standard speculative sampling: tokens per iteration (mean, standard error) and τ.
    Uses :func:`spectheory.montecarlo.sd.simulate`.
    Parameters: ``instance`` or ``alpha``, ``gamma``, ``n_iterations``, optional ``rule``
    (default ``standard``), ``restart`` (default True: i.i.d. iterations from state 0).
    Results: mean and standard error of tokens per iteration, mean τ."""
    from spectheory.montecarlo import sd as mc
    pair = _sd_pair(params)
    res = mc.simulate(pair, params["gamma"], params["n_iterations"], rule=_sd_rule(params.get("rule", "standard")),
                      seed=seed, restart=bool(params.get("restart", True)))
    x = res.n_emitted.astype(np.float64)
    return {"mean_tokens": float(x.mean()), "se_tokens": float(x.std(ddof=1) / np.sqrt(x.size)),
            "mean_tau": float(res.tau.mean())}


@job("sd.exact", check=lambda params: _check_sd("sd.exact")(params))
def sd_exact(params: dict, seed) -> dict:
    """Exact expected tokens per iteration from state 0 (chain DP) and long-run tokens per target call of SD.
    Standard speculative sampling. Parameters: ``instance`` or ``alpha``,
    ``gamma``. The seed is unused (exact)."""
    from spectheory.closed_forms import sd as cf
    pair = _sd_pair(params)
    g = params["gamma"]
    return {"expected_tokens": float(cf.expected_tokens_chain(pair, g, 0)),
            "long_run_tokens": float(cf.long_run_block_efficiency(pair, g))}
