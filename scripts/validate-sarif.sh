#!/usr/bin/env bash
# validate-sarif.sh FILE... validates SARIF logs with Microsoft's SARIF multitool
# (@microsoft/sarif-multitool, installed by scripts/fetch-test-deps.sh): the
# SARIF 2.1.0 JSON schema plus the multitool's own rules. It prints every
# problem and exits 1 when any is an error (with --strict, also a warning).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tool="$root/third_party/sarif/node_modules/.bin/sarif-multitool"
strict=0
if [[ "${1:-}" == "--strict" ]]; then
	strict=1
	shift
fi
if (($# == 0)); then
	echo "usage: $0 [--strict] FILE.sarif..." >&2
	exit 2
fi
if [[ ! -x "$tool" ]]; then
	bash "$root/scripts/fetch-test-deps.sh" >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
for f in "$@"; do
	out="$work/$(basename "$f").validation.sarif"
	# The multitool is a .NET program; without ICU on the machine it needs
	# invariant globalisation.
	if ! DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 "$tool" validate "$f" -o "$out" --log ForceOverwrite >"$work/log" 2>&1; then
		cat "$work/log" >&2
		echo "validate-sarif: the multitool failed on $f" >&2
		status=1
		continue
	fi
	# Summarise the validator's own SARIF output: one line per problem.
	if ! node - "$out" "$f" "$strict" <<'JS'; then
const fs = require("fs");
const [out, input, strict] = process.argv.slice(2);
const log = JSON.parse(fs.readFileSync(out, "utf8"));
let errors = 0, warnings = 0;
for (const run of log.runs || []) {
  const rules = (run.tool && run.tool.driver && run.tool.driver.rules) || [];
  for (const r of run.results || []) {
    const level = r.level || "warning";
    let text = (r.message && r.message.text) || "";
    if (!text && r.message && r.message.id) {
      const rule = rules.find((x) => x.id === r.ruleId) || (r.ruleIndex !== undefined && rules[r.ruleIndex]) || {};
      const tmpl = rule.messageStrings && rule.messageStrings[r.message.id];
      text = tmpl ? tmpl.text.replace(/\{(\d+)\}/g, (_, i) => (r.message.arguments || [])[i]) : r.message.id;
    }
    const region = r.locations && r.locations[0] && r.locations[0].physicalLocation && r.locations[0].physicalLocation.region;
    const where = region ? `${input}:${region.startLine || 0}` : input;
    console.log(`${where}: ${level}: ${r.ruleId}: ${text}`);
    if (level === "error") errors++;
    if (level === "warning") warnings++;
  }
  for (const inv of run.invocations || []) {
    for (const n of inv.toolExecutionNotifications || []) {
      if (n.level === "error") { console.log(`${input}: error: ${n.message && n.message.text}`); errors++; }
    }
  }
}
console.log(`${input}: ${errors} errors, ${warnings} warnings`);
process.exit(errors > 0 || (strict === "1" && warnings > 0) ? 1 : 0);
JS
		status=1
	fi
done
exit "$status"
