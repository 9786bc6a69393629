from benchmarks.peers.run import main

raise SystemExit(main())
