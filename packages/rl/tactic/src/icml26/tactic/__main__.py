from icml26.tactic.cli import main

raise SystemExit(main())
