"""Subcommands of the ``frog-gym`` CLI: name -> module with ``HELP``, ``configure(parser)``, ``run(args)``.

Modules import their heavy dependencies inside ``run`` so that ``frog-gym --help`` stays fast.
"""

COMMANDS: dict[str, str] = {
    "demo": "frog_gym.commands.demo",
    "generate": "frog_gym.commands.generate",
    "tasks": "frog_gym.commands.tasks",
}
