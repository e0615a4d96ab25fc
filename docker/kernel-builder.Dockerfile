# The kernel builder: Debian bookworm with the arm64 cross toolchain, ccache and rtgate.
# An amd64 image cross-compiles arm64 kernels (emulating arm64 is 11-13x slower); the arm64
# image exists for arm64 CI runners. Built by docker/kernel-builder.sh with `docker buildx`.
#
# BASE_IMAGE is overridable because Docker Hub may be unreachable: kernel-builder.sh then
# makes the base with debootstrap + `docker import`. No `# syntax=` line on purpose: it would
# make BuildKit pull a frontend image from Docker Hub.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive
# libc6-dev-arm64-cross is only a Recommends of the cross gcc, but Kconfig probes whether the
# compiler can link (CONFIG_CC_CAN_LINK): without it the image's .config differs from a host's.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc libc6-dev make bc bison flex libssl-dev \
      libelf-dev kmod cpio ccache python3 python3-venv patch perl xz-utils gzip tar git \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# rtgate itself, with its data (boards, fragments) where RTGATE_ROOT says.
COPY pyproject.toml README.md /opt/rtgate/
COPY rtgate /opt/rtgate/rtgate
# The report definitions install with the package (pyproject.toml): pip needs them to build it.
COPY reports /opt/rtgate/reports
COPY kernel /opt/rtgate/kernel
COPY docker /opt/rtgate/docker
# kernel-builder.sh puts a wheelhouse in docker/wheels and passes PIP_OFFLINE=--no-index so the
# build needs no index; elsewhere (GitHub runners) pip uses PyPI.
ARG PIP_OFFLINE=""
RUN python3 -m venv /opt/rtgate/venv \
 && /opt/rtgate/venv/bin/pip install --no-cache-dir ${PIP_OFFLINE} \
      --find-links /opt/rtgate/docker/wheels /opt/rtgate \
 && rm -rf /opt/rtgate/docker/wheels
ENV PATH=/opt/rtgate/venv/bin:$PATH \
    RTGATE_ROOT=/opt/rtgate
