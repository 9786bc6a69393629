from memctl.cli.app import main

main()
