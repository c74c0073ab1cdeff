from purple_agent.cli import purple
from purple_agent.server import run_standalone

run_standalone(purple)
