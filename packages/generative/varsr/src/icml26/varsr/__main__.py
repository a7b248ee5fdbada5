from icml26.varsr.cli import main

raise SystemExit(main())
