from jupyter_memory.cli.main import main

raise SystemExit(main())
