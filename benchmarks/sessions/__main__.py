from benchmarks.sessions.run import main

raise SystemExit(main())
