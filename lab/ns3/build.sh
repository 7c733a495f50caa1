#!/bin/sh
# Builds the ns-3 counterpart of the lab's Reno dumbbell (see scripts/ns3-build).
# Usage: lab/ns3/build.sh [OUTPUT]   (default: lab/ns3/build/reno-dumbbell)
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../scripts/ns3-build" "$here/reno-dumbbell.cc" "${1:-$here/build/reno-dumbbell}"
