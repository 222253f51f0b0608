#!/usr/bin/env bash
# Per-tensor cost (warm, in memory) of the native core and of the Java API, in one run, and the
# first use of the library in fresh JVMs. See README.md "Per-tensor cost".
#   hurray-java-bench/pertensor.sh [N=100000] [ROUNDS=7]
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-100000}
rounds=${2:-7}
java=${JAVA:-}
for j in "${HURRAY_JAVA_HOME:-}" "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64; do
  if [ -z "$java" ] && [ -n "$j" ] && [ -x "$j/bin/java" ]; then java="$j/bin/java"; fi
done
jar=target/benchmarks.jar
[ -f "$jar" ] || { echo "build first: ./mvnw -B -ntp -q -pl hurray-java-bench -am package -DskipTests" >&2; exit 2; }
cargo=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
(cd ../native && "$cargo" run -q --release --offline -p hurray-core --example pertensor_bench -- "$n" "$rounds")
"$java" -XX:+AlwaysPreTouch -Xms2g -Xmx2g --enable-native-access=ALL-UNNAMED -cp "$jar" dev.hurray.bench.PerTensor "$n" "$rounds"
echo
echo "| first use in a fresh JVM (median of 5) | ms |"
echo "|---|---|"
firsts=()
totals=()
for i in 1 2 3 4 5; do
  read -r a b < <("$java" --enable-native-access=ALL-UNNAMED -cp "$jar" dev.hurray.bench.FirstUse)
  firsts+=("$a"); totals+=("$b")
done
med() { printf '%s\n' "$@" | sort -n | sed -n 3p; }
echo "| library load + first descriptor | $(med "${firsts[@]}") |"
echo "| library load + first tensor written and read | $(med "${totals[@]}") |"
