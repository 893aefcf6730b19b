"""Grading with hidden tests (grader.py), verdict rules (verdicts.py) and test-log parsers (log_parsers.py),
forged-verdict checks (canaries.py, consistency.py) and environment faults (faults.py)."""

from .grader import GRADER_VERSION, EnvironmentFault, GradeReport, Grader, GradingError, local_sandbox_factory
from .log_parsers import PARSERS, get_parser

__all__ = ["GRADER_VERSION", "EnvironmentFault", "GradeReport", "Grader", "GradingError", "PARSERS", "get_parser",
           "local_sandbox_factory"]
