"""`python -m bot.cli`: the `lorelab` command, as the agent a delivery starts runs it."""

from bot.cli import main

main()
