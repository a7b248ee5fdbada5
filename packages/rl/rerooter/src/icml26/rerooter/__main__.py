import sys

from icml26.rerooter.cli import main

sys.exit(main())
