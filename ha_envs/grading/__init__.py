"""Grading with hidden tests: the grader's steps (grader.py), its report and errors (report.py), where
it runs (sandboxes.py), the scripts it runs in the grading copy (copy_scripts.py), what the patch's
text decides (patch_rules.py, patchfile.py), verdict rules (verdicts.py), test-log parsers
(log_parsers.py), forged-verdict checks (canaries.py, consistency.py) and environment faults (faults.py)."""

from .grader import Grader
from .report import GRADER_VERSION, EnvironmentFault, GradeReport, GradingError
from .sandboxes import local_sandbox_factory
from .log_parsers import PARSERS, get_parser

__all__ = ["GRADER_VERSION", "EnvironmentFault", "GradeReport", "Grader", "GradingError", "PARSERS", "get_parser",
           "local_sandbox_factory"]
