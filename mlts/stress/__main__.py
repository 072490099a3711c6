"""``python -m mlts.stress``: see :func:`mlts.stress.main`."""
import sys

from . import main

sys.exit(main())
