from icml26.fahnes.cli import main

raise SystemExit(main())
