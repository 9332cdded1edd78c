"""A CNN trained in dynamic mode as a new user writes it: the loss built anew every iteration, a validation every
few iterations under ``with nn.no_grad():``, and after the validation two images saved (``img * 0.5 + 0.5`` each,
then the program's own slow Python writing it: a PNG encoded by hand with zlib, as matplotlib's savefig would
take its milliseconds).

    python dynamic_cnn.py [--iterations N] [--val-interval K] [--out FOLDER]
"""
import argparse
import os
import struct
import tempfile
import zlib

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def net(x, test=False):
    h = F.relu(PF.convolution(x, 8, (3, 3), pad=(1, 1), name="c1"))
    h = F.max_pooling(h, (2, 2))
    h = F.relu(PF.convolution(h, 8, (3, 3), pad=(1, 1), name="c2"))
    return PF.affine(h, 10, name="fc")


def save_image(img, path):
    """img * 0.5 + 0.5 under auto_forward, then the image written: the program's own Python, many milliseconds."""
    pixels = (img * 0.5 + 0.5).d
    rows = (np.clip(pixels[0, 0], 0, 1) * 255).astype(np.uint8)
    for _ in range(30):  # (the encoding's work: a figure's rendering takes its time)
        raw = b"".join(b"\x00" + bytes(row) for row in np.kron(rows, np.ones((4, 4), np.uint8)))
        data = zlib.compress(raw, 9)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(data)) + data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--val-interval", type=int, default=10)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="dynamic-cnn-")
    nn.set_auto_forward(True)
    rng = np.random.RandomState(0)
    solver = S.Adam(1e-3)
    for i in range(args.iterations):
        x = nn.Variable.from_numpy_array(rng.rand(16, 1, 16, 16).astype(np.float32))
        t = nn.Variable.from_numpy_array(rng.randint(0, 10, (16, 1)))
        loss = F.mean(F.softmax_cross_entropy(net(x), t))
        if i == 0:
            solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        loss.backward()
        solver.update()
        if i % args.val_interval == 0:
            with nn.no_grad():
                vx = nn.Variable.from_numpy_array(rng.rand(16, 1, 16, 16).astype(np.float32))
                vpred = net(vx, test=True)
            save_image(vx, os.path.join(out, "input_%d.png" % i))
            save_image(vx * 0.5, os.path.join(out, "half_%d.png" % i))
            print("iteration %d: loss %.4f, validation %s" % (i, float(loss.d), vpred.d.shape))


if __name__ == "__main__":
    main()
