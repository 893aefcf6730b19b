"""`ha eval` progress on stderr: a bar redrawn in place on a terminal, plain lines elsewhere,
nothing with --no-progress; stdout keeps only the table."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

from ha_agents.runs.progress import EpisodeProgress
from ha_cli.main import main
from tests.conftest import task_row

HA = Path(sys.executable).with_name("ha")


def _tiny_jsonl(task, path: Path) -> list[str]:
    """The conftest's tiny task as a one-row JSONL source (grading it is quicker than a mini task's)."""
    row = task_row(task)
    path.write_text(json.dumps(row) + "\n")
    return ["--jsonl", str(path), "--policy", "oracle", "--harness", "h0"]


def test_a_terminal_gets_a_bar_with_counts_rate_and_eta(tiny_task, tmp_path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    command = [str(HA), "eval", *_tiny_jsonl(tiny_task, tmp_path / "t.jsonl"), "--out", str(tmp_path / "o")]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    err = b""
    while True:  # read as it comes, so a full pty buffer never blocks the child
        if select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode()
    assert proc.wait() == 0 and "| h0 (" in out and "\r" not in out and "episodes 1/1" not in out
    frames = [f for f in err.decode().replace("\x1b[K", "").split("\r") if f.strip()]
    assert frames[0].startswith("episodes 0/1 [") and "ETA ?" in frames[0]
    last = frames[-1].strip()
    assert re.fullmatch(r"episodes 1/1 \[#{20}\] 1 resolved \| \d+\.\d/min \| elapsed \d+:\d\d \| ETA 0:00 \| "
                        r"tiny__clamp#1 resolved", last), last
    assert err.endswith(b"\n")  # the bar's line is ended before anything else prints


def test_elsewhere_plain_lines_and_no_progress_silences(tiny_task, tmp_path, capsys):
    one = _tiny_jsonl(tiny_task, tmp_path / "t.jsonl")
    assert main(["eval", *one, "--out", str(tmp_path / "a")]) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err and "\x1b" not in captured.err
    lines = [line for line in captured.err.splitlines() if line.startswith("[")]
    assert len(lines) == 1, captured.err
    assert re.fullmatch(r"\[1/1\] run 1 tiny__clamp: resolved \(\d+\.\ds\) \| 1 resolved \| \d+\.\d/min \| "
                        r"elapsed \d+:\d\d \| ETA 0:00", lines[0]), lines[0]
    assert "| h0 (" in captured.out and "[1/1]" not in captured.out
    # the same --out with a second run: one more episode, and not a word on stderr
    assert main(["eval", *one, "--runs", "2", "--no-progress", "--out", str(tmp_path / "a")]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "| h0 (" in captured.out and "| 100.0 | 100.0 | 100.0 |" in captured.out


def test_a_resumed_run_counts_from_what_is_done_and_rates_only_new_work():
    stream = io.StringIO()
    bar = EpisodeProgress(total=4, done=2, resolved=1, stream=stream)
    assert bar.status().startswith("1 resolved | ?/min") and bar.status().endswith("ETA ?")
    bar.update({"instance_id": "a", "run": 2, "resolved": False, "termination": "max_turns", "mask_sample": True,
                "duration_s": 1.25})
    bar.close()
    assert stream.getvalue().startswith("[3/4] run 2 a: max_turns (masked) (1.2s) | 1 resolved | ")
    assert stream.getvalue().count("\n") == 1
    shown = io.StringIO()
    bar = EpisodeProgress(total=2, stream=shown, tty=True, refresh_s=60)
    bar.update({"instance_id": "b", "run": 1, "resolved": True})
    bar.close()
    text = shown.getvalue()
    assert text.startswith("\repisodes 0/2 [") and "\repisodes 1/2 [##########..........] 1 resolved" in text
    assert "| b#1" in text and text.endswith("\x1b[K\n")  # (the last item is cut at the stream's width)


def test_slow_preparations_say_so_with_an_eta_and_cached_ones_say_nothing():
    """A first snapshot (a clone) can take minutes before the first episode: each slow one is a line."""
    import io
    import time as _time

    from ha_agents.runs.progress import prepare_each

    stream, done = io.StringIO(), []

    def prepare(item):
        if item != "cached":
            _time.sleep(0.05)
        done.append(item)

    prepare_each(["a", "cached", "b"], prepare, "snapshots", stream=stream, quiet_s=0.04)
    lines = stream.getvalue().splitlines()
    assert done == ["a", "cached", "b"] and len(lines) == 2
    assert lines[0].startswith("snapshots 1/3: a (0.") and "ETA" in lines[0]
    assert lines[1].startswith("snapshots 3/3: b (") and lines[1].endswith("ETA 0:00")
    quiet = io.StringIO()
    prepare_each(["a"], prepare, "snapshots", stream=quiet, show=False, quiet_s=0.0)
    assert quiet.getvalue() == ""
