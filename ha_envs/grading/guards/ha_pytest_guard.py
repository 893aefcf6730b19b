"""harnessadapt's grading guard for pytest: an independent, structured record of a test run.

The grader starts pytest with ``-p ha_pytest_guard_<random>`` (this file under a new name each run) and ``HA_GUARD_CONFIG`` naming a JSON file
(``report``: where to write; ``changed``: the files the agent's patch changed). The variable is
removed as soon as this module is imported, before any code under test runs, and only the first
(outermost) pytest session of the process is recorded, so nested in-process sessions (pytester) and
subprocesses stay out of it.

What it records, apart from the terminal output that a log parser reads:
- each test's outcome from its own ``pytest_runtest_logreport`` hook;
- in a ``pytest_runtest_makereport`` wrapper, whether a call phase that raised (not a skip or an
  expected failure) came out as "passed";
- pytest's and pluggy's central functions as they were before any test module was imported, and
  whether they were replaced by code in a file the agent changed; the same for plugins and hook
  implementations registered during the run;
- pytest's own exit status;
- the **watch** (Python 3.8+): ``ha_py_watch.py``, shipped beside this file under a name of the
  run's (``watch_module`` in the settings) and started when this module is imported, before any
  conftest or test module: an audit hook (hooks cannot be removed) that notes what the code under
  test does in classes a forgery needs and an ordinary fix does not (that module's docstring lists
  them), sent at once to the grader's collector on the host (``HA_WATCH_SOCKET``), or where there is
  none written to ``watch`` (a header line first), as well as to the report; the grader
  compares them with the gold patch's run of the same task (``grader.py``). Runs of other Python
  runners get the same watch through a ``sitecustomize`` (``runners.PythonWatchGuard``).

Runs on every Python and pytest the benchmarks use (3.6+, pytest 3 to 9): no f-strings with ``=``,
no walrus, no annotations that need evaluation.
"""

import json
import os
import sys

_CONFIG_PATH = os.environ.pop("HA_GUARD_CONFIG", None)
_SETTINGS = {}
if _CONFIG_PATH:
    try:
        with open(_CONFIG_PATH) as _f:
            _SETTINGS = json.load(_f)
    except (OSError, ValueError):
        _SETTINGS = {}
    try:  # nothing left on disk for code under test to read the report's path from
        os.remove(_CONFIG_PATH)
    except OSError:
        pass
_CHANGED = set(os.path.realpath(p) for p in _SETTINGS.get("changed", []))
_STATE = {"config": None, "tests": {}, "cwd_ids": {}, "tampered": [], "counts": {}, "done": False, "collected": {}}
_RANK = {"PASSED": 0, "XFAIL": 1, "XPASS": 1, "SKIPPED": 2, "FAILED": 3, "ERROR": 4}


def _critical():
    """(name, owner, attribute) of the functions a report passes through."""
    import _pytest.runner as runner
    import _pytest.python as python
    import _pytest.terminal as terminal
    import _pytest.main as main

    out = [("runner.call_and_report", runner, "call_and_report"),
           ("runner.runtestprotocol", runner, "runtestprotocol"),
           ("runner.call_runtest_hook", runner, "call_runtest_hook"),
           ("runner.CallInfo", runner, "CallInfo"),
           ("python.Function.runtest", python.Function, "runtest"),
           ("python.pytest_pyfunc_call", python, "pytest_pyfunc_call"),
           ("terminal.TerminalReporter.pytest_runtest_logreport", terminal.TerminalReporter,
            "pytest_runtest_logreport"),
           ("main.pytest_runtestloop", main, "pytest_runtestloop"),
           ("os._exit", os, "_exit"), ("sys.exit", sys, "exit")]
    callinfo = getattr(runner, "CallInfo", None)
    if callinfo is not None:
        out.append(("runner.CallInfo.from_call", callinfo, "from_call"))
    try:
        import _pytest.reports as reports
        report_cls = reports.TestReport
        out.append(("reports.TestReport", reports, "TestReport"))
    except ImportError:
        report_cls = getattr(runner, "TestReport", None)
    if report_cls is not None:
        out += [("TestReport.__init__", report_cls, "__init__"),
                ("TestReport.from_item_and_call", report_cls, "from_item_and_call")]
    try:
        import _pytest.skipping as skipping
        out.append(("skipping.pytest_runtest_makereport", skipping, "pytest_runtest_makereport"))
    except ImportError:
        pass
    try:
        import pluggy
        for cls_name in ("HookCaller", "_HookCaller"):
            cls = getattr(pluggy, cls_name, None) or getattr(getattr(pluggy, "_hooks", None), cls_name, None)
            if cls is not None:
                out.append(("pluggy.%s.__call__" % cls_name, cls, "__call__"))
        out.append(("pluggy.PluginManager._hookexec", pluggy.PluginManager, "_hookexec"))
    except ImportError:
        pass
    return out


def _raw(owner, attr):
    d = getattr(owner, "__dict__", {})
    return d[attr] if attr in d else getattr(owner, attr, None)


_ORIGINAL = {}
if _SETTINGS:
    for _name, _owner, _attr in _critical():
        _ORIGINAL[_name] = (_owner, _attr, _raw(_owner, _attr))


def _source_file(obj):
    """The file defining ``obj`` (a function, method, class or module), or None. (``ha_py_watch``
    has its own: this guard runs without it where the watch is off or not shipped.)"""
    for cand in (obj, getattr(obj, "__func__", None), getattr(obj, "__call__", None)):
        code = getattr(cand, "__code__", None)
        if code is not None:
            return code.co_filename
    mod = sys.modules.get(getattr(obj, "__module__", None) or "")
    f = getattr(obj, "__file__", None) or getattr(mod, "__file__", None)
    return f


def _package_dirs(*names):
    out = []
    for name in names:
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None)
        if f:
            out.append(os.path.dirname(os.path.realpath(f)) + os.sep)
    return tuple(out)


# When the repository under test *is* the runner (pytest's own repository), its patch changes these
# packages by design: such changes are the code under test, not an attack on the runner.
_RUNNER_DIRS = _package_dirs("_pytest", "pytest", "pluggy") if _SETTINGS else ()


def _from_agent(obj):
    f = _source_file(obj)
    if not f:
        return False
    real = os.path.realpath(f)
    return real in _CHANGED and not real.startswith(_RUNNER_DIRS)


def _flag(reason):
    if reason not in _STATE["tampered"]:
        _STATE["tampered"].append(reason)


# -- the watch (``ha_py_watch.py``, shipped beside this file under a name of this run's) -----------

def _watch_module():
    name = _SETTINGS.get("watch_module")
    if not name:
        return None
    try:
        import importlib

        return importlib.import_module(name)
    except ImportError:
        return None


_W = _watch_module() if _SETTINGS else None
if _W is not None:
    _W.start(_SETTINGS, ("_pytest", "pytest", "pluggy"), own=(os.path.realpath(__file__),))


def _import_hooks():
    if _W is not None:
        _W.import_hooks()


def pytest_configure(config):
    """Only the first configuration of the process is recorded: nested in-process sessions (pytester,
    ``pytest.main`` inside a test) load this module too, but get no recorder."""
    if _SETTINGS and _STATE["config"] is None:
        _STATE["config"] = config
        config.pluginmanager.register(_Recorder(config), "ha_pytest_guard_recorder")
        _hide_current_test()


def _hide_current_test():
    """``PYTEST_CURRENT_TEST`` names the running test, its parameters included: code under test that
    reads it knows which test called it and, from an id such as ``test_clamp[9-0-5-5]``, what the
    test expects (an answer key no event shows). While the graded run lasts it says only that a test
    runs, and in which phase (code that checks whether it runs under pytest still sees it)."""
    try:
        import _pytest.runner as runner
    except ImportError:  # pragma: no cover - every pytest since 3.2 has it
        return
    if not hasattr(runner, "_update_current_test_var"):
        return

    def _update_current_test_var(item, when):
        if when:
            os.environ["PYTEST_CURRENT_TEST"] = "graded-test (%s)" % (when,)
        else:
            os.environ.pop("PYTEST_CURRENT_TEST", None)

    runner._update_current_test_var = _update_current_test_var


def _put(nodeid, status):
    old = _STATE["tests"].get(nodeid)
    if old is None or _RANK[status] > _RANK[old]:
        _STATE["tests"][nodeid] = status


def _status(rep):
    xfail = hasattr(rep, "wasxfail")
    if rep.when == "call":
        if rep.passed:
            return "XPASS" if xfail else "PASSED"
        if rep.skipped:
            return "XFAIL" if xfail else "SKIPPED"
        return "FAILED"
    if rep.failed:
        return "ERROR"
    if rep.skipped:
        return "XFAIL" if xfail else "SKIPPED"
    return None


def _expected_exception(excinfo):
    names = set(c.__name__ for c in getattr(excinfo.type, "__mro__", ()))
    return bool(names & {"Skipped", "XFailed", "SkipTest", "Exit", "KeyboardInterrupt", "OutcomeException"})


try:
    import pytest as _pytest_mod
    _wrapper = _pytest_mod.hookimpl(hookwrapper=True, tryfirst=True)
except (ImportError, AttributeError, TypeError):  # pytest too old for hookimpl: the other checks stand
    _wrapper = None


class _Recorder(object):
    """The outermost session's hooks (registered on its plugin manager only)."""

    def __init__(self, config):
        self.config = config

    def pytest_plugin_registered(self, plugin, manager):
        if _from_agent(plugin):
            _flag("a plugin from a file the patch changed registered itself: %s" % (_source_file(plugin),))

    def pytest_runtest_logreport(self, report):
        if _STATE["done"]:
            return
        status = _status(report)
        if status is None:
            return
        _put(report.nodeid, status)
        try:
            _STATE["cwd_ids"][report.nodeid] = self.config.cwd_relative_nodeid(report.nodeid)
        except Exception:  # noqa: BLE001 - old pytest without it
            _STATE["cwd_ids"][report.nodeid] = report.nodeid
        key = {"PASSED": "passed", "XPASS": "xpassed", "XFAIL": "xfailed", "SKIPPED": "skipped",
               "FAILED": "failed", "ERROR": "error"}[status]
        _STATE["counts"][key] = _STATE["counts"].get(key, 0) + 1

    def _makereport(self, item, call):
        outcome = yield
        try:
            rep = outcome.get_result()
        except BaseException:  # noqa: BLE001 - the report itself failed; pytest says so
            return
        if (call.when == "call" and call.excinfo is not None and rep.passed and not hasattr(rep, "wasxfail")
                and not _expected_exception(call.excinfo)):
            _flag("%s raised %s but its report says passed" % (item.nodeid, call.excinfo.typename))

    if _wrapper is not None:
        pytest_runtest_makereport = _wrapper(_makereport)

    def pytest_collection_finish(self, session):
        """The bytes of every collected test module as pytest had them: a test file rewritten by
        code that ran before collection (the package under test, imported by a conftest) shows."""
        import hashlib

        for item in getattr(session, "items", []):
            path = str(getattr(item, "path", None) or getattr(item, "fspath", "") or "")
            if path and path not in _STATE["collected"] and os.path.isfile(path):
                with open(path, "rb") as f:
                    _STATE["collected"][path] = hashlib.sha256(f.read()).hexdigest()

    def pytest_runtest_setup(self, item):
        _import_hooks()

    def pytest_sessionfinish(self, session, exitstatus):
        _import_hooks()
        _finish(self.config, exitstatus)


def _check_integrity(config):
    for name, (owner, attr, original) in _ORIGINAL.items():
        now = _raw(owner, attr)
        if now is not original and _from_agent(now):
            _flag("%s was replaced by code from %s" % (name, _source_file(now)))
    for hookname in ("pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_report_teststatus",
                     "pytest_runtest_protocol", "pytest_runtest_call", "pytest_pyfunc_call",
                     "pytest_terminal_summary", "pytest_sessionfinish"):
        caller = getattr(config.hook, hookname, None)
        impls = caller.get_hookimpls() if caller is not None and hasattr(caller, "get_hookimpls") else []
        for impl in impls:
            if _from_agent(impl.function) or _from_agent(impl.plugin):
                _flag("hook %s is implemented by code from %s" % (hookname, _source_file(impl.function)))


def _finish(config, exitstatus):
    if _STATE["done"]:
        return
    _STATE["done"] = True
    try:
        _check_integrity(config)
    except Exception as exc:  # noqa: BLE001 - a broken check is itself suspicious
        _flag("the integrity check failed: %r" % (exc,))
    report = {"version": 1, "tests": _STATE["tests"], "cwd_ids": _STATE["cwd_ids"], "counts": _STATE["counts"],
              "exitstatus": int(exitstatus), "tampered": _STATE["tampered"], "pid": os.getpid(),
              "collected": _STATE["collected"], "watch": _W.seen() if _W is not None else [],
              "watched": _W is not None and _W.watched()}
    path = _SETTINGS.get("report")
    if not path:
        return
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.rename(tmp, path)
