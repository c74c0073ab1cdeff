from skillsbench_agentbeats.cli import main

main()
