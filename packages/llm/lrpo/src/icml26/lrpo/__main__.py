from icml26.lrpo.cli import main

raise SystemExit(main())
