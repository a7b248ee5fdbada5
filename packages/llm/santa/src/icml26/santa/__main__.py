import sys

from icml26.santa.cli import main

sys.exit(main())
