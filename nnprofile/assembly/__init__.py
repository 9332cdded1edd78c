"""A recorded program's events assembled into a profile, in pure functions: the saved form of a recording
(``events``), its calls into passes (``passes``), the loop's steps (``steps``), the passes into graphs
(``graphs``), graphs and steps into sections (``sections``); ``assemble`` runs the chain.

Input: a ``Capture`` (from ``nnprofile.recording``, or a file); output: sections of the result model. No NNabla.
"""
