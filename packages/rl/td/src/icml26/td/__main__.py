import sys

from icml26.td.cli import main

sys.exit(main())
