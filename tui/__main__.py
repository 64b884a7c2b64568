from tui.shell.launch import main

raise SystemExit(main())
