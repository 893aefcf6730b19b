"""Grading with hidden tests (grader.py), verdict rules (verdicts.py) and test-log parsers (parsers.py)."""

from .grader import GRADER_VERSION, GradeReport, Grader, GradingError, local_sandbox_factory
from .log_parsers import PARSERS, get_parser

__all__ = ["GRADER_VERSION", "GradeReport", "Grader", "GradingError", "PARSERS", "get_parser",
           "local_sandbox_factory"]
