#!/bin/sh
# Builds the testbed's ns-3 program, bottleneck.cc (see scripts/ns3-build).
# Usage: testbed/ns3/build.sh [OUTPUT]   (default: testbed/ns3/build/bottleneck)
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/ns3-build" "$here/bottleneck.cc" "${1:-$here/build/bottleneck}"
