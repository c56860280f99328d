"""Subcommands of the ``frog-gym`` CLI: name -> module with ``HELP``, ``configure(parser)``, ``run(args)``.

May import: frog_gym, frog_gym.errors, frog_gym.paths, frog_gym.catalog, frog_gym.sandbox, frog_gym.grading,
frog_gym.env, frog_gym.curriculum, frog_gym.agents, frog_gym.bench, frog_gym.adapters, frog_gym.generators,
frog_gym.learners, frog_gym.leaderboard, frog_gym.serve.

Modules import their heavy dependencies inside ``run`` so that ``frog-gym --help`` stays fast.
"""

COMMANDS: dict[str, str] = {
    "bench": "frog_gym.commands.bench",
    "demo": "frog_gym.commands.demo",
    "docker": "frog_gym.commands.docker",
    "export": "frog_gym.commands.export",
    "generate": "frog_gym.commands.generate",
    "import": "frog_gym.commands.import_",
    "leaderboard": "frog_gym.commands.leaderboard",
    "mine": "frog_gym.commands.mine",
    "oracle": "frog_gym.commands.oracle",
    "predictions": "frog_gym.commands.predictions",
    "serve": "frog_gym.commands.serve",
    "suites": "frog_gym.commands.suites",
    "tasks": "frog_gym.commands.tasks",
    "train": "frog_gym.commands.train",
    "registry": "frog_gym.commands.registry",
    "setup": "frog_gym.commands.setup",
}
