"""One retargeting, the library's and the command line's: :func:`retarget` (a motion onto
any kind of target, :mod:`.retarget`), :class:`RunJob` and :func:`run_job` (the same with
files in and out, :mod:`.job`), and many clips at once (:mod:`.batch`)."""

from __future__ import annotations

from .job import RunJob, run_job
from .retargeting import Outcome, retarget

__all__ = ["Outcome", "RunJob", "retarget", "run_job"]
