"""``python -m kbqa_lit ...`` is the ``kbqa`` command (used by W&B sweep commands)."""

import sys

from kbqa_lit.cli import main

sys.exit(main())
