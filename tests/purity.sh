#!/bin/sh
# purity.sh - proves the rules engine pure (style.md, rules.h): every symbol that librules
# (and the libbase it links) leaves undefined is either defined by one of those libraries or
# on a short allow-list of libc memory/string functions, snprintf, and what compilers and
# sanitizers insert. Any other (malloc, fopen, time, rand, ...) fails the test.
# Usage: purity.sh LIB.a [LIB.a ...]   (run by meson test with librules.a and libbase.a)
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 LIB.a [LIB.a ...]" >&2
    exit 2
fi
NM=${NM:-nm}

# Symbols the given libraries define themselves (rules_*, err_*, ...).
defined=$("$NM" -g --defined-only "$@" | awk 'NF >= 3 { print $3 }' | sort -u)

allowed() {
    case "$1" in
    # libc memory and string functions, and formatting into a buffer
    memcpy | memset | memcmp | memmove | memchr | strlen | strcmp | snprintf | vsnprintf) return 0 ;;
    # their _FORTIFY_SOURCE variants
    __memcpy_chk | __memset_chk | __memmove_chk | __snprintf_chk | __vsnprintf_chk) return 0 ;;
    # stack protector; libgcc's popcount when the CPU has no popcnt instruction; the
    # linker-made GOT symbol that position-independent code refers to on some targets
    __stack_chk_fail | __stack_chk_guard | __popcountdi2 | _GLOBAL_OFFSET_TABLE_) return 0 ;;
    # assert(): style.md wants broken invariants to be asserts (gone with NDEBUG)
    __assert_fail) return 0 ;;
    # instrumentation of sanitizer builds
    __asan_* | __ubsan_* | __sanitizer_*) return 0 ;;
    esac
    return 1
}

status=0
for lib in "$@"; do
    for sym in $("$NM" -u "$lib" | awk 'NF == 2 && $1 == "U" { print $2 }' | sort -u); do
        base=${sym%%@*} # glibc versioned names: memcpy@GLIBC_2.14
        if allowed "$base" || printf '%s\n' "$defined" | grep -qx -- "$base"; then
            continue
        fi
        echo "impure: $(basename "$lib") uses $sym"
        status=1
    done
done
if [ $status -eq 0 ]; then
    echo "pure: $* use only allowed symbols"
fi
exit $status
