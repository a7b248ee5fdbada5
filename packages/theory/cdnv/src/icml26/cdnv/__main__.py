import sys

from icml26.cdnv.cli import main

sys.exit(main())
