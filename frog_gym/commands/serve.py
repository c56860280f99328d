"""``frog-gym serve``: FrogSWE sessions over HTTP/WebSocket in the OpenEnv convention (extra ``openenv``)."""

from __future__ import annotations

import argparse
import os
import sys

HELP = "Serve FrogSWE episodes over HTTP/WebSocket in the OpenEnv convention (reset, step, state, close)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--token", default=None,
                   help="the token every client must send (default: $FROG_GYM_SERVE_TOKEN, else a random one, "
                        "printed once)")
    p.add_argument("--env", default="FrogSWE-v0", help="the env each session runs (default FrogSWE-v0)")
    p.add_argument("--max-steps", type=int, help="steps per episode (default: the env's)")
    p.add_argument("--max-sessions", type=int, default=4, help="concurrent sessions, one env each (default 4)")
    p.add_argument("--backend", choices=("local", "docker"), default="local",
                   help="sandbox backend of every session (default local: bubblewrap)")
    p.add_argument("--idle-timeout", type=float, default=600.0,
                   help="close a session (and its sandbox) after this many seconds with no message and no step "
                        "running (default 600; 0: never)")


def run(args: argparse.Namespace) -> int:
    import secrets

    import gymnasium as gym

    from frog_gym.errors import did_you_mean

    try:
        from frog_gym.serve import ServeConfig, check_token, make_app
    except ImportError as e:  # a dependency of openenv-core itself is missing
        print(f"frog-gym serve: error: {e}; install the extra: pip install 'frog-gym[openenv]'", file=sys.stderr)
        return 2
    import frog_gym  # noqa: F401  (registers the envs)

    if args.env not in gym.registry:
        print(f"frog-gym serve: error: unknown --env {args.env!r}.{did_you_mean(args.env, gym.registry)} See "
              "`frog-gym tasks`.", file=sys.stderr)
        return 2
    if args.max_sessions < 1:
        print(f"frog-gym serve: error: --max-sessions {args.max_sessions} must be at least 1.", file=sys.stderr)
        return 2
    token = args.token or os.environ.get("FROG_GYM_SERVE_TOKEN")
    generated = not token
    token = check_token(token or secrets.token_urlsafe(24))
    kwargs: dict = {"max_steps": args.max_steps} if args.max_steps else {}
    if args.backend != "local":
        kwargs["backend"] = args.backend
    if args.idle_timeout < 0:
        print(f"frog-gym serve: error: --idle-timeout {args.idle_timeout:g} must be 0 (never) or a number of "
              "seconds.", file=sys.stderr)
        return 2
    config = ServeConfig(args.env, kwargs, idle_timeout_s=args.idle_timeout or None)
    app = make_app(token, config, max_sessions=args.max_sessions)
    import uvicorn

    shown = token if generated else "<your token>"
    print(f"frog-gym serve: {args.env} on http://{args.host}:{args.port}, {args.max_sessions} session(s); "
          f"OpenEnv clients use base_url http://{args.host}:{args.port}/{shown}"
          + (" (a token generated for this run)" if generated else ""), file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", ws_max_size=16 * 2**20)
    return 0
