#!/usr/bin/env bash
# Makes a local stand-in for the python:3.11-slim base image on a machine that cannot pull images: a Debian
# bookworm rootfs (debootstrap) with Python 3.11 in a virtual environment on PATH as `python` and `pip`, the
# host's CA certificates trusted (pip in an image build reaches the package index through them), imported as
# an image with `podman import`. The Dockerfile builds on it unchanged: make image BASE_IMAGE=<the name printed>.
#
#   tests/journey/stand_in_base.sh [IMAGE_NAME]        (default: localhost/stand-in-python:3.11-slim)
#
# Needs root, debootstrap and podman (apt-get install debootstrap podman). An image of that name already present
# is kept (delete it with `podman rmi NAME` to rebuild). Environment: DEBIAN_MIRROR (default: the mirror apt uses).
set -euo pipefail

NAME="${1:-localhost/stand-in-python:3.11-slim}"
die() { echo "stand_in_base.sh: $*" >&2; exit 2; }
for tool in debootstrap podman chroot; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install debootstrap podman)"
done
[[ "$(id -u)" == 0 ]] || die "debootstrap needs root"
if podman image exists "$NAME"; then
    echo "stand-in base image $NAME already exists"
    exit 0
fi

mirror="${DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then  # the first Debian mirror apt is configured with
    mirror="$(grep -rhE '^(URIs:|deb) ' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
        | grep -oE 'https?://[^ ]+/debian/?$|https?://[^ ]+/debian/? ' | grep -v security | head -n1 | tr -d ' ' || true)"
    mirror="${mirror:-http://deb.debian.org/debian}"
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
started=$SECONDS
log="$(mktemp)"
# --include does not resolve every dependency (python3.11-venv fails there): venv comes from apt inside
debootstrap --variant=minbase --include=python3.11,ca-certificates bookworm "$root" "$mirror" > "$log" 2>&1 \
    || { tail -n 20 "$log" >&2; die "debootstrap from $mirror failed (DEBIAN_MIRROR=... chooses another)"; }
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
chroot "$root" apt-get install -y -qq --no-install-recommends python3.11-venv > "$log" 2>&1 \
    || { tail -n 20 "$log" >&2; die "apt-get install python3.11-venv inside the rootfs failed"; }
rm -f "$log"
# the host's own certificate authorities (a proxy's, a company's), so pip inside an image build can reach PyPI
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
chroot "$root" update-ca-certificates >/dev/null
# The venv keeps the pip Debian bundles (older than python:3.11-slim's): the Dockerfile puts its pinned installer
# (requirements/installer.txt) in first, so an image never depends on the base image's pip.
chroot "$root" python3.11 -m venv /opt/python
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/* "$root/root/.cache"
tar -C "$root" -c . | podman import \
    --change 'ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$NAME" >/dev/null
echo "stand-in base image $NAME made in $((SECONDS - started)) s ($(podman image inspect --format '{{.Size}}' "$NAME") bytes)"
