"""``signals_interrupt``: a real signal to this process becomes :class:`Interrupted` with its exit
code, also when a library in between (Ray's ``wait``) turned it into a bare KeyboardInterrupt."""

from __future__ import annotations

import os
import signal

import pytest

from ha_envs.signals import Interrupted, signals_interrupt


def test_a_signal_is_interrupted_with_the_shells_exit_code():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as info:
        with signals_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            [None for _ in range(10**6)]  # the handler runs between bytecodes
    assert info.value.exit_code == 143 and info.value.name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before  # the old handler is back


def test_a_library_that_swallows_our_exception_still_stops_as_interrupted():
    def library_wait():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            [None for _ in range(10**6)]
        except Interrupted:
            raise KeyboardInterrupt from None  # what Ray's check_status does with a pending signal

    with pytest.raises(Interrupted) as info:
        with signals_interrupt():
            library_wait()
    assert info.value.exit_code == 130


def test_a_keyboardinterrupt_without_a_signal_is_left_alone():
    with pytest.raises(KeyboardInterrupt) as info:
        with signals_interrupt():
            raise KeyboardInterrupt
    assert not isinstance(info.value, Interrupted)
