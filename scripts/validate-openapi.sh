#!/usr/bin/env bash
# validate-openapi.sh [FILE] checks an OpenAPI description (default: the sandbox API's,
# api/openapi/openapi.json) with two outside validators that scripts/fetch-test-deps.sh
# installs: Redocly's CLI (`redocly lint`, every rule of its recommended set an error but the
# few api/openapi/redocly.yaml turns off, with reasons) and @seriousme/openapi-schema-validator
# (the official OpenAPI 3.1 JSON schema). It exits 1 when either refuses the file.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
file="${1:-$root/api/openapi/openapi.json}"
bin="$root/third_party/openapi/node_modules/.bin"
if [[ ! -x "$bin/redocly" || ! -x "$bin/validate-api" ]]; then
	bash "$root/scripts/fetch-test-deps.sh" >/dev/null
fi

status=0
# No telemetry, no update check: the validators must work offline once installed.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1
lint=0
out="$("$bin/redocly" lint --config "$root/api/openapi/redocly.yaml" --format stylish "$file" 2>&1)" || lint=$?
# Drop the boxed notices (the Node.js version banner); keep every finding.
grep -v '[║╔╚]' <<<"$out" | sed '/^\s*$/d'
if [[ $lint -ne 0 ]]; then
	echo "validate-openapi: redocly lint refused $file" >&2
	status=1
fi
if ! out="$("$bin/validate-api" "$file" 2>&1)" || ! grep -q '"valid": true' <<<"$out"; then
	echo "$out" >&2
	echo "validate-openapi: the OpenAPI 3.1 schema validator refused $file" >&2
	status=1
fi
[[ $status -ne 0 ]] || echo "validate-openapi: $file is valid (redocly lint, OpenAPI 3.1 schema)"
exit "$status"
