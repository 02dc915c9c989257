import sys

from tools.plan_capacity.cli import main

sys.exit(main())
