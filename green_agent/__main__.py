"""``python -m green_agent [--host] [--port] [--card-url]``."""

from green_agent.cli import green

if __name__ == "__main__":
    green(prog_name="python -m green_agent")
