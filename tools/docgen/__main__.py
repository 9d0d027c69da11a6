"""``python -m tools.docgen [--check] [--docs-dir DIR]``: see :mod:`tools.docgen`."""

import sys

from tools.docgen import main

sys.exit(main())
