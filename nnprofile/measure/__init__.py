"""Measuring: the clock and sampling rule, layers, rounds, graph hooks, the NNC sequence, a run."""
