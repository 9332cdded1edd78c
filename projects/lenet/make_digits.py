"""Build the LeNet sample dataset from scikit-learn's bundled handwritten digits.

scikit-learn ships 1,797 real 8x8 digits (no download). Each is scaled to a
20x20 box and centred on a 28x28 canvas, as MNIST places its digits, then saved
as a PNG. Two NNC-format CSV files (``x:image,y:label``, image paths relative
to the CSV) split them into training and validation sets.

    python projects/lenet/make_digits.py [OUTDIR]

OUTDIR defaults to ``digits/`` beside this script, where lenet.nntxt looks.
"""
import csv
import os
import sys

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

VALIDATION_SHARE = 1 / 6  # MNIST's 60k/10k split, near enough
CANVAS = 28
BOX = 20


def to_28x28(digit_8x8):
    """Scale a 0..16 8x8 digit to 0..255 and centre it in a 28x28 image."""
    small = Image.fromarray((digit_8x8 * (255.0 / 16.0)).astype(np.uint8))
    box = small.resize((BOX, BOX), Image.BILINEAR)
    canvas = Image.new("L", (CANVAS, CANVAS), 0)
    offset = (CANVAS - BOX) // 2
    canvas.paste(box, (offset, offset))
    return canvas


def write_split(outdir, name, indices, images, labels):
    folder = os.path.join(outdir, name)
    os.makedirs(folder, exist_ok=True)
    rows = []
    for i in indices:
        rel = "%s/%04d.png" % (name, i)
        to_28x28(images[i]).save(os.path.join(outdir, rel))
        rows.append(("./" + rel, int(labels[i])))
    # Written last: a CSV on disk means its images are complete.
    tmp = os.path.join(outdir, name + ".csv.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["x:image", "y:label"])
        writer.writerows(rows)
    os.replace(tmp, os.path.join(outdir, name + ".csv"))
    return len(rows)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = argv[1] if len(argv) > 1 else os.path.join(here, "digits")
    digits = load_digits()
    order = np.random.RandomState(0).permutation(len(digits.target))
    n_valid = int(round(len(order) * VALIDATION_SHARE))
    valid, train = order[:n_valid], order[n_valid:]
    n_train = write_split(outdir, "training", sorted(train), digits.images, digits.target)
    n_val = write_split(outdir, "validation", sorted(valid), digits.images, digits.target)
    print("wrote %d training and %d validation digits to %s" % (n_train, n_val, outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
