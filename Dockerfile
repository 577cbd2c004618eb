# syntax=docker/dockerfile:1
# lorelab's image, in three stages; docker-compose.yml picks the target of each service:
#   base        Python 3.11, git and what a kernel build needs, the lorelab user
#   app         lorelab installed: the web service, the scheduler and the build worker
#   lab-worker  app plus QEMU, a static busybox and the benchmark programs
FROM python:3.11-slim-bookworm AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LORELAB_CONFIG=/etc/lorelab/config.toml \
    LORELAB_DATA_DIR=/var/lib/lorelab/data
# git applies series and reads trees; the rest builds kernels (xz: tinyconfig compresses the
# bzImage with it; unshare from util-linux isolates every build, see workers/kernel/sandbox.py).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates git make gcc libc6-dev ccache bc flex bison libelf-dev libssl-dev \
      util-linux xz-utils cpio \
 && rm -rf /var/lib/apt/lists/*
# Everything runs as this unprivileged user. The volumes' mount points are made here, owned by
# it, so that a new volume starts out owned by it too.
RUN groupadd --gid 1000 lorelab \
 && useradd --uid 1000 --gid lorelab --create-home --shell /bin/sh lorelab \
 && install -d -o lorelab -g lorelab /etc/lorelab /var/lib/lorelab/data \
      /var/lib/lorelab/trees /var/lib/lorelab/work /var/lib/lorelab/work/ccache

FROM base AS app
WORKDIR /opt/lorelab
# The dependencies first, from pyproject.toml alone, so that a code change reuses this layer.
COPY pyproject.toml .
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
      > /tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt
COPY README.md .
COPY bot bot
COPY workers workers
COPY migrations migrations
RUN pip install --no-deps . && rm -rf build lorelab.egg-info
USER lorelab
WORKDIR /var/lib/lorelab
CMD ["lorelab", "--help"]

FROM app AS lab-worker
USER root
# The qemu runner boots kernels with qemu-system-x86 and a busybox-static initramfs, makes the
# scratch disk with e2fsprogs, and runs the host's benchmark programs in the guest (hackbench
# from rt-tests, memcached and memcaslap); the ssh runner needs the ssh client.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      qemu-system-x86 busybox-static rt-tests memcached libmemcached-tools e2fsprogs \
      openssh-client \
 && rm -rf /var/lib/apt/lists/*
USER lorelab
