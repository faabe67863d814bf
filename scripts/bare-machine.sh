#!/usr/bin/env bash
# A newcomer's first run of the README's commands on a machine where none of the servers the tests
# need were ever installed (issue 34): a Debian bookworm chroot made by debootstrap (minbase, with
# git, curl and iproute2), node and npm copied from this machine's Debian packages, this machine's
# CA bundle. A fresh clone of a commit goes in; the README's `npm install && npm test` runs as typed
# (a bare environment: HOME, PATH and the CA variables), N times in a row, then the conformance
# suite M times. Each run's log and a summary line go to the log directory.
#
#   sudo scripts/bare-machine.sh <root dir> <log dir> [npm test runs, default 3] [conformance runs, default 0] [commit, default HEAD]
#
# Root only, Debian or Ubuntu with debootstrap (apt-get install debootstrap), the Debian mirror
# reachable. The chroot's root is bind-mounted on itself: `ip netns exec` (the partition tests)
# makes / a slave mount, which fails where / is not a mount point. Everything mounted is unmounted
# at the end; the root directory is left for inspection (remove it yourself).
set -euo pipefail
root=${1:?root dir}
logs=${2:?log dir}
npm_runs=${3:-3}
conformance_runs=${4:-0}
commit=$(git rev-parse "${5:-HEAD}")
repo=$(git rev-parse --show-toplevel)

if [ -e "$root" ]; then
  echo "$root exists: give a new directory (this machine must start without the servers)" >&2
  exit 1
fi
mkdir -p "$root" "$logs"
debootstrap --variant=minbase --include=ca-certificates,git,curl,procps,iproute2 bookworm "$root" \
  http://deb.debian.org/debian >"$logs/debootstrap.log"
dpkg -L nodejs | while read -r f; do
  [ -e "$f" ] || continue
  [ -d "$f" ] && [ ! -L "$f" ] && continue
  mkdir -p "$root$(dirname "$f")"
  cp -a "$f" "$root$f"
done
# npm as this machine has it (it may be newer than the nodejs package's own).
rm -rf "$root/usr/lib/node_modules"
cp -a /usr/lib/node_modules "$root/usr/lib/"
cp -a /usr/bin/npm /usr/bin/npx "$root/usr/bin/"
[ -d /usr/include/node ] && cp -a /usr/include/node "$root/usr/include/"
cp /etc/resolv.conf /etc/hosts "$root/etc/"
[ -f ~/.npmrc ] && cp ~/.npmrc "$root/root/.npmrc"
if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
  cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi

mounts=()
mount_on() { # mount_on <target> <mount args...>
  local target=$1
  shift
  mount "$@" "$target"
  mounts=("$target" "${mounts[@]}")
}
cleanup() {
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT
mount_on "$root" --bind "$root"
mount_on "$root/proc" -t proc proc
mount_on "$root/sys" --rbind /sys
mount_on "$root/dev" --rbind /dev
mount_on "$root/run" -t tmpfs tmpfs
chmod 1777 "$root/tmp"

mkdir -p "$root/work"
git clone -q "$repo" "$root/work/clone"
git -C "$root/work/clone" checkout -q "$commit"
echo "commit $(git -C "$root/work/clone" log --oneline -1)" >>"$logs/summary.txt"
ca=/etc/ssl/certs/ca-certificates.crt
in_chroot() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb NODE_EXTRA_CA_CERTS=$ca SSL_CERT_FILE=$ca GIT_SSL_CAINFO=$ca CURL_CA_BUNDLE=$ca \
    /bin/bash -c "cd /work/clone && $1"
}
for i in $(seq 1 "$npm_runs"); do
  started=$(date +%s)
  status=0
  in_chroot 'npm install && npm test' >"$logs/npm-test-$i.log" 2>&1 || status=$?
  echo "npm test $i: exit $status, $(($(date +%s) - started)) s" >>"$logs/summary.txt"
done
for i in $(seq 1 "$conformance_runs"); do
  started=$(date +%s)
  status=0
  in_chroot 'NODE_OPTIONS=--experimental-vm-modules npx jest --runInBand test/conformance' \
    >"$logs/conformance-$i.log" 2>&1 || status=$?
  echo "conformance $i: exit $status, $(($(date +%s) - started)) s" >>"$logs/summary.txt"
done
