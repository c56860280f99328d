# The FrogSWE OpenEnv server (`openenv build` finds this file beside openenv.yaml).
#
#   docker build -t frog-gym-openenv .            # BASE_IMAGE: any image with Python 3.10+ and pip
#   docker run --privileged -p 8000:8000 -e FROG_GYM_SERVE_TOKEN=... frog-gym-openenv
#
# Episodes run in bubblewrap sandboxes inside the container, which need user namespaces: run it
# --privileged (or with a seccomp/AppArmor profile that allows unshare). Repository venvs are built on
# first use into FROG_GYM_HOME (mount a volume there to keep them); `frog-gym setup` here builds them
# into the image instead, which needs network access to the package index at build time.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap git curl \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app/frog-gym
COPY . /app/frog-gym
RUN pip install --no-cache-dir '.[openenv]'

ENV FROG_GYM_HOME=/var/lib/frog-gym FROG_GYM_SERVE_ENV=FrogSWE-v0 FROG_GYM_SERVE_MAX_SESSIONS=4 \
    FROG_GYM_SERVE_IDLE_TIMEOUT=600
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fs -H "Authorization: Bearer $FROG_GYM_SERVE_TOKEN" http://localhost:8000/health || exit 1
CMD ["uvicorn", "frog_gym.serve:app", "--host", "0.0.0.0", "--port", "8000", "--ws-max-size", "16777216"]
