import sys

from icml26.lucid.cli import main

sys.exit(main())
