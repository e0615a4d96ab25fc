from rtgate.cli import main

raise SystemExit(main())
