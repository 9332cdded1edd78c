"""Distributed training: which rank this process is (``launcher``), a rank ended by its launcher still
writing its result (``guard``), and the ranks' results merged into one view (``merge``)."""
