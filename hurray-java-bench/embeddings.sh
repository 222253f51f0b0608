#!/usr/bin/env bash
# Named float32[768] embeddings between two fresh JVMs over 127.0.0.1 (issue: per-tensor cost).
# For each implementation, starts a receiver JVM and a sender JVM at once and times the pair
# from launch until both exited (JVM start, library load and JIT warm-up included), ROUNDS
# times, interleaved; prints the median per implementation and its ratio to the raw loop.
#   hurray-java-bench/embeddings.sh [N=20000] [ROUNDS=5]
# Needs hurray-java-bench/target/benchmarks.jar (see README.md, Build).
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-20000}
rounds=${2:-5}
java=${JAVA:-}
if [ -z "$java" ]; then
  for j in "${HURRAY_JAVA_HOME:-}" "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64; do
    if [ -n "$j" ] && [ -x "$j/bin/java" ]; then java="$j/bin/java"; break; fi
  done
fi
jar=target/benchmarks.jar
[ -f "$jar" ] || { echo "build first: ./mvnw -B -ntp -q -pl hurray-java-bench -am package -DskipTests" >&2; exit 2; }
opts=(-Xms256m -Xmx256m --enable-native-access=ALL-UNNAMED -cp "$jar")
impls=(${IMPLS:-raw dos raw-ffm raw-ffm-chunk natural hurray hurray-rename})
declare -A times
port=$((20000 + RANDOM % 20000))
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < ${#impls[@]}; k++)); do
    impl=${impls[$(((k + r) % ${#impls[@]}))]}
    port=$((port + 1))
    t0=$(date +%s%N)
    "$java" "${opts[@]}" dev.hurray.bench.Embeddings recv "$port" "$n" "$impl" > /dev/null &
    rpid=$!
    "$java" "${opts[@]}" dev.hurray.bench.Embeddings send "$port" "$n" "$impl"
    wait "$rpid"
    t1=$(date +%s%N)
    times[$impl]="${times[$impl]:-} $(( (t1 - t0) / 1000000 ))"
  done
done
median() { tr ' ' '\n' <<< "$1" | awk 'NF' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
raw=$(median "${times[raw]}")
dos=$(median "${times[dos]:-}")
best=$raw
if [ -n "$dos" ] && [ "$dos" -lt "$raw" ]; then best=$dos; fi
echo "| impl | $n named float32[768], two fresh JVMs (median of $rounds, ms) | vs raw | vs best baseline |"
echo "|---|---|---|---|"
for impl in "${impls[@]}"; do
  m=$(median "${times[$impl]}")
  awk -v i="$impl" -v m="$m" -v r="$raw" -v b="$best" 'BEGIN { printf "| %s | %d | %.2f× | %.2f× |\n", i, m, r / m, b / m }'
done
