import sys

from icml26.streamflow.cli import main

sys.exit(main())
