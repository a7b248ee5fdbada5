import sys

from icml26.entquant.cli import main

sys.exit(main())
