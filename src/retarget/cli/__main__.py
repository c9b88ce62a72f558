"""``python -m retarget.cli``: the ``retarget`` command line."""

import sys

from . import main

sys.exit(main())
