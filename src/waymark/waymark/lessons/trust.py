# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Transfer Reliability Score: how much a lesson has earned by the verified outcomes
of the tasks it was retrieved for.

The score is a smoothed success rate, v = (λ·v0 + c) / (λ + n): a prior worth λ visits of
mean v0 blended with the rewards seen. A new lesson starts at v0 whatever its own task's
outcome was, only (n, c) are kept, so the order outcomes arrive in cannot change it, and a
lesson seen once moves only part of the way toward its one result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class TrustPrior:
    """λ (`weight`, in visits) and v0 (`mean`); SMA uses 2 and 0.5 on every benchmark,
    one virtual success and one virtual failure."""

    weight: float = 2.0
    mean: float = 0.5

    def __post_init__(self) -> None:
        if not (math.isfinite(self.weight) and self.weight > 0.0):
            raise ValueError(f'the prior weight must be > 0, got {self.weight}')
        if not 0.0 <= self.mean <= 1.0:
            raise ValueError(f'the prior mean must be in [0, 1], got {self.mean}')


@dataclass(frozen=True)
class Visits:
    """How often a lesson was retrieved for a task with a verified outcome (`count`, n)
    and the rewards those outcomes earned (`reward_sum`, c)."""

    count: int = 0
    reward_sum: float = 0.0

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f'a visit count cannot be negative, got {self.count}')
        if not (math.isfinite(self.reward_sum) and 0.0 <= self.reward_sum <= self.count):
            raise ValueError(
                f'the reward sum must be in [0, count={self.count}], got {self.reward_sum}'
            )

    def score(self, prior: TrustPrior) -> float:
        """v, the lesson's Transfer Reliability Score, in [0, 1]."""
        return (prior.weight * prior.mean + self.reward_sum) / (prior.weight + self.count)

    def after(self, reward: float) -> Visits:
        """The visits once one more verified outcome with `reward` in [0, 1] is counted."""
        if not (math.isfinite(reward) and 0.0 <= reward <= 1.0):
            raise ValueError(f'a reward must be in [0, 1], got {reward}')
        return Visits(self.count + 1, self.reward_sum + reward)

    def without(self, reward: float) -> Visits:
        """The visits once an outcome counted with `reward` is withdrawn (a later word
        replaces it); ValueError when these counts cannot hold it."""
        if not (math.isfinite(reward) and 0.0 <= reward <= 1.0):
            raise ValueError(f'a reward must be in [0, 1], got {reward}')
        rest = self.reward_sum - reward
        if self.count < 1 or not 0.0 <= rest <= self.count - 1:
            raise ValueError(f'{self} cannot give back an outcome of reward {reward:g}')
        return Visits(self.count - 1, rest)
