#!/usr/bin/env bash
# Type-checks the iOS example on Linux against the package's real modules (portable build) and
# stand-ins for what only the iOS SDK has (LinuxStubs/: CallKit's classes, os.Logger,
# FileManager.containerURL, CallerIDDirectory's CallKitSink, autoreleasepool). It proves the
# example uses the package's API correctly; it proves nothing about the SDK calls themselves.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/opt/swift/usr/bin"
swift build --traits PortableCodecs --scratch-path .build-portable --target CallerIDDirectory >/dev/null
swift build --traits PortableCodecs --scratch-path .build-portable --target CallerIDURLSession >/dev/null
bin=$(swift build --traits PortableCodecs --scratch-path .build-portable --show-bin-path)
modules=$bin/Modules
# CSodium (libsodium, opened with dlopen) has the module map SwiftPM generates for it.
sodium=(-Xcc -fmodule-map-file="$bin/CSodium.build/module.modulemap" -I Sources/CSodium/include)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stubs=examples/ios/LinuxStubs
swiftc -emit-module -parse-as-library -module-name CallKit "$stubs/CallKit.swift" -o "$tmp/CallKit.swiftmodule"
swiftc -emit-module -parse-as-library -module-name os "$stubs/os.swift" -o "$tmp/os.swiftmodule"
swiftc -emit-module -parse-as-library -module-name IOSShim -I "$tmp" -I "$modules" -I Sources/CPortable/include "${sodium[@]}" \
    "$stubs/IOSShim.swift" -o "$tmp/IOSShim.swiftmodule"
for f in CallDirectoryHandler AppReload RegionPicker; do
    sed 's/^import CallKit$/import CallKit\nimport IOSShim/' "examples/ios/$f.swift" > "$tmp/$f.swift"
done
swiftc -typecheck -swift-version 6 -parse-as-library -I "$tmp" -I "$modules" -I Sources/CPortable/include "${sodium[@]}" \
    "$tmp/CallDirectoryHandler.swift" "$tmp/AppReload.swift" "$tmp/RegionPicker.swift"
echo "examples/ios: type-checked against the package (CallKit and os stand-ins)"
