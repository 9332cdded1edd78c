"""Several results made one: the one pooling rule (``profiles``: entries' samples and rounds pooled,
drift recomputed over the pooled rounds), ``--repeat`` in fresh processes (``fresh``), and the ranks of a
distributed run merged into one view (``ranks``).

It reads results (and their analysis), never measures: above the analysis, below comparisons and renderers.
"""
