import sys

from benchmarks.project_tasks.run import main

sys.exit(main())
