"""``python -m tique.checkpoint ARGS`` is ``tique checkpoint ARGS``."""

import sys

from tique.cli import main

sys.exit(main(["checkpoint", *sys.argv[1:]]))
