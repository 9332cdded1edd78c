"""Renderers: each turns a Profile into one output file, and reads nothing else."""
from .. import result_file
from . import csv_files, log, xlsx

RENDERERS = (log, csv_files, xlsx)


def write_all(profile, outdir, save_result=True):
    """Write every output file (and result.json, the data they come from); returns the paths."""
    written = []
    for renderer in RENDERERS:
        written.extend(renderer.write(profile, outdir))
    if save_result:
        written.append(result_file.save(profile, outdir))
    return written
