"""What every room of nnprofile builds on, and nothing of nnprofile beneath it: errors, the shared vocabulary,
statistics, the clock seam, FLOP counts, buffer sizes and memory estimates, the hooks' cost, the options.

Nothing here times a project or records a program; both pipelines (``measure/``, ``recording/``) use it.
"""
