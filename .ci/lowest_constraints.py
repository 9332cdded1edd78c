"""Print constraints that pin every dependency setup.cfg declares to its lowest version (``name>=X`` ->
``name==X``), and the tools of the extras (pytest, ...) to constraints.txt's: what `make test-oldest`
installs.

    python .ci/lowest_constraints.py setup.cfg constraints.txt > lowest.txt
"""
import configparser
import re
import sys

LOWER = re.compile(r"^([A-Za-z0-9_.\-]+)\s*>=\s*([^,;\s]+)")


def names_and_lowest(text):
    out = {}
    for line in text.splitlines():
        m = LOWER.match(line.strip())
        if m:
            out[m.group(1).lower()] = "%s==%s" % (m.group(1), m.group(2))
    return out


def main(setup_cfg, constraints):
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    lowest = names_and_lowest(config["options"]["install_requires"])
    lines = ["# the lowest versions setup.cfg declares (install_requires)"] + sorted(lowest.values())
    lines.append("# the extras' tools, as constraints.txt pins them")
    with open(constraints) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and line.split("==")[0].lower() not in lowest:
                lines.append(line)
    print("\n".join(lines))


if __name__ == "__main__":
    main(*sys.argv[1:3])
