import sys

from icml26.asbm.cli import main

sys.exit(main())
