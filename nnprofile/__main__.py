import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C before nnprofile was ready: one line, as later
    sys.stderr.write("nnprofile: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
