"""How a program is recorded while it runs: NNabla's hooks and the proxies of its solvers, iterators, monitors
and communicators (``recorder``, ``proxies``, ``patching``), what the hooks cost (``calibrate``), which rank it is
(``launcher``), and its raw events turned into data (``capturing``) for the assembly (``nnprofile.assembly``).

Input: a running NNabla program; output: a ``Capture`` (``nnprofile.assembly.events``).
"""
