"""``python -m core``: the command line (:mod:`core.cli.main`)."""

from core.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
