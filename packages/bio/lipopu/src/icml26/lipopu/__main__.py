from icml26.lipopu.cli import main

raise SystemExit(main())
