from icml26.fidia.cli import main

raise SystemExit(main())
