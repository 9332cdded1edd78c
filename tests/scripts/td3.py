"""Reinforcement learning in TD3's manner: each iteration steps an environment (NumPy), stores the
transition, and once the buffer holds enough, updates the critic every iteration and the actor every
second one, then moves the target networks toward the trained ones with ``F.assign`` (a forward-only
graph that writes parameters).

    python td3.py --iterations 40
"""
from _helpers import timed_steps
import time
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def actor(s, scope):
    with nn.parameter_scope(scope):
        h = F.relu(PF.affine(s, 64, name="fc1"))
        return F.tanh(PF.affine(h, 2, name="fc2"))


def critic(s, a, scope):
    with nn.parameter_scope(scope):
        h = F.relu(PF.affine(F.concatenate(s, a, axis=1), 64, name="fc1"))
        return PF.affine(h, 1, name="fc2")


def soft_update(target_scope, source_scope, tau):
    """A graph whose forward moves each target parameter toward its source: F.assign into the parameter."""
    with nn.parameter_scope(target_scope):
        target = nn.get_parameters()
    with nn.parameter_scope(source_scope):
        source = nn.get_parameters()
    updates = [F.assign(target[k], (1.0 - tau) * target[k] + tau * source[k]) for k in target]
    return F.sink(*updates)


class Env:
    """A point that moves where it is pushed; reward for staying near the origin."""

    def __init__(self, rng):
        self.rng, self.state = rng, np.zeros(4, np.float32)

    def step(self, action):
        self.state = np.clip(self.state + 0.1 * np.concatenate([action, -action]) + 0.01 * self.rng.randn(4), -1, 1)
        return self.state.astype(np.float32), -float(np.sum(self.state ** 2))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    parser.add_argument("--start", type=int, default=8)
    parser.add_argument("--policy-delay", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    batch = 32
    s, a, r, s2 = (nn.Variable((batch, 4)), nn.Variable((batch, 2)), nn.Variable((batch, 1)),
                   nn.Variable((batch, 4)))
    target_q = r + 0.99 * critic(s2, actor(s2, "target/actor"), "target/critic")
    target_q.need_grad = False
    q = critic(s, a, "critic")
    critic_loss = F.mean(F.squared_error(q, target_q.get_unlinked_variable(need_grad=False)))
    actor_loss = -F.mean(critic(s, actor(s, "actor"), "critic"))
    obs = nn.Variable((1, 4))
    policy = actor(obs, "actor")
    with nn.parameter_scope("critic"):
        critic_solver = S.Adam(1e-3)
        critic_solver.set_parameters(nn.get_parameters())
    with nn.parameter_scope("actor"):
        actor_solver = S.Adam(1e-3)
        actor_solver.set_parameters(nn.get_parameters())
    update_actor_target = soft_update("target/actor", "actor", 0.005)
    update_critic_target = soft_update("target/critic", "critic", 0.005)
    env, buffer = Env(rng), []
    state = env.state
    ends = timed_steps(args)
    for t in range(args.iterations):
        ends.append(time.perf_counter())
        obs.d = state[None]
        policy.forward(clear_buffer=True)
        action = np.clip(policy.d[0] + 0.1 * rng.randn(2), -1, 1)
        next_state, reward = env.step(action)
        buffer.append((state, action, reward, next_state))
        state = next_state
        if len(buffer) < args.start:
            continue
        idx = rng.randint(0, len(buffer), batch)
        s.d, a.d, r.d, s2.d = (np.array([buffer[i][k] for i in idx]).reshape(v.shape)
                               for k, v in enumerate((s, a, r, s2)))
        target_q.forward(clear_buffer=True)
        critic_loss.forward(clear_no_need_grad=True)
        critic_solver.zero_grad()
        critic_loss.backward(clear_buffer=True)
        critic_solver.update()
        if t % args.policy_delay == 0:
            actor_loss.forward(clear_no_need_grad=True)
            actor_solver.zero_grad()
            actor_loss.backward(clear_buffer=True)
            actor_solver.update()
            update_actor_target.forward(clear_buffer=True)
            update_critic_target.forward(clear_buffer=True)
    print("reward %.4f" % reward)


if __name__ == "__main__":
    main()
