"""`python -m dyadic24` is the `dyadic24` command."""

import sys

from dyadic24.cli import main

sys.exit(main())
