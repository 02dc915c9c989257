import sys

from tools.preflight.cli import main

sys.exit(main())
