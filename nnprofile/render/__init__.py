"""Renderers: each turns a Profile into one output file, and reads nothing else."""
from . import csv_files, log, xlsx

RENDERERS = (log, csv_files, xlsx)


def write_all(profile, outdir):
    """Write every output file; returns the paths written."""
    written = []
    for renderer in RENDERERS:
        written.extend(renderer.write(profile, outdir))
    return written
