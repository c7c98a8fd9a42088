# ops/lib/build.sh - sourced by the ops/ scripts: meson build directories.
#   setup DIR OPTION...   sets DIR up with the options, or reconfigures it to them if it
#                         exists already (wiping it if reconfiguring fails); quiet unless
#                         meson fails, then it prints meson's output and returns 1.
# ops/test's first stage, ops/run and ops/bench-service share these option sets:
CARDPOST_BUILD_OPTIONS=(-Dbuildtype=debugoptimized -Dtests=true -Dfuzz=false)
CARDPOST_RELEASE_OPTIONS=(-Dbuildtype=release -Db_ndebug=true -Dtests=true -Dfuzz=false)

setup() {
    local dir=$1
    shift
    if [ -f "$dir/meson-private/coredata.dat" ]; then
        meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1 ||
            meson setup --wipe "$dir" "$@" >"$dir.setup.log" 2>&1 ||
            { cat "$dir.setup.log"; return 1; }
    else
        rm -rf "$dir"
        meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
    fi
    rm -f "$dir.setup.log"
}
