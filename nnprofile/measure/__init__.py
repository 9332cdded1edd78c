"""How an NNC project is measured, as NNC's Profile command does: its sections' entries in NNC's order
(``sequence``), sampled in rounds within a time budget (``rounds``, ``timing``), layers re-run on their
own or timed inside whole passes (``graph_mode``), a whole run with its data (``session``), memory (``peak``).

Input: a loaded project (``nnprofile.project``); output: sections of the result model (``nnprofile.result``).
"""
