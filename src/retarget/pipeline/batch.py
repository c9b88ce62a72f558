"""Whole libraries: one task per clip on a process pool, Dask or Ray (``retarget batch``).

Each clip is one :class:`~retarget.pipeline.job.RunJob`, carried out by
:func:`retarget.pipeline.job.run_job` in a worker process exactly as ``retarget run``
would: the same output file and the same measures. The engines only
schedule: ``local`` is a :class:`concurrent.futures.ProcessPoolExecutor` on
this machine, ``dask`` a ``distributed`` cluster (a ``LocalCluster`` of
single-threaded worker processes when no scheduler address is given), ``ray``
a Ray cluster (the optional extra ``retarget[ray]``). Workers run their
numeric libraries on one thread each: parallelism comes from the clips.

**Manifest** (JSON lines, one record per clip carried out, appended and
synced as each clip finishes, so a killed run loses at most the clips in
flight). A record::

    {"input": "clips/walk_01.bvh", "input_hash": "sha256:…", "key": "sha256:…",
     "output": "out/walk_01.bvh", "output_hash": "sha256:…", "method": "hierarchical",
     "target": "preset:blubby", "status": "ok", "error": null, "frames": 600,
     "seconds": 0.41, "measures": {…}, "warnings": [], "worker": "host:1234",
     "finished": "2026-…Z"}

``status`` is ``"ok"`` or ``"error"`` (then ``error`` holds the one-line
message and no output is written). ``key`` hashes the contents of every file
the clip reads (source, character, skeleton, map, terrain), the method and its
options and the library's version. A clip is **skipped** when the manifest's
last record for its output has the same key, status ok, and the output file
still has the recorded hash: a re-run resumes an interrupted batch and redoes
only what changed or failed. ``measures`` are those of ``retarget eval``
(:func:`retarget.humanoid.metrics.evaluate`); ``warnings`` the one-line
:class:`~retarget.core.errors.RetargetWarning` messages of the clip (input read
only in part), which :func:`run_batch` also issues again in the calling
process (the command line prints them). Records are strict JSON: a value that
is not finite is ``null`` with a ``<key>_note`` (:mod:`retarget.core.strict_json`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.errors import RetargetError, RetargetWarning, warn
from ..core.strict_json import json_default, strict_json
from .job import RunJob, run_job

__all__ = [
    "ENGINES",
    "BatchSummary",
    "ClipTask",
    "plan_batch",
    "read_manifest",
    "run_batch",
    "run_clip",
]

#: The engines ``retarget batch --engine`` knows.
ENGINES = ("local", "dask", "ray")

#: Environment of the workers: one thread per numeric library (the clips are the parallelism).
SINGLE_THREADED = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
}


def file_hash(path: str | os.PathLike) -> str:
    """``sha256:`` and the hex digest of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


@dataclass(frozen=True)
class ClipTask:
    """One clip of a batch: its job, the hash of its source and the content key (module doc)."""

    job: RunJob
    input_hash: str
    key: str


def _output_path(source: Path, root: Path, out_dir: Path, suffix: str) -> Path:
    """``out_dir`` / the source's path below ``root``, with ``suffix``."""
    return (out_dir / source.relative_to(root)).with_suffix(suffix)


def plan_batch(
    sources: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    template: RunJob,
    *,
    suffix: str | None = None,
) -> list[ClipTask]:
    """The tasks of a batch: one per source, its output under ``out_dir``.

    Parameters
    ----------
    sources : sequence of paths
        The clips; outputs keep their paths below the sources' common folder.
    out_dir : path
    template : RunJob
        Method, target and options shared by every clip (its ``source`` and
        ``output`` are replaced).
    suffix : str, optional
        What each clip is written as: one of the target's
        (:attr:`retarget.targets.Target.writes`: a motion format holding its skeleton
        onto a skeleton, joint trajectories onto a robot, the character with the clip
        added onto a character); default its first (``.bvh``, ``.npz``, ``.glb``).

    Raises
    ------
    RetargetError
        No source, a target that does not open, a suffix it does not write, an
        unreadable file, or two sources with one output.
    """
    if not sources:
        raise RetargetError("no input clip matched")
    writes = template.open_target().writes  # (opened once here: a bad target fails once)
    suffix = suffix or writes[0]
    if suffix not in writes:
        raise RetargetError(
            f"batch writes {' or '.join(writes)} onto {template.target_name}, not {suffix!r}"
        )
    paths = [Path(s).absolute() for s in sources]
    root = Path(os.path.commonpath([p.parent for p in paths]))
    out = Path(out_dir).absolute()
    shared = {
        name: file_hash(path)
        for name in ("target", "target_from", "target_to", "skeleton", "map")
        if (path := getattr(template, name))
    }
    shared.update((name, file_hash(path)) for name, path in template.option_files.items())
    options = {
        f.name: getattr(template, f.name)
        for f in dataclasses.fields(template)
        if f.name not in ("source", "output", "report", "method_options", *shared)
    }
    options.update((k, v) for k, v in template.method_options.items() if k not in shared)
    from .. import __version__

    tasks: list[ClipTask] = []
    seen: dict[Path, Path] = {}
    for path in paths:
        output = _output_path(path, root, out, suffix)
        if output in seen:
            raise RetargetError(f"{path} and {seen[output]} would both write {output}")
        seen[output] = path
        if output.exists() and os.path.samefile(output, path):
            raise RetargetError(
                f"{output}: refusing to write over the input (choose another --out)"
            )
        input_hash = file_hash(path)
        content = {"source": input_hash, **shared, "options": options, "version": __version__}
        key = (
            "sha256:"
            + hashlib.sha256(
                json.dumps(content, sort_keys=True, default=json_default).encode()
            ).hexdigest()
        )
        job = dataclasses.replace(template, source=str(path), output=str(output), report=None)
        tasks.append(ClipTask(job, input_hash, key))
    return tasks


def read_manifest(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The last record per output path (a torn last line, from a killed run, is ignored)."""
    records: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("output"), str):
                records[record["output"]] = record
    return records


def _done(task: ClipTask, record: dict[str, Any] | None) -> bool:
    """The clip's output is current: same key, status ok, output unchanged since."""
    if record is None or record.get("status") != "ok" or record.get("key") != task.key:
        return False
    output = Path(task.job.output)
    return output.is_file() and file_hash(output) == record.get("output_hash")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if isinstance(exc, RetargetError) else f"{type(exc).__name__}: {text}"


def run_clip(task: ClipTask) -> dict[str, Any]:
    """Carry out one clip (in a worker) and return its manifest record; never raises
    for a bad clip: the error goes into the record."""
    job = task.job
    t0 = time.perf_counter()
    record: dict[str, Any] = {
        "input": job.source,
        "input_hash": task.input_hash,
        "key": task.key,
        "output": job.output,
        "output_hash": None,
        "method": job.method,
        "target": job.target_name,
        "status": "ok",
        "error": None,
        "frames": None,
        "measures": None,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RetargetWarning)
        try:
            Path(job.output).parent.mkdir(parents=True, exist_ok=True)
            report = run_job(job).report
            record["frames"] = report.get("frames")
            record["measures"] = report.get("measures")  # (the target's own)
            record["output_hash"] = file_hash(job.output)
        except Exception as exc:  # a bad clip is recorded, never stops the batch
            record["status"], record["error"] = "error", _one_line(exc)
    said = [w for w in caught if issubclass(w.category, RetargetWarning)]
    record["warnings"] = list(dict.fromkeys(" ".join(str(w.message).splitlines()) for w in said))
    for w in caught:  # others as Python shows them
        if not issubclass(w.category, RetargetWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    record["seconds"] = time.perf_counter() - t0
    record["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    record["finished"] = datetime.now(UTC).isoformat(timespec="milliseconds")
    return record


# -- engines: each runs the tasks and yields their records as they finish ----------------------


def _single_threaded_worker() -> None:
    os.environ.update(SINGLE_THREADED)


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """Workers started inside inherit single-threaded numeric libraries."""
    saved = {k: os.environ.get(k) for k in SINGLE_THREADED}
    os.environ.update(SINGLE_THREADED)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _local(tasks: Sequence[ClipTask], workers: int, scheduler: str | None) -> Iterator[dict]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if scheduler:
        raise RetargetError("--scheduler needs --engine dask or ray")
    context = multiprocessing.get_context("spawn")
    with (
        _worker_environment(),
        ProcessPoolExecutor(
            workers, mp_context=context, initializer=_single_threaded_worker
        ) as pool,
    ):
        futures = [pool.submit(run_clip, t) for t in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _dask(tasks: Sequence[ClipTask], workers: int, scheduler: str | None) -> Iterator[dict]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - a dependency of the package
        raise RetargetError("--engine dask needs the `distributed` package") from None
    with contextlib.ExitStack() as stack:
        if scheduler:
            client = stack.enter_context(Client(scheduler))
        else:
            import dask

            # Dask's workers trim malloc's heap at 64 KiB by default, which costs a clip of
            # short-lived numpy arrays about a third more time: glibc's own threshold instead
            spawn = dask.config.get("distributed.nanny.pre-spawn-environ")
            spawn = {k: v for k, v in spawn.items() if k != "MALLOC_TRIM_THRESHOLD_"}
            stack.enter_context(dask.config.set({"distributed.nanny.pre-spawn-environ": spawn}))
            stack.enter_context(_worker_environment())
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=40,
                )
            )
            client = stack.enter_context(Client(cluster))
        futures = [client.submit(run_clip, t, pure=False) for t in tasks]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            client.cancel(futures)


def _ray(tasks: Sequence[ClipTask], workers: int, scheduler: str | None) -> Iterator[dict]:
    try:
        import ray
    except ImportError:
        raise RetargetError(
            "--engine ray needs Ray: pip install 'retarget[ray]' (or use dask)"
        ) from None
    started = not ray.is_initialized()
    if started:
        ray.init(
            address=scheduler,
            num_cpus=None if scheduler else workers,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": SINGLE_THREADED},
        )
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_clip)
        pending = [remote.remote(t) for t in tasks]
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                yield ray.get(ready[0])
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
    finally:
        if started:
            ray.shutdown()


_ENGINES: dict[str, Callable[[Sequence[ClipTask], int, str | None], Iterator[dict]]] = {
    "local": _local,
    "dask": _dask,
    "ray": _ray,
}


@dataclass(frozen=True)
class BatchSummary:
    """What a batch did: clips done now, skipped as current, failed; wall time (s)."""

    done: int
    skipped: int
    failed: int
    seconds: float
    errors: tuple[tuple[str, str], ...]  # (input, message) of each failed clip

    @property
    def clips_per_minute(self) -> float:
        """Clips carried out (done or failed) per minute of wall time."""
        return 60.0 * (self.done + self.failed) / self.seconds if self.seconds > 0 else 0.0


def _append(manifest: Path, record: dict[str, Any]) -> None:
    line = strict_json(record)
    with open(manifest, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def run_batch(
    tasks: Sequence[ClipTask],
    manifest: str | os.PathLike,
    *,
    engine: str = "local",
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool | None = None,
) -> BatchSummary:
    """Carry out the tasks not yet current in ``manifest`` and append their records.

    Parameters
    ----------
    tasks : sequence of ClipTask
        From :func:`plan_batch`.
    manifest : path
        JSON lines (module docstring); created when missing.
    engine : {"local", "dask", "ray"}
    workers : int
        Worker processes (a given scheduler's cluster brings its own).
    scheduler : str, optional
        Address of a running Dask scheduler or Ray cluster.
    progress : bool, optional
        A progress bar with ETA on stderr (default: when stderr is a terminal).
    """
    from tqdm import tqdm

    if engine not in _ENGINES:
        raise RetargetError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if workers < 1:
        raise RetargetError(f"--workers must be at least 1, got {workers}")
    manifest = Path(manifest)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    previous = read_manifest(manifest)
    todo = [t for t in tasks if not _done(t, previous.get(t.job.output))]
    t0 = time.perf_counter()
    done = failed = 0
    errors: list[tuple[str, str]] = []
    if todo:
        bar = tqdm(
            total=len(todo),
            unit="clip",
            desc=f"batch ({engine}, {workers} worker{'s' if workers > 1 else ''})",
            disable=None if progress is None else not progress,
        )
        with bar:
            for record in _ENGINES[engine](todo, workers, scheduler):
                _append(manifest, record)
                for text in record.get("warnings", ()):  # from the worker, said here
                    warn(text)
                if record["status"] == "ok":
                    done += 1
                else:
                    failed += 1
                    errors.append((record["input"], record["error"]))
                    bar.set_postfix(failed=failed)
                bar.update()
    return BatchSummary(
        done=done,
        skipped=len(tasks) - len(todo),
        failed=failed,
        seconds=time.perf_counter() - t0,
        errors=tuple(errors),
    )
