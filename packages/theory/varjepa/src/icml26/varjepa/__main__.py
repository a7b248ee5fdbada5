from icml26.varjepa.cli import main

raise SystemExit(main())
