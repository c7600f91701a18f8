# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Is an input stream silent? A node watches each stream it expects, so that a camera
driver or SLAM that stopped (or never started, or publishes elsewhere) is said in the
console and in diagnostics, instead of the node idling without a word.

Times are seconds of a monotonic clock, given by the caller, so tests need no sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Report:
    """A line worth logging: the stream went silent (or is still), or came back."""

    silent: bool
    message: str


class InputWatch:
    """One stream. `once`: the stream need only come once (a latched map): silence
    after the first message is no fault."""

    def __init__(self, what: str, source: str, started_s: float, once: bool = False) -> None:
        self.what, self.source, self.once = what, source, once
        self._started = started_s
        self._last: float | None = None
        self._silent_since: float | None = None  # when the silence was first reported
        self._reported: float | None = None  # when it was last reported

    def seen(self, now_s: float) -> None:
        self._last = now_s

    def silence_s(self, now_s: float) -> float:
        """Seconds without a message (since the start when none came yet); 0 for a
        stream needed once that came."""
        if self._last is not None and self.once:
            return 0.0
        return now_s - (self._last if self._last is not None else self._started)

    def status(self, now_s: float, timeout_s: float) -> tuple[bool, str]:
        """(ok, message) for diagnostics."""
        silence = self.silence_s(now_s)
        if silence < timeout_s:
            return True, 'receiving' if self._last is not None else 'starting'
        return False, self._silence_message(silence)

    def check(self, now_s: float, timeout_s: float, repeat_s: float) -> Report | None:
        """A report when the stream has just gone silent for `timeout_s`, again every
        `repeat_s` while it stays silent, and once when it comes back; else None."""
        silence = self.silence_s(now_s)
        if silence >= timeout_s:
            if self._silent_since is None:
                self._silent_since, self._reported = now_s - silence, now_s
                return Report(True, self._silence_message(silence))
            if now_s - self._reported >= repeat_s:
                self._reported = now_s
                return Report(True, self._silence_message(silence))
            return None
        if self._silent_since is not None:
            gap = self._last - self._silent_since if self._last is not None else 0.0
            self._silent_since = self._reported = None
            return Report(False, f'{self.what} on {self.source} again, after {gap:.1f} s')
        return None

    def _silence_message(self, silence: float) -> str:
        yet = '' if self._last is not None else ' (none yet)'
        return f'no {self.what} on {self.source} for {silence:.1f} s{yet}'
