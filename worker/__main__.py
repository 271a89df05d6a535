"""``python -m worker``: run a worker until stopped (see :mod:`worker.process`)."""

import sys

from worker.process import main

sys.exit(main())
