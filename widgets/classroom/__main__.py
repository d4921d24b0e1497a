"""`python -m widgets.classroom NOTEBOOK [options]`: present a notebook with Voilà (--help)."""

import sys

from . import main

if __name__ == "__main__":
    main(sys.argv[1:])
