"""The bundled handwritten digits (projects/lenet/digits), as arrays for the example scripts.

`make demo` (or `python projects/lenet/make_digits.py`) writes them: 28x28 PNG images and
NNC-style CSV files, made from scikit-learn's own digits, no download.
"""

import csv
import os

import numpy as np
from PIL import Image

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "projects", "lenet", "digits")


def load(split="training"):
    """(images as float32 N x 1 x 28 x 28 in [0, 1], labels as N x 1) of 'training' or 'validation'."""
    path = os.path.join(FOLDER, split + ".csv")
    if not os.path.isfile(path):
        raise SystemExit("%s is missing: run 'make demo' or 'python projects/lenet/make_digits.py' first" % path)
    images, labels = [], []
    with open(path, newline="") as f:
        for row in list(csv.reader(f))[1:]:
            image = Image.open(os.path.join(os.path.dirname(path), row[0]))
            images.append(np.asarray(image, dtype=np.float32)[None] / 255.0)
            labels.append([int(row[1])])
    return np.stack(images), np.array(labels, dtype=np.int32)
