import sys

from icml26.hist.cli import main

sys.exit(main())
