#!/usr/bin/env bash
# Packs the `lookup` that Spark executors run into one archive for spark-submit --archives:
#   bash tools/spark/bundle.sh [-o callerid-lookup.tar.gz] [--prefix DIR]
#   spark-submit --archives callerid-lookup.tar.gz#callerid … callerid_spark.py --lookup-archive callerid …
# The archive holds, at its top (so that `#NAME` unpacks it as NAME/ in the executor's folder):
#   lookup                            a shell script: runs bin/lookup with lib/ first on the loader's path
#   bin/lookup                        the self-contained tool of tools/install.sh (Swift runtime linked in)
#   lib/libcallerid-phonenumber.so    the libphonenumber interface `lookup build` loads
#   lib/*.so*                         every shared library the two need (`ldd`: libphonenumber,
#                                     protobuf, ICU, abseil, libstdc++, xxhash…), but glibc's own;
#                                     libswiftCore.so too: SwiftPM links libcallerid-phonenumber.so
#                                     against it, and without it the library does not load and
#                                     `lookup` reads numbers with its built-in table
# so an executor needs only glibc (as new as the archive's "needs glibc" line says) and /bin/sh.
# --prefix DIR takes lookup and libcallerid-phonenumber.so from an earlier
# `bash tools/install.sh --prefix DIR`; without it, tools/install.sh is run into a temporary prefix.
# The archive is checked before it is written: its `lookup --version` must read numbers with the
# bundled libphonenumber.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$PWD/callerid-lookup.tar.gz"
prefix=""
usage() { echo "usage: bash tools/spark/bundle.sh [-o FILE.tar.gz] [--prefix DIR]"; }
while [ $# -gt 0 ]; do
    case "$1" in
        -o|--output) out="${2:?$1 needs a value}"; shift 2 ;;
        --output=*) out="${1#*=}"; shift ;;
        --prefix) prefix="${2:?--prefix needs a value}"; shift 2 ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 64 ;;
    esac
done
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -z "$prefix" ]; then
    prefix="$work/prefix"
    bash "$root/tools/install.sh" --prefix "$prefix" >&2
fi
tool="$prefix/bin/lookup"
phonelib="$prefix/lib/libcallerid-phonenumber.so"
[ -x "$tool" ] || { echo "error: no $tool (bash tools/install.sh --prefix $prefix)" >&2; exit 66; }
[ -f "$phonelib" ] || { echo "error: no $phonelib (bash tools/install.sh --prefix $prefix)" >&2; exit 66; }
if ldd "$tool" | grep -q 'libswiftCore'; then
    echo "error: $tool needs the Swift runtime: bundle the self-contained lookup of tools/install.sh" >&2
    exit 65
fi

bundle="$work/bundle"
install -d "$bundle/bin" "$bundle/lib"
install -m 0755 "$tool" "$bundle/bin/lookup"
install -m 0755 "$phonelib" "$bundle/lib/libcallerid-phonenumber.so"

# The libraries the loader resolves for the two, by the name they are asked for; glibc's own
# stay the executor's (they must match its loader).
is_glibc() {
    case "$1" in
        linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*|libmvec.so.*) return 0 ;;
        *) return 1 ;;
    esac
}
for binary in "$tool" "$phonelib"; do
    if ldd "$binary" | grep -q 'not found'; then
        echo "error: $binary: $(ldd "$binary" | grep 'not found' | head -3 | tr -s ' \t' ' ')" >&2
        exit 69
    fi
    ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
        is_glibc "$name" || [ -e "$bundle/lib/$name" ] || install -m 0644 "$(readlink -f "$path")" "$bundle/lib/$name"
    done
done

cat > "$bundle/lookup" <<'SH'
#!/bin/sh
# lookup from this bundle (tools/spark/bundle.sh): its libraries first on the loader's path,
# its libphonenumber for the numbers.
here="$(cd "$(dirname "$0")" && pwd)"
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CALLERID_PHONENUMBER_LIBRARY="$here/lib/libcallerid-phonenumber.so"
export LD_LIBRARY_PATH CALLERID_PHONENUMBER_LIBRARY
exec "$here/bin/lookup" "$@"
SH
chmod 0755 "$bundle/lookup"

# The bundle reads numbers with its own libphonenumber, or it is not written.
rules="$("$bundle/lookup" --version | sed -n 's/^number rules: //p')"
case "$rules" in
    "libphonenumber ($bundle/lib/libcallerid-phonenumber.so)") ;;
    *) echo "error: the bundle's lookup reads numbers with: $rules" >&2; exit 70 ;;
esac
glibc="$(for f in "$bundle/bin/lookup" "$bundle"/lib/*; do objdump -T "$f"; done 2>/dev/null \
    | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)"

tar -czf "$out.tmp" --owner=0 --group=0 --numeric-owner -C "$bundle" .
mv "$out.tmp" "$out"
echo "$out: $(du -h "$out" | cut -f1), lookup and $(ls "$bundle/lib" | wc -l) libraries; needs ${glibc/_/ } or newer"
