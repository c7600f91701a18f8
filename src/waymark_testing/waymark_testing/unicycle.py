# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A kinematic unicycle standing in for the legged base in closed-loop follower tests.

Commands are integrated exactly along arcs (waymark.sim.kinematics, as sim_base_node does),
so the only error in a noise-free run is the controller's. Optional Gaussian noise on the
executed velocities (seeded) imitates a gait that does not do quite what it is told;
`blocked` makes the robot ignore every command, as if it were pushing against an obstacle.
"""

from __future__ import annotations

import numpy as np

from waymark.sim.kinematics import integrate_arc


class Unicycle:
    def __init__(
        self,
        x: float = 0.0,
        y: float = 0.0,
        yaw: float = 0.0,
        velocity_noise: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.x, self.y, self.yaw = x, y, yaw
        self.velocity_noise = velocity_noise  # standard deviation, relative to the command
        self.blocked = False
        self._rng = np.random.default_rng(seed)

    @property
    def pose(self) -> tuple[float, float, float]:
        return self.x, self.y, self.yaw

    def step(self, v: float, w: float, dt: float) -> None:
        """Drive forward at v (m/s) while turning at w (rad/s) for dt seconds."""
        if self.blocked:
            return
        if self.velocity_noise:
            v *= 1.0 + self.velocity_noise * self._rng.standard_normal()
            w *= 1.0 + self.velocity_noise * self._rng.standard_normal()
        self.x, self.y, self.yaw = integrate_arc(self.x, self.y, self.yaw, v, w, dt)
