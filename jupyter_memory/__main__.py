from jupyter_memory.cli.app import main

raise SystemExit(main())
