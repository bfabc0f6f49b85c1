# Installs Debian packages that are missing, and only those: `install_packages NAME...`.
# The package's own services are kept from starting (the project runs what it needs itself).
# Sourced by scripts/db.sh and scripts/test.sh; expects say() and die().

missing_packages() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
    done
}

install_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    # Keep the package's own system-wide server from starting: we run a private one.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 755 "$policy"
        made_policy=1
    fi
    local rc=0
    { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update >/dev/null &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends "${missing[@]}" >/dev/null; } || rc=$?
    [ $made_policy -eq 1 ] && "${sudo[@]}" rm -f "$policy"
    [ $rc -eq 0 ] || die "apt-get install ${missing[*]} failed (exit $rc)"
}
