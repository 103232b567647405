# shellcheck shell=bash
# The --icount mode of scripts/bench-vs-disni and scripts/bench-vs-perftest: several boots of
# scripts/softroce-vm --icount (one vCPU, the guest's clocks counting instructions), each running
# dev.jrdma.perf.IcountComparison's rounds, then one report from all boots.
#
#   jrdma_icount_runs REPORT BOOTS ROUNDS TESTS DISNI_CP LIBDISNI_DIR   (the DiSNI ones may be -)
#
# Needs JAVA_HOME (jrdma_find_jdk) and the built classes. The VM runs a copy of them (and of
# DisniLatency.java) taken now, so that a rebuild while it runs does not change what it runs.
# Each boot's rows go to a TSV file in that copy's directory, which is kept and named at the end.
# JRDMA_ICOUNT_VARIANTS (optional): jrdma variants to run beside it in every boot, as
# "LABEL=-Dprop=value ...;LABEL=..." (IcountComparison.variants), for an A/B of a setting in one boot.
jrdma_icount_runs() {
  local report=$1 boots=$2 rounds=$3 tests=$4 disni_cp=$5 libdisni=$6
  local root snap b rc=0 cp files=()
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  case "$boots" in '' | *[!0-9]* | 0) echo "icount: --boots takes a count (1 or more), not '$boots'" >&2; return 2 ;; esac
  case "$rounds" in '' | *[!0-9]* | 0) echo "icount: --rounds takes a count (1 or more), not '$rounds'" >&2; return 2 ;; esac
  snap=$(mktemp -d "${TMPDIR:-/tmp}/jrdma-icount.XXXXXX")
  cp -r "$root/jrdma/target/classes" "$snap/jrdma"
  cp -r "$root/jrdma-cli/target/classes" "$snap/jrdma-cli"
  cp "$root/scripts/lib/DisniLatency.java" "$snap/DisniLatency.java"
  cp="$snap/jrdma:$snap/jrdma-cli"
  for ((b = 1; b <= boots; b++)); do
    echo "icount: boot $b of $boots ($tests, $rounds round(s)); rows into $snap/boot-$b.tsv" >&2
    "$root/scripts/softroce-vm" --icount --timeout "${JRDMA_VM_TIMEOUT:-7200}" -- \
      "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$cp" \
      "-Djrdma.icount.variants=${JRDMA_ICOUNT_VARIANTS:-}" \
      dev.jrdma.perf.IcountComparison boot "$snap/boot-$b.tsv" "$b" "$rounds" "$tests" "$disni_cp" "$libdisni" \
      "$snap/DisniLatency.java" || rc=$?
    [ "$rc" = 0 ] || echo "icount: boot $b ended with exit code $rc" >&2
    [ -s "$snap/boot-$b.tsv" ] && files+=("$snap/boot-$b.tsv")
  done
  [ ${#files[@]} -gt 0 ] || { echo "icount: no boot produced a result (see above); kept $snap" >&2; return 1; }
  "$JAVA_HOME/bin/java" -cp "$cp" dev.jrdma.perf.IcountComparison report "$report" "${files[@]}"
  echo "icount: report $report; the boots' rows are in $snap" >&2
  return "$rc"
}
